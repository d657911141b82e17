// Package formattest holds the fixtures the format packages' tests share:
// a small simulated-like run recorded and summarised as BLIS would, and
// checks that a format's read-back records and statistics are BLIS's own.
package formattest

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"blis/metrics"
)

const ms = time.Millisecond

// Records is a small simulated-like run: 14 requests sent 37 ms
// apart under a concurrency cap, mixed lengths (one with a single output
// token), one rejected and one that never streamed, gaps at odd
// nanosecond values, conversations of three turns (sessions 1, 2, …).
func Records() (recs []metrics.Record, gaps [][]time.Duration) {
	seed := uint64(12345)
	next := func(n uint64) uint64 {
		seed = seed*6364136223846793005 + 1442695040888963407
		return (seed >> 33) % n
	}
	for i := range 14 {
		sent := time.Duration(i)*37*ms + time.Duration(next(999_999))
		rec := metrics.Record{
			Index: int64(i), Sent: sent, Scheduled: sent + 3*ms,
			Session: uint64(i/3 + 1), Turn: i % 3,
			InputTokens:     100 + int(next(900)),
			CachedTokens:    int(next(64)),
			ClientQueueTime: time.Duration(next(5)) * ms,
		}
		var g []time.Duration
		switch i {
		case 5:
			rec.Rejected, rec.RejectReason = true, "prompt (5000 tokens) longer than max_model_len 4096"
			rec.FirstToken, rec.Finish = sent+ms, sent+ms
		case 9:
			rec.FirstToken, rec.Finish = sent+2*ms, sent+2*ms // never streamed a token
		default:
			rec.FirstToken = sent + 20*ms + time.Duration(next(300_000_000))
			out := 1
			if i != 3 {
				out = 2 + int(next(40))
			}
			rec.OutputTokens = out
			t := rec.FirstToken
			for range out - 1 {
				d := 8*ms + time.Duration(next(30_000_000)) + 1
				g = append(g, d)
				t += d
			}
			rec.Finish = t
		}
		recs = append(recs, rec)
		gaps = append(gaps, g)
	}
	return recs, gaps
}

// RecordRun feeds records to a recorder as a driver would: the sends in
// time order, then every token in simulated-time order (ties by index),
// then the finishes in time order.
func RecordRun(t testing.TB, opts metrics.RecorderOptions, recs []metrics.Record, gaps [][]time.Duration) *metrics.Recorder {
	t.Helper()
	r, err := metrics.NewRecorder(opts)
	if err != nil {
		t.Fatal(err)
	}
	sends := slices.Clone(recs)
	slices.SortStableFunc(sends, func(a, b metrics.Record) int { return int(a.Sent - b.Sent) })
	for _, rec := range sends {
		r.Send(rec.Index, rec.Sent)
	}
	type tok struct {
		at  time.Duration
		idx int64
		gap time.Duration
		itl bool
	}
	var toks []tok
	for i, rec := range recs {
		if rec.Rejected || rec.OutputTokens == 0 {
			continue
		}
		at := rec.FirstToken
		toks = append(toks, tok{at, rec.Index, 0, false})
		for _, g := range gaps[i] {
			at += g
			toks = append(toks, tok{at, rec.Index, g, true})
		}
	}
	slices.SortStableFunc(toks, func(a, b tok) int {
		if a.at != b.at {
			return int(a.at - b.at)
		}
		return int(a.idx - b.idx)
	})
	for _, tk := range toks {
		if tk.itl {
			r.AddITL(tk.idx, tk.gap)
		}
		r.AddTokens(tk.at, 1)
	}
	order := make([]int, len(recs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return int(recs[a].Finish - recs[b].Finish) })
	for _, i := range order {
		r.Finish(recs[i])
	}
	return r
}

// Duration is the run's span: first send to last finish.
func Duration(recs []metrics.Record) time.Duration {
	s, e := recs[0].Sent, recs[0].Finish
	for _, r := range recs {
		s, e = min(s, r.Sent), max(e, r.Finish)
	}
	return e - s
}

// Percentiles are the percentiles Result reports: vLLM's and llm-d's
// named ones, and some that only BLIS's formats name.
var Percentiles = []float64{0.1, 25, 50, 75, 90, 99, 99.9}

// Result is Records recorded in detail and summarised, with a RunInfo
// that exercises every field the formats write.
func Result(t testing.TB) (*metrics.Result, metrics.RunInfo) {
	t.Helper()
	recs, gaps := Records()
	rec := RecordRun(t, metrics.RecorderOptions{Detailed: true, Percentiles: Percentiles}, recs, gaps)
	res := rec.Summarize(metrics.SummaryInput{
		Duration: Duration(recs), Backend: "openai", ModelID: "meta-llama/Llama-3.1-8B-Instruct",
		TokenizerID: "meta-llama/Llama-3.1-8B-Instruct", NumPrompts: len(recs),
		RequestRate: math.Inf(1), Burstiness: 1, MaxConcurrency: 8,
		GPUKVCacheTokens: 417552, Deployment: map[string]any{"hardware": "h100"},
	})
	run := metrics.RunInfo{
		Chip: "H100", Precision: "bf16", TP: 2, ISL: 512, OSL: 24, RangeRatio: 0.5, Seed: 7,
		Version: "test", MultiTurn: true,
	}
	return res, run
}

// Resummarize replays measured requests through a recorder, as if BLIS
// had measured them, and summarises them as vLLM bench would.
func Resummarize(t *testing.T, m *metrics.MeasuredRun, origin int64, percentiles []float64) *metrics.Result {
	t.Helper()
	var recs []metrics.Record
	var gaps [][]time.Duration
	for _, q := range m.Requests {
		idx, err := strconv.ParseInt(q.ID, 10, 64)
		if err != nil {
			t.Fatalf("request id %q", q.ID)
		}
		rec := metrics.Record{Index: idx, Sent: time.Duration(q.Start - origin), Finish: time.Duration(q.End - origin),
			InputTokens: q.InputTokens, OutputTokens: q.OutputTokens}
		rec.FirstToken = rec.Sent + q.TTFT
		if !q.Success {
			rec.Rejected, rec.RejectReason, rec.OutputTokens = true, q.Error, 0
			rec.FirstToken = rec.Finish
		}
		recs = append(recs, rec)
		gaps = append(gaps, q.ITLs)
	}
	rec := RecordRun(t, metrics.RecorderOptions{Detailed: true, Percentiles: percentiles}, recs, gaps)
	return rec.Summarize(metrics.SummaryInput{Duration: Duration(recs)})
}

func sameStat(t *testing.T, what string, got, want metrics.Stat) {
	t.Helper()
	if got.Mean != want.Mean || got.Median != want.Median || got.Std != want.Std || !slices.Equal(got.Percentiles, want.Percentiles) {
		t.Errorf("%s: got %+v, want %+v (bit for bit)", what, got, want)
	}
}

// SameSummary checks that got's statistics, counts and per-request
// errors and gaps are want's, bit for bit.
func SameSummary(t *testing.T, got, want *metrics.Result) {
	t.Helper()
	sameStat(t, "ttft", got.TTFT, want.TTFT)
	sameStat(t, "tpot", got.TPOT, want.TPOT)
	sameStat(t, "itl", got.ITL, want.ITL)
	sameStat(t, "e2el", got.E2EL, want.E2EL)
	if got.Completed != want.Completed || got.Failed != want.Failed ||
		got.TotalInputTokens != want.TotalInputTokens || got.TotalOutputTokens != want.TotalOutputTokens ||
		got.DurationS != want.DurationS || got.RequestThroughput != want.RequestThroughput ||
		got.OutputThroughput != want.OutputThroughput || got.TotalTokenThroughput != want.TotalTokenThroughput ||
		got.MaxOutputTokensPerS != want.MaxOutputTokensPerS || got.MaxConcurrentRequests != want.MaxConcurrentRequests {
		t.Errorf("summary differs:\ngot  %+v\nwant %+v", got, want)
	}
	for i := range want.Requests {
		g, w := got.Requests[i], want.Requests[i]
		if g.Error != w.Error || g.Success != w.Success || !durationsEqual(g.ITLs, w.ITLs) {
			t.Errorf("request %d: got %+v, want %+v", i, g, w)
		}
	}
}

// InSeq is a copy of res with its requests in completion order (Seq), the
// order aiperf, GuideLLM and inference-perf write them in.
func InSeq(res *metrics.Result) *metrics.Result {
	c := *res
	c.Requests = nil
	for _, q := range res.InCompletionOrder() {
		c.Requests = append(c.Requests, *q)
	}
	return &c
}

// CheckRequests compares read-back requests with the Result's, in order,
// exactly or within tol nanoseconds for times.
func CheckRequests(t *testing.T, got []metrics.MeasuredRequest, res *metrics.Result, run metrics.RunInfo, origin int64, tol int64, itls bool) {
	t.Helper()
	if len(got) != len(res.Requests) {
		t.Fatalf("%d requests read back, want %d", len(got), len(res.Requests))
	}
	near := func(a, b int64) bool { return a-b <= tol && b-a <= tol }
	for i, q := range got {
		w := res.Requests[i]
		if q.ID != strconv.FormatInt(w.Index, 10) || q.Success != w.Success || q.Error != w.Error ||
			q.InputTokens != w.InputTokens || q.OutputTokens != w.OutputTokens {
			t.Errorf("request %d: got %+v, want %+v", i, q, w)
			continue
		}
		if !near(q.Start, origin+int64(w.Start)) || !near(q.End-q.Start, int64(w.End-w.Start)) && w.Success {
			t.Errorf("request %d: start %d end %d, want %d and %d (±%d ns)", i, q.Start, q.End, origin+int64(w.Start), origin+int64(w.End), tol)
		}
		if !near(int64(q.TTFT), int64(w.TTFT)) {
			t.Errorf("request %d: TTFT %v, want %v", i, q.TTFT, w.TTFT)
		}
		if itls && !durationsEqual(q.ITLs, w.ITLs) {
			t.Errorf("request %d: ITLs %v, want %v", i, q.ITLs, w.ITLs)
		}
		if q.Conversation != "" {
			c, turn := run.ConversationOf(&w)
			if q.Conversation != strconv.FormatInt(c, 10) || q.Turn != turn {
				t.Errorf("request %d: conversation %s turn %d, want %d and %d", i, q.Conversation, q.Turn, c, turn)
			}
		}
	}
}

func durationsEqual(a, b []time.Duration) bool { return slices.Equal(a, b) }

// Plain is Records summarised from a recorder that kept no per-request
// gaps (not Detailed), at a finite request rate.
func Plain(t testing.TB) *metrics.Result {
	t.Helper()
	recs, gaps := Records()
	return RecordRun(t, metrics.RecorderOptions{}, recs, gaps).Summarize(metrics.SummaryInput{Duration: Duration(recs), RequestRate: 4, Burstiness: 1})
}

// Empty is the summary of a Detailed recorder that saw no request.
func Empty(t testing.TB) *metrics.Result {
	t.Helper()
	r, err := metrics.NewRecorder(metrics.RecorderOptions{Detailed: true})
	if err != nil {
		t.Fatal(err)
	}
	return r.Summarize(metrics.SummaryInput{RequestRate: math.Inf(1)})
}

// WriteFile writes data as dir/name and returns the path.
func WriteFile(t testing.TB, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Dir writes files (name to contents) into a fresh directory and returns
// it.
func Dir(t testing.TB, files map[string][]byte) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		WriteFile(t, dir, name, data)
	}
	return dir
}

// Mutate copies dir/name into a fresh directory with the first n
// occurrences of old replaced by new, and returns the copy's path.
func Mutate(t testing.TB, dir, name, old, new string, n int) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(data), old, new, n)
	if bad == string(data) {
		t.Fatalf("%s: %q not found", name, old)
	}
	return WriteFile(t, t.TempDir(), name, []byte(bad))
}

// BadFile is a broken result file and what a reader's error about it must
// name (the file, line, JSON path, what was found and what was wanted).
type BadFile struct {
	What, Path string
	Want       []string
}

// ReadErrors checks that read fails on each bad file with an error naming
// all its Want.
func ReadErrors(t testing.TB, read func(path string) error, bad ...BadFile) {
	t.Helper()
	for _, b := range bad {
		err := read(b.Path)
		if err == nil {
			t.Errorf("%s: no error", b.What)
			continue
		}
		for _, w := range b.Want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not contain %q", b.What, err, w)
			}
		}
	}
}

// FuzzParser fuzzes a reader: no input may panic, and a reader is a pure
// function of the bytes. The seeds are small hand-made files of the format
// (the full examples and goldens are read by the unit tests; as seeds they
// slow the fuzzer to a crawl).
func FuzzParser(f *testing.F, parse func(data []byte) error, seeds ...string) {
	for _, s := range append(seeds, "", "{}", "[]", "null") {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		err1 := parse(data)
		err2 := parse(data)
		if (err1 == nil) != (err2 == nil) {
			t.Fatalf("not deterministic: %v vs %v", err1, err2)
		}
	})
}
