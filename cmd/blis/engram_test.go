package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// DeepSeek-V4.1-Flash (V4-Flash's backbone with V4.1's Engram tables) on
// 4 × H200: the dry run's memory plan with the tables in host memory (vLLM's
// default) and on the GPU. vLLM's Engram work puts the tables at 47.2 GiB
// per rank at TP 4 (vllm#57491); moving them to the host frees exactly that
// for the KV cache.
func TestDryRunEngramPlacement(t *testing.T) {
	num := func(t *testing.T, out, re string) float64 {
		t.Helper()
		m := regexp.MustCompile(re).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no %q in:\n%s", re, out)
		}
		v, err := strconv.ParseFloat(strings.ReplaceAll(m[1], ",", ""), 64)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	plan := func(engram string) (weights, kv, tokens float64, out string) {
		args := []string{"run", "--model", "deepseek-v4.1-flash", "--hardware", "h200", "-tp", "4", "--dry-run"}
		if engram != "" {
			args = append(args, "--engram-config", engram)
		}
		code, out, errOut := runCLI(t, args...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		return num(t, out, `weights +([0-9.]+)`), num(t, out, `KV cache +([0-9.]+)`), num(t, out, `KV pool: \d+ blocks, ([0-9,]+) tokens`), out
	}
	hw, hkv, htok, hout := plan("")
	gw, gkv, gtok, gout := plan(`{"cpu_offload":false}`)
	if d := gw - hw; d < 47.20 || d > 47.23 {
		t.Errorf("weights %.2f GiB on the GPU vs %.2f in host memory: differ by %.2f, want the 47.21 GiB of tables per rank", gw, hw, d)
	}
	if d := hkv - gkv; d < 47.20 || d > 47.23 {
		t.Errorf("KV cache %.2f vs %.2f GiB: want the tables' 47.21 GiB back", hkv, gkv)
	}
	if htok <= 2*gtok {
		t.Errorf("KV pool %v tokens with the tables in host memory, %v on the GPU: want more than twice", htok, gtok)
	}
	for _, want := range []string{"Engram: 188.83 GiB of tables (layers [1 14], 24 hash heads each) in pinned host memory", "188.83 GiB of host memory per node", "3168 B per GPU"} {
		if !strings.Contains(hout, want) {
			t.Errorf("host-memory plan lacks %q:\n%s", want, hout)
		}
	}
	if !strings.Contains(gout, "in GPU memory (cpu_offload false): 47.21 GiB per GPU") {
		t.Errorf("GPU plan lacks the per-GPU tables:\n%s", gout)
	}
	// A model without Engram layers refuses the setting, as vLLM does.
	code, _, errOut := runCLI(t, "run", "--model", "deepseek-v4-flash", "--hardware", "h200", "-tp", "4", "--dry-run", "--engram-config", `{"cpu_offload":true}`)
	if code != 2 || !strings.Contains(errOut, "has no Engram layers") {
		t.Errorf("exit %d, stderr %q: want 2 and the missing-Engram error", code, errOut)
	}
}
