package workload

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"time"

	"blis/sim"
)

// Dataset names accepted by Open (TraceSpec.DatasetName, or
// CustomDatasetType for the aiperf spelling).
const (
	DatasetRandom           = "random"            // vllm bench: NewRandom
	DatasetShareGPT         = "sharegpt"          // vllm bench: ShareGPT JSON
	DatasetPrefixRepetition = "prefix_repetition" // vllm bench: PrefixRepetitionRandomDataset
	DatasetSharedPrefix     = "shared_prefix"     // inference-perf: shared_prefix data + load stages
	DatasetMooncake         = "mooncake_trace"    // aiperf: --custom-dataset-type mooncake_trace
	DatasetAzure            = "azure"             // Azure LLM inference trace CSV
	DatasetSessions         = "sessions"          // BLIS's multi-turn / agentic session JSONL (README.md)
	DatasetAgentic          = "agentic"           // BLIS's synthetic agentic-coding sessions (AgenticSpec)
	DatasetLMBench          = "lmbench"           // LMBenchmark's per-request CSV, replayed (lmbench.go)
)

// DatasetNames lists the names Open accepts, for help text. Each call
// returns a fresh slice.
func DatasetNames() []string {
	return []string{DatasetRandom, DatasetShareGPT, DatasetPrefixRepetition, DatasetSharedPrefix,
		DatasetMooncake, DatasetAzure, DatasetSessions, DatasetAgentic, DatasetLMBench}
}

// DefaultISLBlockSize is aiperf's --isl-block-size default: tokens per
// mooncake hash id.
const DefaultISLBlockSize = 512

// TraceSpec selects and configures a workload source by name, with the flag
// names of vllm bench serve and aiperf. The zero value plus a DatasetName
// (and a path for file formats) is valid: zero means the client's default
// throughout.
type TraceSpec struct {
	// DatasetName is --dataset-name (vllm bench): one of DatasetNames().
	// Empty means CustomDatasetType, or "random" when that is empty too.
	DatasetName string
	// DatasetPath is --dataset-path (vllm bench); InputFile is --input-file
	// (aiperf). Give either; both must agree when both are set.
	DatasetPath string
	InputFile   string
	// CustomDatasetType is aiperf's --custom-dataset-type
	// (mooncake_trace); it may stand in for DatasetName.
	CustomDatasetType string

	// NumPrompts is --num-prompts. For sharegpt and prefix_repetition it is
	// the number of requests (0: vLLM's default, 1000); for shared_prefix
	// without Stages, the number of requests (0: one per prompt); for file
	// traces, an upper bound (0: the whole file, as aiperf replays a
	// mooncake trace).
	NumPrompts int
	// RequestRate is --request-rate in requests per second; 0 or +Inf sends
	// every request at time 0 (the concurrency cap then paces them). For
	// session formats it paces session starts. Ignored when a trace is
	// replayed on its own timestamps.
	RequestRate float64
	// Burstiness is --burstiness: gamma shape of the gaps (0 means 1:
	// Poisson).
	Burstiness float64
	// Seed is --seed: synthetic lengths, arrivals, shuffles and the
	// identities of unique prompt segments.
	Seed int64

	// FixedSchedule is aiperf's --fixed-schedule: send each request (each
	// session's first turn) at its trace timestamp. As in aiperf, a trace
	// whose first record has a timestamp is replayed on its schedule even
	// without the flag; with the flag a missing timestamp is an error.
	FixedSchedule bool
	// FixedScheduleAutoOffset is --fixed-schedule-auto-offset: timestamps
	// count from the first one rather than from 0. The Azure CSV, whose
	// timestamps are wall-clock times, always counts from its first row.
	FixedScheduleAutoOffset bool
	// FixedScheduleStartOffset and FixedScheduleEndOffset are
	// --fixed-schedule-start-offset / --fixed-schedule-end-offset in ms:
	// keep only records whose timestamp lies in [start, end], and count time
	// from start. 0 means unset (an end offset of exactly 0 cannot be
	// asked for).
	FixedScheduleStartOffset int64
	FixedScheduleEndOffset   int64
	// FixedScheduleSpeedup is --fixed-schedule-speedup: divide timestamp
	// offsets and per-turn delays by it (0 means 1).
	FixedScheduleSpeedup float64
	// ISLBlockSize is aiperf's --isl-block-size: tokens per mooncake hash id
	// (0 means 512).
	ISLBlockSize int
	// Lenient makes mooncake_trace and azure skip records with impossible
	// values (lengths < 1, time going backwards) instead of failing; syntax
	// errors, unknown keys and missing fields still fail. The source's
	// Skipped method (and TraceStats.Skipped) counts them.
	Lenient bool

	// Random configures "random": NewRandom(Random, Seed). It carries its
	// own NumPrompts, RequestRate and Burstiness; the TraceSpec fields of
	// those names are not used for it.
	Random RandomSpec
	// ShareGPTOutputLen is --sharegpt-output-len: every request's output
	// length (0: the length of the dataset's reply).
	ShareGPTOutputLen int
	// DisableShuffle is --disable-shuffle: take ShareGPT conversations in
	// file order instead of vLLM's seeded shuffle.
	DisableShuffle bool
	// PrefixRepetition configures "prefix_repetition".
	PrefixRepetition PrefixRepetitionSpec
	// SharedPrefix configures "shared_prefix".
	SharedPrefix SharedPrefixSpec
	// Load is inference-perf's staged load (--stages, --load-type,
	// --load-interval). With stages, the random, sharegpt, prefix_repetition
	// and shared_prefix datasets send the stages' requests at the stages'
	// release times instead of --num-prompts on --request-rate; the other
	// formats carry their own schedule and refuse stages.
	Load LoadSpec
	// Agentic configures "agentic".
	Agentic AgenticSpec
}

// Open returns the source named by spec. File formats are read lazily, one
// record at a time, except sharegpt (a JSON array that vLLM shuffles: its
// lengths are read at Open, about 20 bytes per usable conversation) and
// lmbench (one run's CSV, read whole at Open and sorted by launch time). Sources that
// read a file implement StreamSource: check Err after Next returns false,
// and Close when stopping early.
//
// Errors are *InputError (a flag) or *TraceError (a line of a file); both
// match ErrBadInput. A file that cannot be opened is a *TraceError too.
func Open(spec TraceSpec) (Source, error) {
	name, path, err := spec.resolve()
	if err != nil {
		return nil, err
	}
	needPath := func() error {
		if path == "" {
			return badInput("--dataset-path", `""`, "a file is needed for --dataset-name "+name)
		}
		return nil
	}
	noPath := func() error {
		if path != "" {
			return badInput("--dataset-path", quoteIfOdd(path), "--dataset-name "+name+" reads no file")
		}
		return nil
	}
	if len(spec.Load.Stages) > 0 {
		switch name {
		case DatasetRandom, DatasetShareGPT, DatasetPrefixRepetition:
			return openStaged(spec, name)
		case DatasetSharedPrefix:
		default:
			return nil, badInput("--stages", strconv.Itoa(len(spec.Load.Stages))+" stages", "--dataset-name "+name+
				" has its own schedule; stages apply to random, sharegpt, prefix_repetition and shared_prefix")
		}
	}
	switch name {
	case DatasetRandom:
		if err := noPath(); err != nil {
			return nil, err
		}
		return NewRandom(spec.Random, spec.Seed)
	case DatasetPrefixRepetition:
		if err := noPath(); err != nil {
			return nil, err
		}
		return NewPrefixRepetition(spec)
	case DatasetSharedPrefix:
		if err := noPath(); err != nil {
			return nil, err
		}
		return NewSharedPrefix(spec)
	case DatasetAgentic:
		if err := noPath(); err != nil {
			return nil, err
		}
		return NewAgentic(spec)
	}
	if err := needPath(); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, &TraceError{File: path, Allowed: "cannot open: " + strings.TrimPrefix(err.Error(), "open "+path+": ")}
	}
	if name == DatasetShareGPT {
		defer f.Close() // read in full by the constructor
		return NewShareGPT(f, path, spec)
	}
	if name == DatasetLMBench {
		defer f.Close() // read in full by the constructor
		src, err := newLMBench(f, path, spec)
		if err != nil {
			return nil, err // a nil Source, not a typed nil
		}
		return src, nil
	}
	var src Source
	switch name {
	case DatasetMooncake:
		src, err = newMooncake(f, f, path, spec)
	case DatasetAzure:
		src, err = newAzure(f, f, path, spec)
	case DatasetSessions:
		src, err = newSessions(f, f, path, spec)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return src, nil
}

// openStaged opens a dataset of standalone requests for a staged load: the
// dataset is asked for exactly the stages' requests, all at once, and
// staged re-times them. --num-prompts and a finite --request-rate belong to
// vllm bench's process and conflict with stages.
func openStaged(spec TraceSpec, name string) (Source, error) {
	if err := spec.Load.Validate(); err != nil {
		return nil, err
	}
	n := spec.Load.Requests()
	if n == 0 {
		return nil, badInput("--stages", strconv.Itoa(len(spec.Load.Stages))+" stages", "send no request: each stage sends ⌊rate × duration⌋")
	}
	num, rate := spec.NumPrompts, spec.RequestRate
	if name == DatasetRandom {
		num, rate = spec.Random.NumPrompts, spec.Random.RequestRate
	}
	if num != 0 && int64(num) != n {
		return nil, badInput("--num-prompts", strconv.Itoa(num), fmt.Sprintf("conflicts with --stages, which send %d requests; leave it out", n))
	}
	if rate != 0 && !math.IsInf(rate, 1) {
		return nil, badInput("--request-rate", fmtFloat(rate), "conflicts with --stages, which set the rates; leave it out")
	}
	spec.NumPrompts, spec.RequestRate = int(n), math.Inf(1)
	spec.Random.NumPrompts, spec.Random.RequestRate = int(n), math.Inf(1)
	load := spec.Load
	spec.Load = LoadSpec{}
	src, err := Open(spec)
	if err != nil {
		return nil, err
	}
	return &staged{src: src, clock: newStageClock(load, spec.Seed, "workload.stage")}, nil
}

func (spec TraceSpec) resolve() (name, path string, err error) {
	name = spec.DatasetName
	flag := "--dataset-name"
	if c := spec.CustomDatasetType; c != "" {
		flag = "--custom-dataset-type"
		if name != "" && name != c {
			return "", "", badInput("--custom-dataset-type", quoteIfOdd(c),
				"conflicts with --dataset-name "+quoteIfOdd(name)+"; give one of them")
		}
		name = c
	}
	if name == "" {
		name = DatasetRandom
	}
	known := false
	for _, n := range DatasetNames() {
		known = known || n == name
	}
	if !known {
		return "", "", badInput(flag, quoteIfOdd(name), "must be one of "+strings.Join(DatasetNames(), ", "))
	}
	path = spec.DatasetPath
	if spec.InputFile != "" {
		if path != "" && path != spec.InputFile {
			return "", "", badInput("--input-file", quoteIfOdd(spec.InputFile),
				"conflicts with --dataset-path "+quoteIfOdd(path)+"; give one of them")
		}
		path = spec.InputFile
	}
	return name, path, nil
}

// TraceStats summarises a source read to its end by Scan.
type TraceStats struct {
	Requests     int64
	Sessions     int64         // distinct sessions (SessionID ≠ 0)
	Branches     int64         // sessions that are branches of another
	InputTokens  int64         // Σ InputLen (new tokens only for PrevContext turns)
	OutputTokens int64         // Σ OutputLen
	LastArrival  time.Duration // latest Arrival
	Skipped      int64         // records skipped under Lenient
}

// Scan reads the source spec names to its end and returns what it holds,
// or the first error: a cheap check before a long simulation (one pass, the
// source's own memory bound).
func Scan(spec TraceSpec) (TraceStats, error) {
	var st TraceStats
	src, err := Open(spec)
	if err != nil {
		return st, err
	}
	defer Close(src)
	var r Request
	for src.Next(&r) {
		st.Requests++
		st.InputTokens += int64(r.InputLen)
		st.OutputTokens += int64(r.OutputLen)
		st.LastArrival = max(st.LastArrival, r.Arrival)
		if r.SessionID != 0 && r.Turn == 0 {
			st.Sessions++
			if r.ParentSession != 0 {
				st.Branches++
			}
		}
	}
	if s, ok := src.(interface{ Skipped() int64 }); ok {
		st.Skipped = s.Skipped()
	}
	return st, Err(src)
}

// closer runs an io.Closer once.
type closer struct{ c io.Closer }

func (c *closer) close() error {
	if c.c == nil {
		return nil
	}
	err := c.c.Close()
	c.c = nil
	return err
}

// ---- arrivals ----------------------------------------------------------

// arrivals is a client's request process over the requests (or session
// starts) a source emits.
type arrivals struct {
	timed    bool
	rescale  bool // vllm bench serve (current): last arrival at n/rate
	shape    float64
	scale    float64
	constGap float64
	rng      *rand.Rand
	cum      float64
	total    float64
	target   float64
}

// checkRate validates --request-rate and --burstiness as NewRandom does and
// returns them with zero values resolved (rate 0: inf; burstiness 0: 1).
func checkRate(rate, burst float64) (float64, float64, error) {
	if rate == 0 {
		rate = math.Inf(1)
	}
	if !(rate > 0) {
		return 0, 0, badInput("--request-rate", fmtFloat(rate), "must be a number > 0 (requests per second), or inf")
	}
	if burst == 0 {
		burst = 1
	}
	if !(burst >= minBurstiness) {
		return 0, 0, badInput("--burstiness", fmtFloat(burst), fmt.Sprintf("must be ≥ %g, or inf", minBurstiness))
	}
	return rate, burst, nil
}

// newArrivals returns a process at rate with gamma(burst) gaps. With n > 0
// it is vllm bench serve's current get_request: n gaps, cumulative, rescaled
// so the last request goes out at n/rate. With n == 0 (a stream of unknown
// length) the first request goes at 0 and each later one a fresh gap after
// the previous, unscaled: aiperf's --request-rate process (and the old
// benchmark_serving.py).
func newArrivals(rate, burst float64, n int64, seed int64, stream string) (*arrivals, error) {
	rate, burst, err := checkRate(rate, burst)
	if err != nil {
		return nil, err
	}
	a := &arrivals{}
	if math.IsInf(rate, 1) {
		return a, nil
	}
	if n > 0 {
		if span := float64(n) / rate; span > maxSpanSeconds {
			return nil, badInput("--request-rate", fmtFloat(rate), fmt.Sprintf(
				"too low: %d requests would span %s s", n, fmtFloat(span)))
		}
	}
	a.timed = true
	a.shape, a.scale, a.constGap = burst, 1/(rate*burst), 1/rate
	if n > 0 {
		a.rescale = true
		pre := sim.RNG(seed, stream)
		for range n {
			a.total += a.gap(pre)
		}
		a.target = float64(n) / rate
	}
	a.rng = sim.RNG(seed, stream)
	return a, nil
}

func (a *arrivals) gap(r *rand.Rand) float64 {
	if math.IsInf(a.shape, 1) {
		return a.constGap
	}
	return gammaVariate(r, a.shape) * a.scale
}

// next returns the next release time.
func (a *arrivals) next() time.Duration {
	if !a.timed {
		return 0
	}
	if !a.rescale {
		at := a.cum
		a.cum += a.gap(a.rng)
		return secondsToDuration(at)
	}
	a.cum += a.gap(a.rng)
	if a.total > 0 {
		return secondsToDuration(a.target * (a.cum / a.total))
	}
	return secondsToDuration(a.cum)
}

// ---- fixed schedules -----------------------------------------------------

// maxScheduleMs bounds a timestamp's distance from the schedule's zero so
// that it fits a time.Duration (≈ 292 years) with room to spare.
const maxScheduleMs = 1e12

// schedule turns trace timestamps (ms) into arrivals the way aiperf's
// FixedScheduleStrategy does (aiperf timing/strategies/fixed_schedule.py):
// offset = (timestamp − zero) / speedup, where zero is 0, the start offset,
// or the first timestamp with auto-offset; delays are divided by the
// speedup too.
type schedule struct {
	auto       bool
	zero       float64
	zeroSet    bool
	start, end float64 // window, ms; end 0: none
	speedup    float64
}

func newSchedule(spec TraceSpec) (schedule, error) {
	sp := spec.FixedScheduleSpeedup
	if sp == 0 {
		sp = 1
	}
	if !(sp > 0) || math.IsInf(sp, 1) {
		return schedule{}, badInput("--fixed-schedule-speedup", fmtFloat(sp), "must be a finite number > 0")
	}
	if spec.FixedScheduleStartOffset < 0 {
		return schedule{}, badInput("--fixed-schedule-start-offset", strconv.FormatInt(spec.FixedScheduleStartOffset, 10), "must be ≥ 0 (ms)")
	}
	if spec.FixedScheduleEndOffset < 0 || spec.FixedScheduleEndOffset != 0 && spec.FixedScheduleEndOffset < spec.FixedScheduleStartOffset {
		return schedule{}, badInput("--fixed-schedule-end-offset", strconv.FormatInt(spec.FixedScheduleEndOffset, 10),
			"must be ≥ --fixed-schedule-start-offset (ms)")
	}
	s := schedule{
		auto:    spec.FixedScheduleAutoOffset,
		start:   float64(spec.FixedScheduleStartOffset),
		end:     float64(spec.FixedScheduleEndOffset),
		speedup: sp,
	}
	if !s.auto && spec.FixedScheduleStartOffset > 0 {
		s.zero, s.zeroSet = s.start, true
	}
	if !s.auto && !s.zeroSet {
		s.zeroSet = true // zero = 0
	}
	return s, nil
}

func (s *schedule) inWindow(ms float64) bool {
	return ms >= s.start && (s.end == 0 || ms <= s.end)
}

// at converts the timestamp of a record that is kept; ok is false when it
// lies too far from the zero to represent.
func (s *schedule) at(ms float64) (time.Duration, bool) {
	if !s.zeroSet {
		s.zero, s.zeroSet = ms, true
	}
	off := (ms - s.zero) / s.speedup
	if off < 0 {
		off = 0 // before the zero: at once (aiperf schedules it in the past)
	}
	if off > maxScheduleMs {
		return 0, false
	}
	return msToDuration(off), true
}

// delay converts a per-turn delay in ms.
func (s *schedule) delay(ms float64) time.Duration { return msToDuration(ms / s.speedup) }

func msToDuration(ms float64) time.Duration {
	return time.Duration(math.Round(ms * 1e6))
}

// checkTokens validates a token count read from a trace.
func checkTokens(v int64, lo int64) bool { return v >= lo && v <= MaxTokens }

// tokenRange is the allowed-range text matching checkTokens.
func tokenRange(lo int64) string {
	return fmt.Sprintf("must be an integer in [%d, %d]", lo, MaxTokens)
}
