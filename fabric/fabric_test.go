package fabric

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"blis/catalog"
)

// testFabric has round numbers: 8 GPUs a node, NVLink 400 GB/s, PCIe
// 50 GB/s, one 50 GB/s NIC per GPU.
func testFabric() *catalog.Fabric {
	return &catalog.Fabric{
		Name: "test", GPUsPerNode: 8, GPUsPerNIC: 1,
		NVLink:  catalog.Link{Kind: "nvlink", Bandwidth: 400e9, Latency: 8 * time.Microsecond},
		PCIe:    catalog.Link{Kind: "pcie", Bandwidth: 50e9, Latency: 8 * time.Microsecond},
		Network: catalog.Link{Kind: "infiniband", Bandwidth: 50e9, Latency: 5 * time.Microsecond},
	}
}

const (
	ms  = time.Millisecond
	us  = time.Microsecond
	gb  = int64(1e9)
	net = 5 * us
	nvl = 8 * us
)

type start struct {
	at       time.Duration
	id       int64
	src, dst Place
	bytes    int64
}

type completion struct {
	at time.Duration
	id int64
}

// run starts the transfers at their times and collects every completion
// by calling Done at Next, checking on the way that nothing completes
// before Next says it may.
func run(t *testing.T, f *catalog.Fabric, starts []start) []completion {
	t.Helper()
	tr := New(f)
	var out []completion
	var ids []int64
	i := 0
	for i < len(starts) || tr.InFlight() > 0 {
		next := tr.Next()
		if i < len(starts) && starts[i].at <= next {
			s := starts[i]
			if ids = tr.Done(s.at, ids[:0]); len(ids) > 0 {
				t.Fatalf("Done(%v) = %v before Next %v", s.at, ids, next)
			}
			tr.Start(s.at, s.id, s.src, s.dst, s.bytes)
			i++
			continue
		}
		if next == math.MaxInt64 {
			t.Fatalf("transfers in flight but Next says none")
		}
		if ids = tr.Done(next-1, ids[:0]); len(ids) > 0 {
			t.Fatalf("Done(%v) = %v, before Next %v", next-1, ids, next)
		}
		for _, id := range tr.Done(next, ids[:0]) {
			out = append(out, completion{next, id})
		}
	}
	if tr.Next() != math.MaxInt64 {
		t.Errorf("idle fabric: Next = %v", tr.Next())
	}
	return out
}

func TestTransferTimes(t *testing.T) {
	n0, n1 := Place{Node: 0, GPU: 0, GPUs: 1}, Place{Node: 1, GPU: 0, GPUs: 1}
	tcp := testFabric()
	tcp.GPUsPerNIC = 8 // one NIC for the whole node
	noNVLink := testFabric()
	noNVLink.NVLink.Bandwidth = 0
	tests := []struct {
		name   string
		f      *catalog.Fabric
		starts []start
		want   []completion
	}{
		{"alone over the network: bytes/bw + latency", testFabric(),
			[]start{{0, 1, n0, n1, gb}}, []completion{{20*ms + net, 1}}},
		{"alone over NVLink", testFabric(),
			[]start{{0, 1, n0, Place{0, 3, 1}, gb}}, []completion{{2500*us + nvl, 1}}},
		{"alone over PCIe where a node has no NVLink", noNVLink,
			[]start{{0, 1, n0, Place{0, 3, 1}, gb}}, []completion{{20*ms + nvl, 1}}},
		{"starting later", testFabric(),
			[]start{{7 * ms, 1, n0, n1, gb}}, []completion{{27*ms + net, 1}}},
		{"two on one link take twice as long, ties by id", testFabric(),
			[]start{{0, 2, n0, n1, gb}, {0, 1, n0, n1, gb}}, []completion{{40*ms + net, 1}, {40*ms + net, 2}}},
		{"two from one NIC to two nodes share its egress", testFabric(),
			[]start{{0, 1, n0, n1, gb}, {0, 2, n0, Place{2, 0, 1}, gb}}, []completion{{40*ms + net, 1}, {40*ms + net, 2}}},
		{"two into one NIC share its ingress", testFabric(),
			[]start{{0, 1, n0, n1, gb}, {0, 2, Place{2, 0, 1}, n1, gb}}, []completion{{40*ms + net, 1}, {40*ms + net, 2}}},
		{"different NICs do not contend", testFabric(),
			[]start{{0, 1, n0, n1, gb}, {0, 2, Place{0, 1, 1}, Place{1, 1, 1}, gb}}, []completion{{20*ms + net, 1}, {20*ms + net, 2}}},
		// A alone for 10 ms moves 0.5 GB; then both run at 25 GB/s, so A's
		// last 0.5 GB ends at 30 ms, when B has moved 0.5 GB; B's last
		// 0.5 GB runs alone at 50 GB/s: 40 ms.
		{"one starting midway through another", testFabric(),
			[]start{{0, 1, n0, n1, gb}, {10 * ms, 2, n0, n1, gb}}, []completion{{30*ms + net, 1}, {40*ms + net, 2}}},
		{"TP4 to TP4 splits over 4 NICs", testFabric(),
			[]start{{0, 1, Place{0, 0, 4}, Place{1, 4, 4}, 4 * gb}}, []completion{{20*ms + net, 1}}},
		{"TP4 to TP4 through one shared NIC", tcp,
			[]start{{0, 1, Place{0, 0, 4}, Place{1, 4, 4}, 4 * gb}}, []completion{{80*ms + net, 1}}},
		{"TP1 to TP1 moves it all through one NIC", testFabric(),
			[]start{{0, 1, n0, n1, 4 * gb}}, []completion{{80*ms + net, 1}}},
		// TP2 → TP4: sender ranks 0,0,1,1 feed receiver ranks 0..3, so each
		// sender NIC carries two 1 GB flows at 25 GB/s.
		{"TP2 to TP4: each sender rank feeds two receivers", testFabric(),
			[]start{{0, 1, Place{0, 0, 2}, Place{1, 0, 4}, 4 * gb}}, []completion{{40*ms + net, 1}}},
		{"TP4 to TP2: each receiver rank drains two senders", testFabric(),
			[]start{{0, 1, Place{0, 0, 4}, Place{1, 0, 2}, 4 * gb}}, []completion{{40*ms + net, 1}}},
		{"TP4 inside one node over NVLink", testFabric(),
			[]start{{0, 1, Place{0, 0, 4}, Place{0, 4, 4}, 4 * gb}}, []completion{{2500*us + nvl, 1}}},
		// A replica wider than a node spans the next: TP16 from node 0
		// GPU 0 covers nodes 0 and 1; to TP16 on nodes 2 and 3, 16 NICs.
		{"TP16 across two nodes each side", testFabric(),
			[]start{{0, 1, Place{0, 0, 16}, Place{2, 0, 16}, 16 * gb}}, []completion{{20*ms + net, 1}}},
		// Max-min: B, C, D share receiver GPU 1's ingress at 50/3 GB/s; A
		// shares its sender's egress with B only, so it gets the 100/3
		// GB/s B leaves, not half: 1 GB in 30 ms. The rest end at 60 ms.
		{"max-min fair share", testFabric(),
			[]start{
				{0, 1, n0, n1, gb},
				{0, 2, n0, Place{1, 1, 1}, gb},
				{0, 3, Place{2, 0, 1}, Place{1, 1, 1}, gb},
				{0, 4, Place{3, 0, 1}, Place{1, 1, 1}, gb},
			},
			[]completion{{30*ms + net, 1}, {60*ms + net, 2}, {60*ms + net, 3}, {60*ms + net, 4}}},
		{"NVLink and network paths do not contend", testFabric(),
			[]start{{0, 1, n0, n1, gb}, {0, 2, n0, Place{0, 1, 1}, gb}}, []completion{{2500*us + nvl, 2}, {20*ms + net, 1}}},
		{"zero bytes pay the latency", testFabric(),
			[]start{{3 * ms, 1, n0, n1, 0}}, []completion{{3*ms + net, 1}}},
		{"to the same GPU nothing crosses a link", testFabric(),
			[]start{{0, 1, n0, n0, gb}}, []completion{{nvl, 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := run(t, tt.f, tt.starts)
			if !slices.Equal(got, tt.want) {
				t.Errorf("completions %v, want %v", got, tt.want)
			}
		})
	}
}

func TestCatalogFabric(t *testing.T) {
	// 1 GiB of KV over h100-nvlink-ib between nodes: 2^30 / 48.3e9 s
	// = 22.2303 ms, + 5 µs.
	f, err := catalog.LookupFabric("h100-nvlink-ib")
	if err != nil {
		t.Fatal(err)
	}
	got := run(t, f, []start{{0, 1, Place{0, 0, 1}, Place{1, 0, 1}, 1 << 30}})
	want := time.Duration(math.Ceil(float64(1<<30)/48.3e9*1e9)) + 5*us
	if len(got) != 1 || got[0].at != want {
		t.Errorf("got %v, want %v", got, want)
	}
}

// randomStarts is a seeded mix of transfers on 4 nodes: TP 1, 2, 4 and 8,
// inside a node and between nodes, arriving over 50 ms.
func randomStarts(seed uint64, n int) []start {
	r := rand.New(rand.NewPCG(seed, 1))
	place := func() Place {
		tp := []int{1, 2, 4, 8}[r.IntN(4)]
		return Place{Node: r.IntN(4), GPU: r.IntN(8/tp) * tp, GPUs: tp}
	}
	out := make([]start, n)
	at := time.Duration(0)
	for i := range out {
		at += time.Duration(r.IntN(int(ms / 10)))
		out[i] = start{at, int64(i), place(), place(), r.Int64N(2 * gb)}
	}
	return out
}

func TestDeterministic(t *testing.T) {
	starts := randomStarts(7, 500)
	a, b := run(t, testFabric(), starts), run(t, testFabric(), starts)
	if !slices.Equal(a, b) {
		t.Fatal("two runs of the same transfers differ")
	}
	if len(a) != len(starts) {
		t.Fatalf("%d completions of %d transfers", len(a), len(starts))
	}
	// Nothing beats its path's speed alone; completions come in time order.
	began := map[int64]start{}
	for _, s := range starts {
		began[s.id] = s
	}
	for i, c := range a {
		s := began[c.id]
		n := max(s.src.GPUs, s.dst.GPUs)
		floor := time.Duration(float64(s.bytes) / float64(n) / 400e9 * 1e9)
		if local := s.src.Node == s.dst.Node && s.src.GPU == s.dst.GPU; !local && c.at < s.at+floor+5*us {
			t.Errorf("transfer %d done at %v, started %v, faster than %v", c.id, c.at, s.at, floor)
		}
		if i > 0 && c.at < a[i-1].at {
			t.Errorf("completion %d at %v before the previous %v", i, c.at, a[i-1].at)
		}
	}
}

func TestBadUsePanics(t *testing.T) {
	for name, f := range map[string]func(tr *Transfers){
		"time goes back": func(tr *Transfers) { tr.Start(ms, 1, Place{}, Place{1, 0, 1}, 1); tr.Done(0, nil) },
		"negative bytes": func(tr *Transfers) { tr.Start(0, 1, Place{}, Place{1, 0, 1}, -1) },
		"negative place": func(tr *Transfers) { tr.Start(0, 1, Place{-1, 0, 1}, Place{1, 0, 1}, 1) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			f(New(testFabric()))
		})
	}
}

func TestSteadyStateAllocatesNothing(t *testing.T) {
	tr := New(testFabric())
	starts := randomStarts(3, 200)
	for _, s := range starts {
		tr.Start(0, s.id, s.src, s.dst, s.bytes)
	}
	ids := make([]int64, 0, 256)
	id := int64(len(starts))
	allocs := testing.AllocsPerRun(500, func() {
		now := tr.Next()
		ids = tr.Done(now, ids[:0])
		for _, done := range ids {
			s := starts[done%int64(len(starts))]
			tr.Start(now, id, s.src, s.dst, s.bytes)
			id++
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per event", allocs)
	}
}

// BenchmarkTransfers keeps 10, 100 or 1,000 single-GPU transfers in
// flight between random GPUs of 64 nodes: each completion starts a new
// one. One op is one completion and its replacement.
func BenchmarkTransfers(b *testing.B) {
	for _, flows := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("flows=%d", flows), func(b *testing.B) {
			const nodes = 64
			r := rand.New(rand.NewPCG(1, 2))
			place := func() Place { return Place{Node: r.IntN(nodes), GPU: r.IntN(8), GPUs: 1} }
			tr := New(testFabric())
			for i := 0; i < flows; i++ {
				tr.Start(0, int64(i), place(), place(), 1+r.Int64N(gb))
			}
			ids := make([]int64, 0, flows)
			id := int64(flows)
			step := func() int {
				now := tr.Next()
				ids = tr.Done(now, ids[:0])
				for range ids {
					tr.Start(now, id, place(), place(), 1+r.Int64N(gb))
					id++
				}
				return len(ids)
			}
			for i := 0; i < 2*flows; i++ {
				step()
			}
			b.ReportAllocs()
			b.ResetTimer()
			for done := 0; done < b.N; {
				done += step()
			}
		})
	}
}

// TestMaxMinFair checks the rates of random mixes against max-min
// fairness's definition: no link carries more than its capacity, and every
// flow has a bottleneck — a full link on which no flow runs faster.
func TestMaxMinFair(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		tcp := testFabric()
		if seed%2 == 0 {
			tcp.GPUsPerNIC = 4 // two NICs a node: more sharing
		}
		tr := New(tcp)
		for _, s := range randomStarts(seed, 60) {
			tr.Start(0, s.id, s.src, s.dst, s.bytes+1)
		}
		tr.Next() // re-shares
		for li, l := range tr.links {
			sum, top := 0.0, 0.0
			for _, fi := range l.flows {
				sum += tr.flows[fi].rate
				top = max(top, tr.flows[fi].rate)
			}
			if sum > l.cap*(1+1e-9) {
				t.Fatalf("seed %d: link %d carries %g over its %g", seed, li, sum, l.cap)
			}
		}
		for _, fi := range tr.active {
			f := tr.flows[fi]
			bottleneck := false
			for _, li := range f.links {
				l := tr.links[li]
				sum, top := 0.0, 0.0
				for _, gi := range l.flows {
					sum += tr.flows[gi].rate
					top = max(top, tr.flows[gi].rate)
				}
				bottleneck = bottleneck || (sum >= l.cap*(1-1e-9) && f.rate >= top*(1-1e-9))
			}
			if !bottleneck || f.rate <= 0 {
				t.Fatalf("seed %d: flow %d at %g has no bottleneck link", seed, fi, f.rate)
			}
		}
	}
}
