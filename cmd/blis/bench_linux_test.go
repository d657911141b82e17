//go:build linux

package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// BenchmarkStreamingRun is `blis run` over 10,000,000 random requests
// (16 prompt and 4 output tokens, 256 in flight) with --save-result and
// --export aiperf,vllm, the result files streamed to a temporary
// directory (about 11 GB). It reports the process's peak resident memory
// (issue target: under 1 GiB, whatever the run's length):
//
//	go test ./cmd/blis -run '^$' -bench StreamingRun -benchtime 1x
func BenchmarkStreamingRun(b *testing.B) {
	const n = 10_000_000
	for range b.N {
		dir := b.TempDir()
		var stderr bytes.Buffer
		code := run([]string{"run", "-q", "--num-prompts", strconv.Itoa(n), "--random-input-len", "16",
			"--random-output-len", "4", "--max-concurrency", "256", "--save-result", "--result-dir", dir,
			"--export", "aiperf,vllm", "--export-dir", dir}, io.Discard, &stderr)
		if code != 0 {
			b.Fatalf("exit %d: %s", code, stderr.String())
		}
		size := int64(0)
		files, _ := filepath.Glob(filepath.Join(dir, "*"))
		for _, f := range files {
			if st, err := os.Stat(f); err == nil {
				size += st.Size()
			}
			os.Remove(f)
		}
		b.ReportMetric(float64(size)/1e9, "output_GB")
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(ru.Maxrss)/1024, "maxrss_MiB") // Linux reports KiB
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "requests/s")
}
