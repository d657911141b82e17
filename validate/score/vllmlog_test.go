package score

import (
	"os"
	"strings"
	"testing"

	"blis/scenario"
)

func TestReadServerLog(t *testing.T) {
	f, err := os.Open("testdata/vllm_server.log")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sl, err := ReadServerLog("vllm_server.log", f)
	if err != nil {
		t.Fatal(err)
	}
	if sl.Version != "0.10.1.1" || sl.VersionLine != 2 || sl.KVTokens != 410128 || sl.KVLine != 5 || sl.KVLines != 1 {
		t.Errorf("got %+v", sl)
	}
}

func TestReadServerLogForms(t *testing.T) {
	sl, err := ReadServerLog("x.log", strings.NewReader(
		"\x1b[1;36m(EngineCore_DP0 pid=1)\x1b[0;0m INFO [kv_cache_utils.py:1087] GPU KV cache size: 178880 tokens\n"+
			"(EngineCore_DP1 pid=2) INFO [kv_cache_utils.py:1087] GPU KV cache size: 178,880 tokens\n"+
			"INFO Initializing a V1 LLM engine (v0.11.0rc2.dev45+g1234abc) with config: x\n"))
	if err != nil {
		t.Fatal(err)
	}
	if sl.KVTokens != 178880 || sl.KVLines != 2 || sl.Version != "0.11.0rc2.dev45+g1234abc" || sl.VersionLine != 3 {
		t.Errorf("got %+v", sl)
	}
}

func TestReadServerLogErrors(t *testing.T) {
	for _, c := range []struct {
		name, log string
		line      int
		want      string
	}{
		{"bad number", "ok\nINFO GPU KV cache size: 41,0128 tokens\n", 2, "token count"},
		{"no unit", "INFO GPU KV cache size: 410128\n", 1, "N tokens"},
		{"zero", "INFO GPU KV cache size: 0 tokens\n", 1, "token count"},
		{"disagree", "GPU KV cache size: 1,000 tokens\nGPU KV cache size: 2,000 tokens\n", 2, "disagrees with line 1"},
		{"bad version", "vLLM API server version latest\n", 1, "vLLM version"},
		{"versions disagree", "vLLM API server version 0.10.2\nInitializing a V1 LLM engine (v0.11.0) with config\n", 2, "disagrees"},
		{"nothing", "hello\nworld\n", 0, "no vLLM start-up lines"},
		{"long line", strings.Repeat("x", maxLogLine+10) + "\n", 1, "longer than"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ReadServerLog("s.log", strings.NewReader(c.log))
			ie, ok := err.(*scenario.InputError)
			if !ok {
				t.Fatalf("got %v, want an InputError", err)
			}
			if ie.File != "s.log" || ie.Line != c.line || !strings.Contains(ie.Error(), c.want) {
				t.Errorf("got %q (line %d), want line %d and %q", ie.Error(), ie.Line, c.line, c.want)
			}
		})
	}
}

func FuzzReadServerLog(f *testing.F) {
	if b, err := os.ReadFile("testdata/vllm_server.log"); err == nil {
		f.Add(string(b))
	}
	f.Add("GPU KV cache size: 1,234 tokens\n")
	f.Add("vLLM API server version 0.1\n\x1b[31mGPU KV cache size: 9 tokens")
	f.Add("LLM engine (v) with config")
	f.Fuzz(func(t *testing.T, s string) {
		sl, err := ReadServerLog("f.log", strings.NewReader(s))
		if err != nil {
			if !scenario.IsInputError(err) {
				t.Fatalf("not an InputError: %v", err)
			}
			return
		}
		if sl.KVLines == 0 && sl.Version == "" {
			t.Fatal("accepted a log with no start-up line")
		}
		if sl.KVLines > 0 && sl.KVTokens < 1 {
			t.Fatalf("KV tokens %d", sl.KVTokens)
		}
		if sl.Version != "" && !ValidVersion(sl.Version) {
			t.Fatalf("version %q", sl.Version)
		}
	})
}
