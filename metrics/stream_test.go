package metrics

import (
	"bytes"
	"cmp"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// simRun drives a recorder as the simulation driver does: a closed loop of
// `conc` clients, requests of random lengths sent and finished in time
// order, every token's gap reported, some rejected. It returns the
// recorder after n requests.
func simRun(t testing.TB, opts RecorderOptions, n, conc int, seed uint64) *Recorder {
	t.Helper()
	r, err := NewRecorder(opts)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	type live struct {
		rec  Record
		next time.Duration // next token, or the finish
		left int
	}
	var next int64
	var flights []*live
	now := time.Duration(0)
	send := func() {
		q := &live{rec: Record{Index: next, Sent: now, InputTokens: 10 + rng.IntN(100), Session: uint64(next%7) + 1, Turn: int(next / 7)}}
		next++
		r.Send(q.rec.Index, now)
		if rng.IntN(20) == 0 {
			q.rec.Rejected, q.rec.RejectReason = true, "prompt too long"
			q.next = now + time.Duration(rng.IntN(1000))
		} else {
			q.left = 1 + rng.IntN(8)
			q.rec.OutputTokens = q.left
			q.next = now + time.Duration(1+rng.IntN(5_000_000))
		}
		flights = append(flights, q)
	}
	for range conc {
		send()
	}
	done := 0
	for done < n {
		// The earliest event next.
		i := 0
		for j, f := range flights {
			if f.next < flights[i].next || f.next == flights[i].next && f.rec.Index < flights[i].rec.Index {
				i = j
			}
		}
		f := flights[i]
		now = f.next
		if !f.rec.Rejected && f.left > 0 {
			if f.rec.FirstToken == 0 {
				f.rec.FirstToken = now
			} else {
				r.AddITL(f.rec.Index, now-f.rec.Finish)
			}
			r.AddTokens(now, 1)
			f.rec.Finish = now
			f.left--
			if f.left > 0 {
				f.next = now + time.Duration(1+rng.IntN(3_000_000))
				continue
			}
		}
		if f.rec.Rejected {
			f.rec.FirstToken, f.rec.Finish = f.rec.Sent, now
		}
		r.Finish(f.rec)
		done++
		flights = slices.Delete(flights, i, i+1)
		send()
	}
	return r
}

// exactPeak is the sweep line over every completed request's interval.
func exactPeak(reqs []RequestResult) int {
	var ev []event
	for _, q := range reqs {
		if q.Success {
			ev = append(ev, event{q.Start, 1}, event{q.End, -1})
		}
	}
	slices.SortFunc(ev, event.cmp)
	cur, peak := 0, 0
	for _, e := range ev {
		cur += e.delta
		peak = max(peak, cur)
	}
	return peak
}

// The streamed max_concurrent_requests folds intervals as it goes and is
// the exact sweep; without Send calls it sweeps at the end, the same.
func TestConcurrencyStreamsExactly(t *testing.T) {
	for seed := range uint64(20) {
		r := simRun(t, RecorderOptions{}, 500, 1+int(seed%9)*4, seed)
		res := r.Summarize(SummaryInput{Duration: time.Second})
		if want := exactPeak(res.Requests); res.MaxConcurrentRequests != want {
			t.Fatalf("seed %d: peak %d, want %d", seed, res.MaxConcurrentRequests, want)
		}
		if r.conc.untracked || len(r.conc.held) > 4*len(res.Requests)/10 {
			t.Errorf("seed %d: untracked %v, %d events still held of %d requests", seed, r.conc.untracked, len(r.conc.held), len(res.Requests))
		}
		// The same finishes without sends: everything waits for Summarize.
		r2, _ := NewRecorder(RecorderOptions{})
		for _, q := range res.Requests {
			rec := Record{Index: q.Index, Sent: q.Start, FirstToken: q.Start + q.TTFT, Finish: q.End, OutputTokens: q.OutputTokens}
			if !q.Success {
				rec.Rejected = true
			}
			r2.Finish(rec)
		}
		if got := r2.Summarize(SummaryInput{}).MaxConcurrentRequests; got != res.MaxConcurrentRequests {
			t.Fatalf("seed %d: without sends peak %d, want %d", seed, got, res.MaxConcurrentRequests)
		}
	}
}

// countingSink counts what it is given and checks the order.
type countingSink struct {
	n, ok int
	gaps  int
	t     testing.TB
}

func (s *countingSink) Request(q *RequestResult) error {
	if q.Seq != int64(s.n) {
		s.t.Fatalf("request %d has Seq %d", s.n, q.Seq)
	}
	s.n++
	if q.Success {
		s.ok++
		s.gaps += len(q.ITLs)
	}
	return nil
}

// Sinks see every request once, in completion order, with its gaps; the
// kept Requests are the same requests in Index order; the summary does not
// depend on whether requests are kept.
func TestSinksSeeCompletionOrder(t *testing.T) {
	sink := &countingSink{t: t}
	kept := simRun(t, RecorderOptions{Detailed: true, Sinks: []Sink{sink}}, 2000, 16, 3)
	omit := simRun(t, RecorderOptions{Detailed: true, OmitRequests: true}, 2000, 16, 3)
	in := SummaryInput{Duration: 3 * time.Second, Goodput: []SLO{{MetricTTFT, 2}}, MaxConcurrency: 16, RequestRate: 5}
	a, b := kept.Summarize(in), omit.Summarize(in)
	if len(b.Requests) != 0 {
		t.Errorf("OmitRequests kept %d requests", len(b.Requests))
	}
	if sink.n != len(a.Requests) || sink.ok != a.Completed {
		t.Errorf("sink saw %d requests (%d ok), want %d (%d)", sink.n, sink.ok, len(a.Requests), a.Completed)
	}
	gaps := 0
	for i, q := range a.Requests {
		if i > 0 && q.Index <= a.Requests[i-1].Index {
			t.Fatalf("request %d has index %d after %d", i, q.Index, a.Requests[i-1].Index)
		}
		gaps += len(q.ITLs)
	}
	if gaps != sink.gaps || gaps == 0 {
		t.Errorf("sink saw %d gaps, Requests hold %d", sink.gaps, gaps)
	}
	a.Requests = nil
	var ja, jb bytes.Buffer
	WriteJSON(&ja, a, false)
	WriteJSON(&jb, b, false)
	if ja.String() != jb.String() {
		t.Errorf("the summary depends on keeping requests:\n%s\n%s", ja.String(), jb.String())
	}
}

// What the recorder retains grows by a few bytes per finished request (its
// exact statistics' varints), not by the request's record or its gaps; the
// per-request path does not allocate.
func TestRecorderMemoryBoundedByInFlight(t *testing.T) {
	heap := func(n int) (uint64, *Recorder) {
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		r := simRun(t, RecorderOptions{Detailed: true, OmitRequests: true, Sinks: []Sink{&countingSink{t: t}}}, n, 32, 9)
		runtime.GC()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(r)
		return after.HeapAlloc - min(after.HeapAlloc, before.HeapAlloc), r
	}
	const n = 20_000
	small, r1 := heap(n)
	large, r10 := heap(10 * n)
	perRequest := float64(large-min(large, small)) / (9 * n)
	t.Logf("retained %.1f bytes per request; statistics log %d bytes per request", perRequest, r10.stats.rows.log.Bytes()/r10.stats.rows.n)
	if perRequest > 24 {
		t.Errorf("retained %.1f bytes per request (%d after %d requests, %d after %d), want ≤ 24", perRequest, small, n, large, 10*n)
	}
	if got := r10.stats.rows.log.Bytes() / r10.stats.rows.n; got > 16 {
		t.Errorf("statistics log: %d bytes per request, want ≤ 16", got)
	}
	if len(r1.flights) > 32 || len(r10.flights) > 32 {
		t.Errorf("%d and %d requests still held as in flight, want ≤ 32", len(r1.flights), len(r10.flights))
	}
	// One request's path, in steady state: Send, gaps, Finish.
	r, _ := NewRecorder(RecorderOptions{Detailed: true, OmitRequests: true, Sinks: []Sink{&countingSink{t: t}}})
	i := int64(0)
	one := func() {
		r.Send(i, time.Duration(i))
		for g := range 8 {
			r.AddITL(i, time.Duration(1000+g))
		}
		r.Finish(Record{Index: i, Sent: time.Duration(i), FirstToken: time.Duration(i) + 10, Finish: time.Duration(i) + 9000, OutputTokens: 9})
		i++
	}
	for range 1000 {
		one()
	}
	if allocs := testing.AllocsPerRun(20_000, one); allocs > 0.01 {
		t.Errorf("%.3f allocations per request, want none but a log chunk now and then", allocs)
	}
}

// The streamed result file is WriteJSON's, whatever order requests come
// in and whether or not the columns spill to temporary files, which are
// gone afterwards.
func TestJSONWriterStreams(t *testing.T) {
	r := simRun(t, RecorderOptions{Detailed: true}, 3000, 64, 5)
	res := r.Summarize(goldenInput())
	for _, detailed := range []bool{false, true} {
		var want bytes.Buffer
		if err := WriteJSON(&want, res, detailed); err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		var got bytes.Buffer
		j := NewJSONWriter(&got, JSONOptions{Detailed: detailed, TempDir: dir})
		order := slices.Clone(res.Requests)
		slices.SortFunc(order, func(a, b RequestResult) int { return cmp.Compare(a.End, b.End) })
		for _, q := range order {
			itls := q.ITLs
			q.ITLs = slices.Clone(itls)
			if err := j.Request(&q); err != nil {
				t.Fatal(err)
			}
			clear(q.ITLs) // the writer must not keep borrowed gaps
		}
		if err := j.Close(res); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Fatalf("detailed %v: streamed JSON differs from WriteJSON", detailed)
		}
		if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) != 0 {
			t.Errorf("spool files left: %v", left)
		}
		var doc map[string]any
		if err := json.Unmarshal(got.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		if n := len(doc["latencies"].([]any)); n != len(res.Requests) {
			t.Errorf("%d latencies, want %d", n, len(res.Requests))
		}
	}
}

// vLLM's keys: date first, rtfx after max_concurrent_requests, latencies
// and queue_times always, the per-request arrays only when detailed.
func TestResultKeysMatchVLLM(t *testing.T) {
	r := threeRequests(t, RecorderOptions{Detailed: true}, []int{0, 1, 2, 3})
	res := r.Summarize(threeInput())
	keys := func(detailed bool) []string {
		var b bytes.Buffer
		if err := NewJSONWriterFor(&b, res, JSONOptions{Detailed: detailed, EpochUnixNano: DefaultEpochUnixNano + int64(90*time.Minute)}); err != nil {
			t.Fatal(err)
		}
		dec := json.NewDecoder(&b)
		dec.Token()
		var ks []string
		for dec.More() {
			tok, _ := dec.Token()
			ks = append(ks, tok.(string))
			var v any
			dec.Decode(&v)
			if tok == "date" && v != "20260101-013000" {
				t.Errorf("date %v, want 20260101-013000", v)
			}
		}
		return ks
	}
	per := []string{"input_lens", "output_lens", "ttfts", "itls", "start_times", "generated_texts", "errors"}
	plain, detailed := keys(false), keys(true)
	if plain[0] != "date" || !slices.Contains(plain, "latencies") || !slices.Contains(plain, "queue_times") {
		t.Errorf("keys %v", plain)
	}
	i := slices.Index(plain, "max_concurrent_requests")
	if i < 0 || plain[i+1] != "rtfx" {
		t.Errorf("rtfx does not follow max_concurrent_requests: %v", plain)
	}
	for _, k := range per {
		if slices.Contains(plain, k) || !slices.Contains(detailed, k) {
			t.Errorf("%s: in the plain file %v, in the detailed one %v", k, slices.Contains(plain, k), slices.Contains(detailed, k))
		}
	}
	want := []string{"input_lens", "output_lens", "ttfts", "itls", "latencies", "start_times", "queue_times", "generated_texts", "errors"}
	at := slices.Index(detailed, "input_lens")
	if !slices.Equal(detailed[at:at+len(want)], want) {
		t.Errorf("per-request arrays in order %v, want vLLM's %v", detailed[at:at+len(want)], want)
	}
}

// NewJSONWriterFor writes res through a JSONWriter.
func NewJSONWriterFor(w *bytes.Buffer, res *Result, opt JSONOptions) error {
	j := NewJSONWriter(w, opt)
	for i := range res.Requests {
		if err := j.Request(&res.Requests[i]); err != nil {
			return err
		}
	}
	return j.Close(res)
}

// --append-result: one document per line, whether the file was written by
// BLIS (ends in a newline) or by vLLM (does not).
func TestCreateResultFileAppends(t *testing.T) {
	for _, tc := range []struct {
		name, before string
		want         int
	}{
		{"new file", "", 1},
		{"BLIS file", "{\"a\": 1}\n", 2},
		{"vLLM file", "{\"a\": 1}", 2},
	} {
		p := filepath.Join(t.TempDir(), "sub", "r.json")
		if tc.before != "" {
			os.MkdirAll(filepath.Dir(p), 0o755)
			os.WriteFile(p, []byte(tc.before), 0o644)
		}
		f, err := CreateResultFile(p, true)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString("{\"b\": 2}\n")
		f.Close()
		data, _ := os.ReadFile(p)
		lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
		if len(lines) != tc.want {
			t.Errorf("%s: %q", tc.name, data)
		}
		for _, l := range lines {
			if !json.Valid([]byte(l)) {
				t.Errorf("%s: line %q is not a document", tc.name, l)
			}
		}
	}
	// Without append the file is replaced.
	p := filepath.Join(t.TempDir(), "r.json")
	os.WriteFile(p, []byte("old\n"), 0o644)
	f, err := CreateResultFile(p, false)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if data, _ := os.ReadFile(p); len(data) != 0 {
		t.Errorf("not truncated: %q", data)
	}
}

// BenchmarkRecorderRequest is one request's path through the recorder:
// send, eight gaps, finish, into a sink.
func BenchmarkRecorderRequest(b *testing.B) {
	r, _ := NewRecorder(RecorderOptions{Detailed: true, OmitRequests: true, Sinks: []Sink{&countingSink{t: b}}})
	b.ReportAllocs()
	for i := range int64(b.N) {
		r.Send(i, time.Duration(i))
		for g := range 8 {
			r.AddITL(i, time.Duration(1000+g))
		}
		r.Finish(Record{Index: i, Sent: time.Duration(i), FirstToken: time.Duration(i) + 10, Finish: time.Duration(i) + 9000, OutputTokens: 9})
	}
}

// A recorder told a TempDir keeps 4 MiB of its values in memory and the
// rest on disk, with the same summary; Close removes the file.
func TestRecorderSpills(t *testing.T) {
	dir := t.TempDir()
	in := SummaryInput{Duration: time.Second, MaxConcurrency: 8, RequestRate: 3}
	mem := simRun(t, RecorderOptions{OmitRequests: true}, 450_000, 8, 11)
	disk := simRun(t, RecorderOptions{OmitRequests: true, TempDir: dir}, 450_000, 8, 11)
	if got := disk.stats.rows.log.MemBytes(); got > 4<<20 {
		t.Errorf("%d bytes in memory, want at most 4 MiB", got)
	}
	var a, b bytes.Buffer
	WriteJSON(&a, mem.Summarize(in), false)
	WriteJSON(&b, disk.Summarize(in), false)
	if a.String() != b.String() {
		t.Error("the spilled recorder's summary differs")
	}
	if err := disk.Err(); err != nil {
		t.Fatal(err)
	}
	if err := disk.Close(); err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) != 0 {
		t.Errorf("files left: %v", left)
	}
}
