package engine

import (
	"math/rand/v2"
	"slices"

	"blis/workload"
	"strings"
	"testing"
	"time"

	"blis/kernel"
	"blis/kvtier"
)

// arrival is a request reaching the engine at a time.
type arrival struct {
	at time.Duration
	r  *Request
}

// drive runs the engine as the cluster loop does, with a fixed step price
// (1 ms plus 10 µs per prefill token, 20 µs per decode row) and the
// connector's in-step transfer time, until every request finished. It
// returns the mean TTFT.
func drive(t testing.TB, e *Engine, as []arrival) time.Duration {
	t.Helper()
	return driveFrom(t, e, as, 0)
}

// driveFrom is drive from time start.
func driveFrom(t testing.TB, e *Engine, as []arrival, start time.Duration) time.Duration {
	t.Helper()
	now, end := start, time.Duration(0)
	next, steps := 0, 0
	busy := false
	var b kernel.Batch
	for {
		for next < len(as) && as[next].at <= now {
			if !e.Add(as[next].r, now) {
				t.Fatalf("request %d refused: %s", as[next].r.ID, as[next].r.RejectReason)
			}
			next++
		}
		e.Wake(now)
		if !busy && e.HasWork() {
			if e.Schedule(now, &b) > 0 {
				busy = true
				end = now + time.Millisecond + time.Duration(b.PrefillTokens)*10*time.Microsecond +
					time.Duration(b.NumDecode)*20*time.Microsecond + e.StepTransferTime()
			}
		}
		t0 := time.Duration(1<<62 - 1)
		if busy {
			t0 = end
		}
		if next < len(as) {
			t0 = min(t0, as[next].at)
		}
		if w := e.NextWake(); w < t0 {
			t0 = max(w, now)
		}
		if t0 == 1<<62-1 {
			break
		}
		if t0 == now && !(busy && end == now) && e.NextWake() > now {
			t.Fatalf("no progress at %v", now)
		}
		now = t0
		if busy && now == end {
			e.Complete(now)
			busy = false
			e.Wake(now)
		}
		if steps++; steps > 1_000_000 {
			t.Fatal("runaway")
		}
	}
	if len(as) == 0 {
		return 0
	}
	var sum time.Duration
	for _, a := range as {
		if a.r.Status != StatusFinished {
			t.Fatalf("request %d ended %v", a.r.ID, a.r.Status)
		}
		sum += a.r.FirstToken - a.r.Arrived
	}
	if e.HeldBlocks() != 0 {
		t.Fatalf("%d blocks still held after the run", e.HeldBlocks())
	}
	return sum / time.Duration(len(as))
}

// offCfg is a native connector with 4-block chunks (block 16: 64 tokens),
// 2 MiB blocks (Llama-3.1-8B's 16 tokens at 128 KiB) and a 25 GB/s link.
func offCfg(chunks int) *OffloadConfig {
	return &OffloadConfig{Connector: OffloadNative, BlocksPerChunk: 4, CPUChunks: chunks,
		BlockBytes: 2 << 20, LinkBW: 25e9, LinkLatency: 10 * time.Microsecond}
}

// docs is a working set of n 1024-token documents, each asked twice
// (round-robin, one every 20 ms), each time with its own 64-token question.
func docs(n int) []arrival {
	var as []arrival
	id := int64(0)
	for round := 0; round < 2; round++ {
		for d := 0; d < n; d++ {
			id++
			as = append(as, arrival{at: time.Duration(id) * 20 * time.Millisecond,
				r: req(id, 4, seg(uint64(100+d), 1024), seg(uint64(10_000+id), 64))})
		}
	}
	return as
}

func TestOffloadTTFTBetweenAllHitAndAllMiss(t *testing.T) {
	const n = 8 // 8 documents of 64 blocks: 512 blocks of working set
	run := func(blocks int, off *OffloadConfig) (time.Duration, Stats) {
		c := cfg(2048, 16, blocks, 16)
		c.Offload = off
		e, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		ttft := drive(t, e, docs(n))
		return ttft, e.Stats()
	}
	allHit, _ := run(4096, nil) // GPU holds everything
	allMiss, miss := run(200, nil)
	offl, st := run(200, offCfg(256)) // the CPU tier holds everything
	t.Logf("mean TTFT: all-hit %v, offload %v, all-miss %v; stats %+v", allHit, offl, allMiss, st)
	if !(allHit < offl && offl < allMiss) {
		t.Errorf("TTFT offload %v not between all-hit %v and all-miss %v", offl, allHit, allMiss)
	}
	if miss.PrefixHits >= st.PrefixHits+st.ExternalPrefixHits {
		t.Errorf("offload hit %d+%d tokens, no offload %d", st.PrefixHits, st.ExternalPrefixHits, miss.PrefixHits)
	}
	// The second round's 8 requests each load their document's 16 chunks.
	if st.OffloadLoads != n || st.OffloadTierHits[0] != n*16 || st.ExternalPrefixHits != n*1024 {
		t.Errorf("loads %d, CPU chunk hits %d, external hits %d: want %d, %d, %d",
			st.OffloadLoads, st.OffloadTierHits[0], st.ExternalPrefixHits, n, n*16, n*1024)
	}
	if st.OffloadLoadedBytes != n*16*4*(2<<20) || st.OffloadStoredBytes < st.OffloadLoadedBytes {
		t.Errorf("loaded %d bytes, stored %d", st.OffloadLoadedBytes, st.OffloadStoredBytes)
	}
}

// reload stores a 1024-token document, pushes it out of the GPU, asks for
// it again and returns the load time and stats.
func reload(t *testing.T, off *OffloadConfig, blocks int) (time.Duration, Stats) {
	t.Helper()
	c := cfg(2048, 16, blocks, 16)
	c.Offload = off
	e, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	drive(t, e, rereadArrivals())
	return e.Stats().OffloadLoadTime, e.Stats()
}

// rereadArrivals is three 1024-token documents 100 ms apart, then, at
// 300 ms, request 4 asking about the first (its 1024 tokens and 16 more):
// with a pool too small to keep it, the first document comes back from
// the offload tiers.
func rereadArrivals() []arrival {
	return []arrival{
		{0, req(1, 1, seg(1, 1024))},
		{100 * time.Millisecond, req(2, 1, seg(2, 1024))},
		{200 * time.Millisecond, req(3, 1, seg(3, 1024))},
		{300 * time.Millisecond, req(4, 1, seg(1, 1024), seg(4, 16))},
	}
}

func TestOffloadLoadTimeScalesWithLinkBandwidth(t *testing.T) {
	o := offCfg(64)
	o.LinkLatency = 0
	full, st := reload(t, o, 140)
	if st.OffloadLoads != 1 {
		t.Fatalf("%d loads, want 1 (stats %+v)", st.OffloadLoads, st)
	}
	o = offCfg(64)
	o.LinkLatency, o.LinkBW = 0, 12.5e9
	half, _ := reload(t, o, 140)
	// The chunks the GPU lost (most of 16 chunks × 4 blocks × 2 MiB).
	if want := xferTime(st.OffloadLoadedBytes, 25e9); full != want || st.OffloadLoadedBytes < 8*4*(2<<20) {
		t.Errorf("load at 25 GB/s took %v, want %v", full, want)
	}
	if r := float64(half) / float64(full); r < 1.999 || r > 2.001 {
		t.Errorf("half the bandwidth: load %v vs %v (×%.3f), want ×2", half, full, r)
	}
}

func TestOffloadChunkGranularity(t *testing.T) {
	tests := []struct {
		name      string
		perChunk  int
		wantLoads int64
		wantHit   int64
	}{
		{"4 blocks per chunk: a 3-block shared prefix loads nothing", 4, 0, 0},
		{"1 block per chunk: the 3 blocks load", 1, 1, 48},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cfg(2048, 16, 64, 16) // request 2 takes all 63 usable blocks
			c.Offload = offCfg(256)
			c.Offload.BlocksPerChunk = tt.perChunk
			e, err := New(c)
			if err != nil {
				t.Fatal(err)
			}
			as := []arrival{
				{0, req(1, 1, seg(1, 48), seg(2, 600))},
				{100 * time.Millisecond, req(2, 1, seg(3, 1000))}, // pushes request 1 out of the GPU
				{200 * time.Millisecond, req(3, 1, seg(1, 48), seg(4, 600))},
			}
			drive(t, e, as)
			st := e.Stats()
			if st.OffloadLoads != tt.wantLoads || st.ExternalPrefixHits != tt.wantHit {
				t.Errorf("loads %d, external hit tokens %d; want %d, %d", st.OffloadLoads, st.ExternalPrefixHits, tt.wantLoads, tt.wantHit)
			}
			if as[2].r.CachedTokens != int(tt.wantHit) {
				t.Errorf("request 3 cached %d tokens, want %d", as[2].r.CachedTokens, tt.wantHit)
			}
		})
	}
}

func TestOffloadDelaysFreeUntilStored(t *testing.T) {
	c := cfg(2048, 16, 200, 16)
	c.Offload = offCfg(256)
	c.Offload.LinkBW = 1e9 // 64 blocks of 2 MiB: 134 ms
	e, _ := New(c)
	r := req(1, 1, seg(1, 1024))
	e.Add(r, 0)
	var b kernel.Batch
	e.Schedule(0, &b)
	e.Complete(time.Millisecond) // prefilled and finished: its one token
	e.Wake(time.Millisecond)     // the store starts
	if r.Status != StatusFinished || e.HeldBlocks() != 64 {
		t.Fatalf("status %v, %d blocks held; want finished holding 64 while stored", r.Status, e.HeldBlocks())
	}
	w := e.NextWake()
	if want := time.Millisecond + xferTime(16*4*(2<<20), 1e9) + 10*time.Microsecond; w != want {
		t.Fatalf("NextWake %v, want %v", w, want)
	}
	e.Wake(w - 1)
	if e.HeldBlocks() != 64 {
		t.Fatalf("freed early")
	}
	e.Wake(w)
	if e.HeldBlocks() != 0 || e.NextWake() != never {
		t.Fatalf("after the store: %d held, next wake %v", e.HeldBlocks(), e.NextWake())
	}
	if !e.CPUTier().(*kvtier.Cache).Ready(r.hashes[63]) {
		t.Error("the last chunk is not readable after its store")
	}
}

func TestOffloadAbortWhileLoading(t *testing.T) {
	c := cfg(2048, 16, 140, 16)
	c.Offload = offCfg(64)
	c.Offload.LinkBW = 1e9
	e, _ := New(c)
	as := []arrival{
		{0, req(1, 1, seg(1, 1024))},
		{time.Second, req(2, 1, seg(2, 1024))},
		{2 * time.Second, req(3, 1, seg(3, 1024))},
	}
	drive(t, e, as)
	r := req(4, 1, seg(1, 1024), seg(4, 16))
	now := 3 * time.Second
	e.Add(r, now)
	var b kernel.Batch
	if e.Schedule(now, &b) != 0 || r.Status != StatusWaitingForRemoteKVs || e.Waiting() != 1 {
		t.Fatalf("want r loading and nothing scheduled: status %v waiting %d", r.Status, e.Waiting())
	}
	if !e.Abort(r) || r.Status != StatusAborted {
		t.Fatal("abort of a loading request did not complete at once")
	}
	e.Wake(e.NextWake())
	if e.HeldBlocks() != 0 || e.Waiting() != 0 || e.HasWork() || e.NextWake() != never {
		t.Fatalf("after the abandoned load: held %d waiting %d", e.HeldBlocks(), e.Waiting())
	}
	if e.CPUTier().(*kvtier.Cache).Pinned(r.hashes[3]) {
		t.Error("the abandoned load left its chunks pinned")
	}
}

func TestOffloadLMCacheLoadsInTheStep(t *testing.T) {
	o := offCfg(64)
	o.Connector, o.BlocksPerChunk = OffloadLMCache, 16 // chunk_size 256
	_, st := reload(t, o, 140)
	// Request 4's prompt is 1040 tokens: chunks of 256 below token 1039,
	// 4 of them, are loaded in its first step.
	if st.OffloadLoads != 1 || st.ExternalPrefixHits+st.PrefixHits != 1024 || st.ExternalPrefixHits < 512 || st.OffloadLoadTime != 0 {
		t.Errorf("loads %d, hit %d+%d (GPU), async load time %v; want 1, 1024 in all, 0", st.OffloadLoads, st.ExternalPrefixHits, st.PrefixHits, st.OffloadLoadTime)
	}
	c := cfg(2048, 16, 140, 16)
	c.Offload = o
	e, _ := New(c)
	r := req(1, 1, seg(1, 600))
	e.Add(r, 0)
	var b kernel.Batch
	e.Schedule(0, &b)
	// 600 prompt tokens: 2 chunks of 256 saved in the step.
	if want := xferTime(2*16*(2<<20), 25e9) + 10*time.Microsecond; e.StepTransferTime() != want {
		t.Errorf("StepTransferTime %v, want %v", e.StepTransferTime(), want)
	}
}

func TestOffloadSecondaryTier(t *testing.T) {
	o := offCfg(16) // the CPU tier holds one document
	o.Secondary = []OffloadTier{{Name: "fs", Chunks: 1024, ReadBW: 5e9, WriteBW: 2e9, Latency: 100 * time.Microsecond}}
	_, st := reload(t, o, 140)
	if st.OffloadLoads != 1 || st.OffloadTierHits[1] == 0 || st.ExternalPrefixHits+st.PrefixHits != 1024 {
		t.Errorf("loads %d, secondary chunk hits %d, external hits %d", st.OffloadLoads, st.OffloadTierHits[1], st.ExternalPrefixHits)
	}
	cpuOnly, _ := reload(t, offCfg(64), 140)
	withFS, _ := reload(t, o, 140)
	if withFS <= cpuOnly {
		t.Errorf("a load through the filesystem tier (%v) is not slower than from CPU (%v)", withFS, cpuOnly)
	}
}

func TestOffloadSharedTier(t *testing.T) {
	shared, _ := kvtier.New(256, kvtier.LRU)
	mk := func() *Engine {
		c := cfg(2048, 16, 140, 16)
		c.Offload = offCfg(0)
		c.Offload.CPU = shared
		e, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	a, b := mk(), mk()
	drive(t, a, []arrival{{0, req(1, 1, seg(1, 1024))}})
	drive(t, b, []arrival{{0, req(2, 1, seg(1, 1024), seg(2, 16))}})
	if st := b.Stats(); st.OffloadLoads != 1 || st.ExternalPrefixHits != 1024 { // b's GPU never saw it
		t.Errorf("engine b: loads %d, hit %d; want a's document from the shared tier", st.OffloadLoads, st.ExternalPrefixHits)
	}
}

func TestOffloadDeterministic(t *testing.T) {
	run := func() ([]time.Duration, Stats) {
		c := cfg(2048, 16, 200, 16)
		c.Offload = offCfg(96)
		c.Offload.Policy = kvtier.ARC
		e, _ := New(c)
		as := docs(8)
		drive(t, e, as)
		var out []time.Duration
		for _, a := range as {
			out = append(out, a.r.FirstToken, a.r.Finished)
		}
		return out, e.Stats()
	}
	t1, s1 := run()
	t2, s2 := run()
	if s1 != s2 {
		t.Fatalf("stats differ:\n%+v\n%+v", s1, s2)
	}
	for i := range t1 {
		if t1[i] != t2[i] {
			t.Fatalf("time %d differs: %v vs %v", i, t1[i], t2[i])
		}
	}
}

func TestOffloadConfigValidation(t *testing.T) {
	tests := []struct {
		name string
		edit func(c *Config)
		want string
	}{
		{"connector", func(c *Config) { c.Offload.Connector = 0 }, "connector"},
		{"blocks per chunk", func(c *Config) { c.Offload.BlocksPerChunk = 0 }, "blocks_per_chunk"},
		{"CPU chunks", func(c *Config) { c.Offload.CPUChunks = 0 }, "--kv-offloading-size"},
		{"block bytes", func(c *Config) { c.Offload.BlockBytes = 0 }, "block bytes"},
		{"link", func(c *Config) { c.Offload.LinkBW = 0 }, "bandwidth"},
		{"latency", func(c *Config) { c.Offload.LinkLatency = -1 }, "latency"},
		{"prefix caching", func(c *Config) { c.EnablePrefixCaching = false }, "prefix caching"},
		{"hybrid LMCache", func(c *Config) { c.KVCache = layout(64, "sf"); c.Offload.Connector = OffloadLMCache }, "hybrid"},
		{"tier size", func(c *Config) {
			c.Offload.Secondary = []OffloadTier{{Name: "fs", ReadBW: 1, WriteBW: 1}}
		}, "tier 1 (fs)"},
		{"tier bandwidth", func(c *Config) {
			c.Offload.Secondary = []OffloadTier{{Name: "fs", Chunks: 4, ReadBW: 1}}
		}, "bandwidth"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cfg(64, 4, 64, 16)
			c.Offload = offCfg(8)
			tt.edit(&c)
			_, err := New(c)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one naming %q", err, tt.want)
			}
		})
	}
}

// xferTime is bytes at bw as the link computes it.
func xferTime(bytes int64, bw float64) time.Duration { return time.Duration(float64(bytes) / bw * 1e9) }

// BenchmarkEngineOffload drives 64 documents of 1024 tokens, each asked
// twice, through an engine whose GPU holds about two of them, without and
// with a CPU tier holding them all (the engine's cost per request, not the
// simulated times).
//
//	go test ./engine -run x -bench EngineOffload -benchmem
func BenchmarkEngineOffload(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "offload=off"
		if on {
			name = "offload=on"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				c := cfg(2048, 16, 200, 16)
				if on {
					c.Offload = offCfg(2048)
				}
				e, _ := New(c)
				drive(b, e, docs(64))
			}
		})
	}
}

// TestOffloadRandomisedInvariants drives random workloads with shared
// prefixes, preemptions and aborts through engines with random offload
// settings, checking the block accounting (held-for-store blocks
// included) after every step and that everything ends with no block held.
func TestOffloadRandomisedInvariants(t *testing.T) { randomisedOffload(t, false) }

// TestHybridOffloadRandomisedInvariants is the same over hybrid caches
// (full-attention and sliding-window groups; hybridoffload.go).
func TestHybridOffloadRandomisedInvariants(t *testing.T) { randomisedOffload(t, true) }

// randomisedOffload runs random loads, aborts, preemptions and tiers
// through a connector, checking the block pool after every step and
// that every request ends once with its blocks and pins released.
func randomisedOffload(t *testing.T, hybrid bool) {
	var total Stats
	for trial := 0; trial < 150; trial++ {
		rng := rand.New(rand.NewPCG(uint64(trial), 11))
		bs := []int{1, 4, 16}[rng.IntN(3)]
		c := Config{
			MaxNumSeqs: 1 + rng.IntN(16), MaxNumBatchedTokens: 16 + rng.IntN(256),
			EnableChunkedPrefill: true, EnablePrefixCaching: true, BlockSize: bs,
			NumGPUBlocks: 2 + rng.IntN(400/bs+8), MaxModelLen: 512, AsyncScheduling: trial%3 == 0,
		}
		o := &OffloadConfig{Connector: OffloadNative, BlocksPerChunk: 1 + rng.IntN(4), CPUChunks: 1 + rng.IntN(200),
			BlockBytes: 1 << 20, LinkBW: []float64{1e8, 1e9, 25e9}[rng.IntN(3)], LinkLatency: time.Duration(rng.IntN(100)) * time.Microsecond,
			Store: OffloadStore(rng.IntN(2)), Policy: kvtier.Policy(rng.IntN(2))}
		if trial%4 == 1 && !hybrid {
			o.Connector = OffloadLMCache
		}
		if hybrid {
			c.KVCache = layout(1+rng.IntN(96), []string{"sf", "fs", "sff", "fss", "sfs"}[rng.IntN(5)])
			if rng.IntN(2) == 0 {
				o.AlignTokens = o.BlocksPerChunk * bs * (1 + rng.IntN(4))
			}
		}
		switch trial % 5 {
		case 2:
			o.Secondary = []OffloadTier{{Name: "fs", Chunks: 1 + rng.IntN(400), ReadBW: 2e9, WriteBW: 1e9, Latency: time.Millisecond}}
		case 3: // two tiers of different speeds: writes complete out of order across them
			o.Secondary = []OffloadTier{
				{Name: "fs", Chunks: 1 + rng.IntN(100), ReadBW: 2e9, WriteBW: 1e8, Latency: time.Millisecond},
				{Name: "remote", Chunks: 1 + rng.IntN(400), ReadBW: 1e9, WriteBW: 5e9, Latency: 50 * time.Microsecond},
			}
		}
		c.Offload = o
		e, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		n := 20 + rng.IntN(60)
		reqs := make([]*Request, n)
		for i := range reqs {
			segs := []workload.Segment{}
			if rng.IntN(3) != 0 {
				segs = append(segs, seg(uint64(1+rng.IntN(3)), 1+rng.IntN(200)))
			}
			segs = append(segs, seg(uint64(1000+i), 1+rng.IntN(150)))
			reqs[i] = req(int64(i), 1+rng.IntN(60), segs...)
		}
		ended := map[int64]int{}
		var now, end time.Duration
		busy, next := false, 0
		var b kernel.Batch
		for steps := 0; ; steps++ {
			if steps > 200000 {
				t.Fatalf("trial %d: no progress", trial)
			}
			for k := rng.IntN(3); k > 0 && next < n; k-- {
				if r := reqs[next]; !e.Add(r, now) {
					ended[r.ID]++
				}
				next++
			}
			if rng.IntN(25) == 0 && next > 0 {
				r := reqs[rng.IntN(next)]
				switch r.Status {
				case StatusWaiting, StatusRunning, StatusPreempted, StatusWaitingForRemoteKVs:
					if !r.abortPending && e.Abort(r) {
						ended[r.ID]++
					}
				}
			}
			e.Wake(now)
			if !busy && e.HasWork() && e.Schedule(now, &b) > 0 {
				busy = true
				end = now + time.Duration(1+rng.IntN(5))*time.Millisecond + e.StepTransferTime()
			}
			t0 := time.Duration(never)
			if busy {
				t0 = end
			}
			if next < n {
				t0 = min(t0, now+time.Millisecond)
			}
			if w := e.NextWake(); w < t0 {
				t0 = max(w, now)
			}
			if t0 == never {
				if e.HasWork() || e.Waiting() > 0 {
					t.Fatalf("trial %d: work queued, nothing pending: waiting %d arrived %d loading %d running %d busy %v cfg %+v off %+v", trial, e.waiting.len(), e.arrived.len(), len(e.loading), len(e.running), busy, c, *o)
				}
				break
			}
			now = t0
			if busy && now == end {
				for _, s := range e.Complete(now) {
					if s.Done {
						ended[s.Req.ID]++
					}
				}
				busy = false
				e.Wake(now)
			}
			checkBlocks(t, e, append(slices.Clip(reqs), heldByStores(e)...))
		}
		for _, r := range reqs {
			if ended[r.ID] != 1 {
				t.Fatalf("trial %d: request %d (%v) ended %d times", trial, r.ID, r.Status, ended[r.ID])
			}
			if r.Status == StatusFinished && r.NumOutput != r.MaxTokens {
				t.Fatalf("trial %d: request %d finished with %d/%d outputs", trial, r.ID, r.NumOutput, r.MaxTokens)
			}
		}
		if e.HeldBlocks() != 0 {
			t.Fatalf("trial %d: %d blocks held at the end", trial, e.HeldBlocks())
		}
		if p := e.CPUTier().(*kvtier.Cache); p.Len() > p.Capacity() || p.PinnedChunks() != 0 {
			t.Fatalf("trial %d: CPU tier holds %d of %d, %d pinned with no transfer left", trial, p.Len(), p.Capacity(), p.PinnedChunks())
		}
		st := e.Stats()
		total.OffloadLoads += st.OffloadLoads
		total.OffloadStores += st.OffloadStores
		total.OffloadTierHits[1] += st.OffloadTierHits[1]
		total.OffloadTierHits[2] += st.OffloadTierHits[2]
		total.Preemptions += st.Preemptions
		total.Aborted += st.Aborted
	}
	// The trials reached every path they are meant to check.
	if total.OffloadLoads == 0 || total.OffloadStores == 0 || total.OffloadTierHits[1] == 0 || total.OffloadTierHits[2] == 0 || total.Preemptions == 0 || total.Aborted == 0 {
		t.Errorf("trials missed a path (hybrid %v): %+v", hybrid, total)
	}
}

// heldByStores stands for the blocks finished requests hold while their
// stores complete, as requests checkBlocks can count.
func heldByStores(e *Engine) []*Request {
	var out []*Request
	for _, tr := range e.off.trackers {
		if len(tr.blocks) == 0 {
			continue
		}
		if tr.groups <= 1 {
			out = append(out, &Request{kv: reqGroup{blocks: tr.blocks}})
			continue
		}
		// A hybrid request's groups, last first; a sliding group's null
		// blocks lead it.
		n := len(tr.blocks) / tr.groups
		r := &Request{kvMore: make([]reqGroup, tr.groups-1)}
		for i := 0; i < tr.groups; i++ {
			k := r.group(tr.groups - 1 - i)
			k.blocks = tr.blocks[i*n : (i+1)*n]
			for j, b := range k.blocks {
				if b == 0 {
					k.skipped = j + 1
				}
			}
		}
		out = append(out, r)
	}
	return out
}

// A chunk being loaded is pinned: a store that needs its room is refused
// (vLLM's prepare_store returns None) rather than evicting it.
func TestOffloadPinnedChunksAreNotEvicted(t *testing.T) {
	shared, _ := kvtier.New(20, kvtier.LRU)
	mk := func() *Engine {
		c := cfg(4096, 16, 300, 16)
		c.Offload = offCfg(0)
		c.Offload.CPU, c.Offload.LinkBW = shared, 1e9 // a 16-chunk load takes 134 ms
		e, _ := New(c)
		return e
	}
	a, b := mk(), mk()
	doc := req(1, 1, seg(1, 1024))
	drive(t, a, []arrival{{0, doc}}) // the shared tier holds its 16 chunks
	r := req(2, 1, seg(1, 1024), seg(2, 16))
	other := req(3, 1, seg(3, 1024))
	b.Add(r, 0)
	b.Add(other, 0)
	var bt kernel.Batch
	if b.Schedule(0, &bt) != 1 || r.Status != StatusWaitingForRemoteKVs {
		t.Fatalf("want r loading and the other request running: %v", r.Status)
	}
	keys := PromptBlockHashes(nil, doc.Prompt, 16)
	for k := 3; k < 64; k += 4 {
		if !shared.Pinned(keys[k]) {
			t.Fatalf("chunk %d not pinned during its load", k/4)
		}
	}
	// The other request's 16 chunks need 12 evictions beyond the 4 free
	// slots, and every stored chunk is pinned: its store is refused and
	// the loading chunks stay.
	if st := b.Stats(); st.OffloadStores != 0 || shared.Len() != 16 || st.OffloadTierEvictions != 0 {
		t.Fatalf("stores %d, tier holds %d, evictions %d", st.OffloadStores, shared.Len(), st.OffloadTierEvictions)
	}
	b.Complete(time.Millisecond)
	driveFrom(t, b, nil, time.Millisecond)
	if r.Status != StatusFinished || r.CachedTokens != 1024 || shared.PinnedChunks() != 0 {
		t.Errorf("r %v cached %d, %d chunks pinned after the run", r.Status, r.CachedTokens, shared.PinnedChunks())
	}
}

// Engines sharing a storage tier's read path queue behind each other.
func TestOffloadSharedTierLinkContends(t *testing.T) {
	load := func(shared bool) (time.Duration, time.Duration) {
		fs, _ := kvtier.New(1024, kvtier.LRU)
		read := &kvtier.Link{BW: 1e9, Latency: 100 * time.Microsecond}
		write := &kvtier.Link{BW: 1e10, Latency: 100 * time.Microsecond}
		mk := func() *Engine {
			c := cfg(4096, 16, 300, 16)
			c.Offload = offCfg(64)
			tier := OffloadTier{Name: "fs", Tier: fs, Read: read, Write: write}
			if !shared {
				tier.Read, tier.Write = nil, nil
				tier.ReadBW, tier.WriteBW, tier.Latency = 1e9, 1e10, 100*time.Microsecond
			}
			c.Offload.Secondary = []OffloadTier{tier}
			e, err := New(c)
			if err != nil {
				t.Fatal(err)
			}
			return e
		}
		w, a, b := mk(), mk(), mk()
		drive(t, w, []arrival{{0, req(1, 1, seg(1, 1024))}}) // the document reaches the fs tier
		var bt kernel.Batch
		a.Add(req(2, 1, seg(1, 1024), seg(2, 16)), time.Second)
		b.Add(req(3, 1, seg(1, 1024), seg(3, 16)), time.Second)
		a.Schedule(time.Second, &bt)
		b.Schedule(time.Second, &bt)
		return a.Stats().OffloadLoadTime, b.Stats().OffloadLoadTime
	}
	a1, b1 := load(false)
	a2, b2 := load(true)
	if a1 != b1 || a2 != a1 || b2 <= a2+100*time.Millisecond {
		t.Errorf("own links: loads %v, %v; shared read link: %v, %v (the second should wait ~134 ms for the first)", a1, b1, a2, b2)
	}
}

// TestOffloadReloadRestoresEvictedChunks: a preempted request whose stored
// chunks were partly evicted loads the rest and stores the evicted ones
// again as it recomputes them, as vLLM's update_state_after_alloc resets
// _next_stored_block_idx to the loaded chunks' end.
func TestOffloadReloadRestoresEvictedChunks(t *testing.T) {
	c := cfg(2048, 16, 64, 16)
	c.Offload = offCfg(8)
	e, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	r := req(1, 1, seg(7, 4*64+8)) // 4 chunks and a few tokens
	if !e.Add(r, 0) {
		t.Fatal(r.RejectReason)
	}
	// As after a preemption: r stored its 4 chunks, and chunks 2 and 3
	// have since been evicted from the CPU tier.
	r.Preemptions, r.off.nextStore = 1, 4
	cpu := e.CPUTier().(*kvtier.Cache)
	keys := slices.Clone(e.chunkKeys(r, 0, 4))
	stored, _, ok := cpu.PrepareStore(keys[:2], nil)
	if !ok || len(stored) != 2 {
		t.Fatalf("seeding the tier: %v %v", stored, ok)
	}
	cpu.CompleteStore(stored)
	drive(t, e, nil)
	if st := e.Stats(); st.OffloadLoads != 1 || st.ExternalPrefixHits != 2*64 {
		t.Fatalf("loads %d, external hits %d: want the 2 stored chunks loaded", st.OffloadLoads, st.ExternalPrefixHits)
	}
	for k, h := range keys {
		if !cpu.Ready(h) {
			t.Errorf("chunk %d not in the CPU tier after the request recomputed it", k)
		}
	}
}

// TestOffloadLookupTouchesAGPUHit: the connector touches a request's
// chunks before it sizes the hit (vLLM's get_num_new_matched_tokens), so a
// request its GPU prefix cache serves in full still keeps its chunks in
// the CPU tier recent: the next eviction takes another request's.
func TestOffloadLookupTouchesAGPUHit(t *testing.T) {
	c := cfg(2048, 16, 64, 16)
	c.Offload = offCfg(4)
	e, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	cpu := e.CPUTier().(*kvtier.Cache)
	x, y := req(1, 1, seg(7, 2*64+8)), req(2, 1, seg(8, 2*64+8))
	var keys [][]uint64
	for _, r := range []*Request{x, y} { // x's chunks first: the least recent
		k := slices.Clone(e.chunkKeys(r, 0, 2))
		stored, _, ok := cpu.PrepareStore(k, nil)
		if !ok || len(stored) != 2 {
			t.Fatalf("seeding the tier: %v %v", stored, ok)
		}
		cpu.CompleteStore(stored)
		keys = append(keys, k)
	}
	// x's GPU hit covers both its chunks: nothing to load.
	if ext, how, _ := e.offloadLookup(x, 2*64); ext != 0 || how != offNone {
		t.Fatalf("lookup after a full GPU hit: %d tokens, outcome %d", ext, how)
	}
	if _, ev, ok := cpu.PrepareStore([]uint64{12345}, nil); !ok || ev != 1 {
		t.Fatalf("storing one more chunk: evicted %d, ok %v", ev, ok)
	}
	if !cpu.Ready(keys[0][0]) || !cpu.Ready(keys[0][1]) || cpu.Ready(keys[1][0]) {
		t.Errorf("x's chunks ready %v %v, y's first %v: want x's kept and y's oldest evicted",
			cpu.Ready(keys[0][0]), cpu.Ready(keys[0][1]), cpu.Ready(keys[1][0]))
	}
}
