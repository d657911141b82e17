package workload

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

func mooncake(t testing.TB, text string, spec TraceSpec) ([]Request, error) {
	t.Helper()
	src, err := NewMooncake(strings.NewReader(text), "trace.jsonl", spec)
	if err != nil {
		return nil, err
	}
	return drain(t, src)
}

func mustMooncake(t testing.TB, text string, spec TraceSpec) []Request {
	t.Helper()
	reqs, err := mooncake(t, text, spec)
	if err != nil {
		t.Fatal(err)
	}
	return reqs
}

func lens(segs []Segment) []int {
	out := make([]int, len(segs))
	for i, s := range segs {
		out[i] = s.Len
	}
	return out
}

func TestMooncakeBlocks(t *testing.T) {
	for _, c := range []struct {
		name   string
		in     int
		hashes string
		want   []int // segment lengths
		hashed int   // leading segments that come from hash ids
	}{
		{"exact tile", 1024, "[1, 2]", []int{512, 512}, 2},
		{"partial last block", 1000, "[1, 2]", []int{512, 488}, 2},
		{"one-token last block", 513, "[1, 2]", []int{512, 1}, 2},
		{"single partial block", 10, "[7]", []int{10}, 1},
		{"prefix only: unique tail", 1200, "[1, 2]", []int{512, 512, 176}, 2},
		{"no hash ids", 300, "[]", []int{300}, 0},
		{"null hash ids", 300, "null", []int{300}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			line := fmt.Sprintf(`{"timestamp": 0, "input_length": %d, "output_length": 5, "hash_ids": %s}`, c.in, c.hashes)
			reqs := mustMooncake(t, line, TraceSpec{})
			if got := lens(reqs[0].Prompt); fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("segments %v, want %v", got, c.want)
			}
		})
	}
}

func TestMooncakeSharedHashIDsShareSegments(t *testing.T) {
	// Two conversations on a shared first block, the second continuing the
	// first (the Mooncake conversation trace's layout), and an unrelated one.
	reqs := mustMooncake(t, `{"timestamp": 0, "input_length": 1500, "output_length": 10, "hash_ids": [0, 1, 2]}
{"timestamp": 5, "input_length": 1800, "output_length": 10, "hash_ids": [0, 1, 2, 3]}
{"timestamp": 9, "input_length": 700, "output_length": 10, "hash_ids": [0, 9]}
{"timestamp": 9, "input_length": 700, "output_length": 10, "hash_ids": [5, 9]}
`, TraceSpec{})
	a, b, c, d := reqs[0].Prompt, reqs[1].Prompt, reqs[2].Prompt, reqs[3].Prompt
	// Whole blocks: equal ids, equal segments.
	if a[0] != b[0] || a[1] != b[1] || a[0] != c[0] {
		t.Errorf("shared leading blocks differ: %v %v %v", a, b, c)
	}
	// Block 2 is partial in a (476 tokens), whole in b: same ID, so the
	// first 476 tokens agree, as the same hash id's content does.
	if a[2].ID != b[2].ID || a[2].Len != 476 || b[2].Len != 512 {
		t.Errorf("block 2: %+v vs %+v", a[2], b[2])
	}
	if c[1].ID == a[1].ID || d[0].ID == a[0].ID {
		t.Error("different hash ids gave the same segment")
	}
	if c[1].ID != d[1].ID {
		t.Error("hash id 9 gave different segments in two requests")
	}
}

func TestMooncakeUniqueTailsDiffer(t *testing.T) {
	reqs := mustMooncake(t, `{"timestamp": 0, "input_length": 100, "output_length": 1}
{"timestamp": 0, "input_length": 100, "output_length": 1}
{"timestamp": 0, "input_length": 600, "output_length": 1, "hash_ids": [1]}
`, TraceSpec{})
	if reqs[0].Prompt[0].ID == reqs[1].Prompt[0].ID || reqs[2].Prompt[1].ID == reqs[0].Prompt[0].ID {
		t.Error("prompts without hash ids share content")
	}
}

func TestMooncakeFixedSchedule(t *testing.T) {
	const trace = `{"timestamp": 1000, "input_length": 10, "output_length": 1}
{"timestamp": 1500.5, "input_length": 10, "output_length": 1}
{"timestamp": 3000, "input_length": 10, "output_length": 1}
{"timestamp": 7000, "input_length": 10, "output_length": 1}
`
	ms := func(v ...float64) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(math.Round(x * 1e6))
		}
		return out
	}
	for _, c := range []struct {
		name string
		spec TraceSpec
		want []time.Duration
	}{
		{"from zero (aiperf's default)", TraceSpec{}, ms(1000, 1500.5, 3000, 7000)},
		{"the flag changes nothing here", TraceSpec{FixedSchedule: true}, ms(1000, 1500.5, 3000, 7000)},
		{"auto offset: from the first", TraceSpec{FixedScheduleAutoOffset: true}, ms(0, 500.5, 2000, 6000)},
		{"speedup 2", TraceSpec{FixedScheduleAutoOffset: true, FixedScheduleSpeedup: 2}, ms(0, 250.25, 1000, 3000)},
		{"speedup 0.5", TraceSpec{FixedScheduleSpeedup: 0.5}, ms(2000, 3001, 6000, 14000)},
		{"window counts from its start", TraceSpec{FixedScheduleStartOffset: 1500, FixedScheduleEndOffset: 3000}, ms(0.5, 1500)},
		{"window with auto offset", TraceSpec{FixedScheduleStartOffset: 1200, FixedScheduleAutoOffset: true}, ms(0, 1499.5, 5499.5)},
		{"a request rate is ignored on a schedule", TraceSpec{RequestRate: 1}, ms(1000, 1500.5, 3000, 7000)},
	} {
		t.Run(c.name, func(t *testing.T) {
			reqs := mustMooncake(t, trace, c.spec)
			var got []time.Duration
			for _, r := range reqs {
				got = append(got, r.Arrival)
			}
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("arrivals %v, want %v", got, c.want)
			}
		})
	}
}

func TestMooncakeRatePaced(t *testing.T) {
	const trace = `{"input_length": 10, "output_length": 1}
{"input_length": 10, "output_length": 1}
{"input_length": 10, "output_length": 1}
`
	for _, r := range mustMooncake(t, trace, TraceSpec{}) {
		if r.Arrival != 0 {
			t.Errorf("request %d at %v, want 0 (--request-rate inf)", r.Index, r.Arrival)
		}
	}
	reqs := mustMooncake(t, trace, TraceSpec{RequestRate: 2, Burstiness: math.Inf(1)})
	for i, r := range reqs {
		if want := time.Duration(i) * 500 * time.Millisecond; r.Arrival != want {
			t.Errorf("request %d at %v, want %v (constant gaps of 1/rate from 0)", i, r.Arrival, want)
		}
	}
	_, err := mooncake(t, trace, TraceSpec{FixedSchedule: true})
	wantBadInput(t, err, `trace.jsonl:1: "timestamp": missing: every request needs a timestamp when the trace is replayed on its schedule (--fixed-schedule)`)
}

func TestMooncakeSessions(t *testing.T) {
	// aiperf's multi-turn form: rows of one session_id are its turns; later
	// turns carry only their new tokens and wait for the previous turn.
	const trace = `{"session_id": "a", "timestamp": 0, "input_length": 600, "output_length": 40, "hash_ids": [1, 2]}
{"session_id": "b", "timestamp": 100, "input_length": 300, "output_length": 20}
{"session_id": "a", "delay": 2000, "input_length": 150, "output_length": 30}
{"input_length": 50, "output_length": 5, "timestamp": 150}
{"session_id": "a", "timestamp": 5000, "input_length": 80, "output_length": 10}
{"session_id": "b", "input_length": 70, "output_length": 7}
`
	reqs := mustMooncake(t, trace, TraceSpec{FixedScheduleSpeedup: 2})
	type sess struct {
		id          uint64
		turn        int
		prev        bool
		ctx         int
		delay       time.Duration
		arrival     time.Duration
		inputLen    int
		segmentLens string
	}
	var got []sess
	for _, r := range reqs {
		got = append(got, sess{r.SessionID, r.Turn, r.PrevContext, r.ContextLen, r.Delay, r.Arrival, r.InputLen, fmt.Sprint(lens(r.Prompt))})
	}
	ms := time.Millisecond
	want := []sess{
		{1, 0, false, 0, 0, 0, 600, "[512 88]"},
		{2, 0, false, 0, 0, 50 * ms, 300, "[300]"},
		{1, 1, true, 640, 1000 * ms, 0, 150, "[150]"}, // delay 2000 ms / speedup 2; no timestamp: the session's start
		{0, 0, false, 0, 0, 75 * ms, 50, "[50]"},
		{1, 2, true, 820, 0, 2500 * ms, 80, "[80]"}, // a timestamp: sent then (not before turn 1 finished)
		{2, 1, true, 320, 0, 50 * ms, 70, "[70]"},   // neither: at once after turn 0
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got\n%v\nwant\n%v", got, want)
	}
}

func TestMooncakeTextInput(t *testing.T) {
	reqs := mustMooncake(t, `{"timestamp": 0, "text_input": "What is the capital of France?", "output_length": 20}
{"timestamp": 1, "text_input": "What is the capital of France?", "output_length": 20}
{"timestamp": 2, "text_input": "Explain quantum computing in simple terms.", "output_length": 100, "type": "mooncake_trace", "extra": {"temperature": 0.5, "stop": ["\n"]}}
`, TraceSpec{})
	if reqs[0].InputLen != ApproxTokens("What is the capital of France?") || reqs[0].InputLen != 8 {
		t.Errorf("InputLen %d, want 8 (30 bytes / 4, rounded up)", reqs[0].InputLen)
	}
	if reqs[0].Prompt[0] != reqs[1].Prompt[0] || reqs[2].Prompt[0].ID == reqs[0].Prompt[0].ID {
		t.Error("equal texts must share a segment and different ones must not")
	}
}

func TestMooncakeErrors(t *testing.T) {
	ok := `{"timestamp": 0, "input_length": 10, "output_length": 1}` + "\n"
	for _, c := range []struct {
		name, line, want string
	}{
		{"negative input", `{"timestamp": 5, "input_length": -5, "output_length": 1}`,
			`trace.jsonl:2: "input_length": -5: must be an integer in [1, 268435456]`},
		{"zero output", `{"timestamp": 5, "input_length": 5, "output_length": 0}`,
			`trace.jsonl:2: "output_length": 0: must be an integer in [1, 268435456]`},
		{"huge input", `{"timestamp": 5, "input_length": 99999999999999999999, "output_length": 1}`,
			`"input_length": 99999999999999999999: must be an integer in [1, 268435456]`},
		{"fractional length", `{"timestamp": 5, "input_length": 1.5, "output_length": 1}`,
			`trace.jsonl:2: "input_length": 1.5: must be an integer`},
		{"string length", `{"timestamp": 5, "input_length": "10", "output_length": 1}`,
			`trace.jsonl:2: "input_length": must be an integer`},
		{"missing output", `{"timestamp": 5, "input_length": 5}`,
			`trace.jsonl:2: "output_length": missing`},
		{"missing input", `{"timestamp": 5, "output_length": 5}`,
			`trace.jsonl:2: "input_length": missing`},
		{"time goes back", `{"timestamp": -0.5, "input_length": 5, "output_length": 1}`,
			`trace.jsonl:2: "timestamp": -0.5: must be in [0, 1e15] ms`},
		{"too many hash ids", `{"timestamp": 5, "input_length": 600, "output_length": 1, "hash_ids": [1, 2, 3]}`,
			`trace.jsonl:2: "hash_ids": 3 ids: too many for input_length 600: with 512-token blocks the last block would hold -424 tokens; need 1..512 (at most 2 ids)`},
		{"bad hash id", `{"timestamp": 5, "input_length": 6, "output_length": 1, "hash_ids": [1.5]}`,
			`trace.jsonl:2: "hash_ids": must be a list of integers`},
		{"unknown key", `{"timestamp": 5, "input_len": 6, "output_length": 1}`,
			`trace.jsonl:2: "input_len": unknown key; allowed: timestamp, input_length, output_length, hash_ids, text_input, session_id, delay, type, extra`},
		{"duplicate key", `{"timestamp": 5, "input_length": 6, "input_length": 7, "output_length": 1}`,
			`trace.jsonl:2: "input_length": duplicate key`},
		{"messages", `{"timestamp": 5, "messages": [{"role": "user", "content": "hi"}], "output_length": 1}`,
			`trace.jsonl:2: "messages": not supported: BLIS has no tokenizer`},
		{"both inputs", `{"timestamp": 5, "input_length": 6, "text_input": "hello", "output_length": 1}`,
			`trace.jsonl:2: "text_input": give input_length or text_input, not both`},
		{"wrong type", `{"timestamp": 5, "input_length": 6, "output_length": 1, "type": "single_turn"}`,
			`trace.jsonl:2: "type": "single_turn": must be "mooncake_trace"`},
		{"not an object", `[1, 2]`, `trace.jsonl:2: invalid JSON: expected '{' (one JSON object per line) at column 1`},
		{"cut short", `{"timestamp": 5, "input_length": 6`, `trace.jsonl:2: invalid JSON: expected ',' or '}' at end of line`},
		{"trailing text", `{"timestamp": 5, "input_length": 6, "output_length": 1} x`, `trace.jsonl:2: invalid JSON: unexpected text after the object at column 57`},
		{"trailing comma", `{"timestamp": 5, "input_length": 6, "output_length": 1,}`, `trace.jsonl:2: invalid JSON: expected a string at column 56`},
		{"NaN", `{"timestamp": NaN, "input_length": 6, "output_length": 1}`, `trace.jsonl:2: "timestamp": must be a number (ms)`},
		{"no timestamp on a schedule", `{"input_length": 6, "output_length": 1}`,
			`trace.jsonl:2: "timestamp": missing: every request needs a timestamp when the trace is replayed on its schedule`},
		{"negative delay", `{"session_id": "s", "timestamp": 5, "input_length": 6, "output_length": 1, "delay": -1}`,
			`trace.jsonl:2: "delay": -1: must be in [0, 1e+12] ms`},
	} {
		t.Run(c.name, func(t *testing.T) {
			reqs, err := mooncake(t, ok+c.line+"\n"+ok, TraceSpec{})
			wantBadInput(t, err, c.want)
			if len(reqs) != 1 {
				t.Errorf("%d requests before the error, want 1", len(reqs))
			}
		})
	}

	t.Run("time going backwards", func(t *testing.T) {
		_, err := mooncake(t, `{"timestamp": 10, "input_length": 6, "output_length": 1}
{"timestamp": 9, "input_length": 6, "output_length": 1}`, TraceSpec{})
		wantBadInput(t, err, `trace.jsonl:2: "timestamp": 9: goes back in time: a first turn must not come before the previous one (10 ms)`)
	})
	t.Run("timestamp after a paced start", func(t *testing.T) {
		_, err := mooncake(t, `{"input_length": 6, "output_length": 1}
{"timestamp": 9, "input_length": 6, "output_length": 1}`, TraceSpec{})
		wantBadInput(t, err, `trace.jsonl:2: "timestamp": 9: the first record has no timestamp`)
	})
	t.Run("flags", func(t *testing.T) {
		for _, c := range []struct {
			spec TraceSpec
			want string
		}{
			{TraceSpec{FixedScheduleSpeedup: -1}, "--fixed-schedule-speedup -1: must be a finite number > 0"},
			{TraceSpec{FixedScheduleStartOffset: 10, FixedScheduleEndOffset: 5}, "--fixed-schedule-end-offset 5: must be ≥ --fixed-schedule-start-offset (ms)"},
			{TraceSpec{ISLBlockSize: -3}, "--isl-block-size -3"},
			{TraceSpec{RequestRate: -1}, "--request-rate -1"},
		} {
			_, err := NewMooncake(strings.NewReader(ok), "t", c.spec)
			wantBadInput(t, err, c.want)
		}
	})
}

func TestMooncakeLenient(t *testing.T) {
	src, err := NewMooncake(strings.NewReader(`{"timestamp": 1, "input_length": 10, "output_length": 1}
{"timestamp": 1, "input_length": 0, "output_length": 1}
{"timestamp": 0.5, "input_length": 10, "output_length": 1}
{"timestamp": 2, "input_length": 10, "output_length": 1}
`), "t", TraceSpec{Lenient: true})
	reqs := mustDrain(t, src, err)
	if len(reqs) != 2 || src.(*mooncakeSource).Skipped() != 2 {
		t.Errorf("%d requests, %d skipped; want 2 and 2", len(reqs), src.(*mooncakeSource).Skipped())
	}
	// Syntax errors still fail.
	_, err = mooncake(t, "{\n", TraceSpec{Lenient: true})
	wantBadInput(t, err, "invalid JSON")
}

func TestMooncakeNumPromptsCaps(t *testing.T) {
	reqs := mustMooncake(t, strings.Repeat(`{"timestamp": 0, "input_length": 10, "output_length": 1}`+"\n", 5), TraceSpec{NumPrompts: 3})
	if len(reqs) != 3 {
		t.Errorf("%d requests, want 3", len(reqs))
	}
}

// checkMooncakeFile replays a real Mooncake trace and checks what the file
// says: one request per line, arrivals equal to the timestamps, lengths
// as written, and the prefix sharing the hash ids describe.
func checkMooncakeFile(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Skipf("%s: %v", path, err)
	}
	defer f.Close()
	lines := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		lines++
	}
	src, err := Open(TraceSpec{DatasetName: DatasetMooncake, DatasetPath: path})
	reqs := mustDrain(t, src, err)
	if len(reqs) != lines {
		t.Fatalf("%d requests from %d lines", len(reqs), lines)
	}
	firstBlock := map[uint64]int{}
	for i, r := range reqs {
		if i > 0 && r.Arrival < reqs[i-1].Arrival {
			t.Fatalf("request %d goes back in time", i)
		}
		nb := (r.InputLen + 511) / 512
		if len(r.Prompt) != nb {
			t.Fatalf("request %d: %d segments for %d tokens, want one per 512-token block", i, len(r.Prompt), r.InputLen)
		}
		firstBlock[r.Prompt[0].ID]++
	}
	shared := 0
	for _, n := range firstBlock {
		if n > 1 {
			shared += n
		}
	}
	if shared == 0 {
		t.Error("no two requests share a first block")
	}
	t.Logf("%s: %d requests over %v; %d start with a block another request starts with", path, len(reqs), reqs[len(reqs)-1].Arrival, shared)
}

func TestMooncakeSamples(t *testing.T) {
	for _, p := range []string{"testdata/mooncake_conversation_head200.jsonl", "testdata/mooncake_synthetic_head200.jsonl"} {
		t.Run(p, func(t *testing.T) { checkMooncakeFile(t, p) })
	}
	// The first two lines of the conversation trace, by hand: both start
	// with hash id 0 (a shared system prompt), at time 0.
	src, err := Open(TraceSpec{DatasetName: DatasetMooncake, DatasetPath: "testdata/mooncake_conversation_head200.jsonl", NumPrompts: 2})
	reqs := mustDrain(t, src, err)
	if reqs[0].InputLen != 6758 || reqs[0].OutputLen != 500 || len(reqs[0].Prompt) != 14 || reqs[0].Prompt[13].Len != 6758-13*512 {
		t.Errorf("line 1: %+v", reqs[0])
	}
	if reqs[0].Prompt[0] != reqs[1].Prompt[0] || reqs[0].Prompt[1] == reqs[1].Prompt[1] {
		t.Error("lines 1 and 2 share hash id 0 only")
	}
}

func TestMooncakeRealTraces(t *testing.T) {
	for _, p := range []string{"testdata/mooncake_conversation_trace.jsonl", "testdata/mooncake_synthetic_head200.jsonl"} {
		t.Run(p, func(t *testing.T) { checkMooncakeFile(t, p) })
	}
}

// mooncakeGen writes synthetic mooncake lines on the fly: a stream of any
// length without holding it in memory.
type mooncakeGen struct {
	n, i int
	buf  []byte
	off  int
}

func (g *mooncakeGen) Read(p []byte) (int, error) {
	for g.off >= len(g.buf) {
		if g.i >= g.n {
			return 0, io.EOF
		}
		// strconv, not fmt: the generator must not allocate either.
		k := g.i % 13
		b := append(g.buf[:0], `{"timestamp": `...)
		b = strconv.AppendInt(b, int64(g.i*3), 10)
		b = append(b, `, "input_length": `...)
		b = strconv.AppendInt(b, int64(512*k+100), 10)
		b = append(b, `, "output_length": `...)
		b = strconv.AppendInt(b, int64(10+k), 10)
		b = append(b, `, "hash_ids": [`...)
		for j := 0; j <= k; j++ {
			if j > 0 {
				b = append(b, ", "...)
			}
			b = strconv.AppendInt(b, int64((g.i/7)*20+j), 10)
		}
		g.buf = append(b, "]}\n"...)
		g.off = 0
		g.i++
	}
	n := copy(p, g.buf[g.off:])
	g.off += n
	return n, nil
}

func TestMooncakeNextAllocs(t *testing.T) {
	src, err := NewMooncake(&mooncakeGen{n: 1 << 30}, "gen", TraceSpec{})
	if err != nil {
		t.Fatal(err)
	}
	var r Request
	for range 100 { // warm up the buffers
		src.Next(&r)
	}
	if allocs := testing.AllocsPerRun(1000, func() { src.Next(&r) }); allocs != 0 {
		t.Errorf("%.2f allocations per line, want 0", allocs)
	}
}

// BenchmarkMooncake1M reads 1,000,000 synthetic mooncake lines (generated
// as they are read) and reports time, bytes and allocations per line, and
// the heap in use at the end: bounded, whatever the line count.
func BenchmarkMooncake1M(b *testing.B) {
	const lines = 1_000_000
	var before, after runtime.MemStats
	for b.Loop() {
		src, err := NewMooncake(&mooncakeGen{n: lines}, "gen", TraceSpec{})
		if err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&before)
		var r Request
		n := 0
		for src.Next(&r) {
			n++
		}
		runtime.ReadMemStats(&after)
		if err := Err(src); err != nil || n != lines {
			b.Fatalf("%d lines, %v", n, err)
		}
	}
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/lines, "allocs/line")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/lines, "B/line")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/lines, "ns/line")
	b.ReportMetric(float64(after.HeapInuse)/(1<<20), "heap-MiB")
}
