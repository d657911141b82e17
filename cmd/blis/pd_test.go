package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A disaggregated run prints who prefilled and decoded what and the KV
// transfers, and writes them per pool into the result JSON.
func TestRunPDReportsTransfers(t *testing.T) {
	dir := t.TempDir()
	code, out, errOut := runCLI(t, "run", "--model", "llama-3.1-8b", "--hardware", "h100", "--prefill-replicas", "2", "--decode-replicas", "1",
		"--num-prompts", "20", "--random-input-len", "2000", "--random-output-len", "20", "--request-rate", "5",
		"--save-result", "--result-dir", dir, "--result-filename", "r.json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"prefilled", "KV transfers into decode: 20,", "llm-d P/D (pd-epp-config)"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errOut, "no --kv-transfer-config") {
		t.Errorf("no note on the default connector:\n%s", errOut)
	}
	data, err := os.ReadFile(filepath.Join(dir, "r.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Deployment struct {
			Fabric string `json:"fabric"`
			Pools  []struct {
				Role      string  `json:"role"`
				Prefilled int64   `json:"requests_prefilled"`
				Decoded   int64   `json:"requests_decoded"`
				Received  int64   `json:"kv_bytes_received"`
				Transfers int64   `json:"kv_transfers"`
				MeanMs    float64 `json:"mean_kv_transfer_ms"`
				P99Ms     float64 `json:"p99_kv_transfer_ms"`
			} `json:"pools"`
		} `json:"deployment"`
	}
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	if res.Deployment.Fabric != "h100-default" {
		t.Errorf("fabric %q, want the chip's own h100-default", res.Deployment.Fabric)
	}
	p := res.Deployment.Pools
	// 2000 tokens in 16-token blocks, 128 KiB of KV per token.
	if len(p) != 2 || p[0].Prefilled != 20 || p[1].Decoded != 20 || p[1].Transfers != 20 || p[1].Received != 20*125*16*131072 ||
		p[1].MeanMs <= 0 || p[1].P99Ms < p[1].MeanMs {
		t.Fatalf("pools %+v", p)
	}
}
