package score

import (
	"math"
	"strings"
	"testing"
	"time"
)

func span(s, e int64) Req { return Req{Start: s, End: e, OK: true, InputTokens: 10, OutputTokens: 5} }

func TestFlightsHandComputed(t *testing.T) {
	reqs := []Req{
		span(0, 10),    // 0: touches 1 at t=10 only (half-open): solo
		span(10, 20),   // 1: 2 overlaps [15,20): mean 0.5 → 1
		span(15, 25),   // 2: same
		span(100, 110), // 3: alone
		span(200, 300), // 4: 5 for 25 of 100 → 0.25 → 0; overlaps 5 and 6
		span(200, 225), // 5: 4 throughout → 1
		span(250, 250), // 6: zero length inside 4 → 1
	}
	want := []Flight{{0, 0}, {1, 1}, {1, 1}, {0, 0}, {0, 2}, {1, 1}, {1, 1}}
	got := Flights(reqs)
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("request %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	if !got[0].Solo() || got[1].Solo() || got[4].Solo() {
		t.Error("Solo() disagrees with Overlap")
	}
}

func TestBins(t *testing.T) {
	for _, c := range []struct {
		n     int
		label string
	}{{0, "0-0"}, {1, "1-1"}, {2, "2-3"}, {3, "2-3"}, {4, "4-7"}, {7, "4-7"}, {8, "8-15"}, {31, "16-31"},
		{63, "32-63"}, {64, "64-inf"}, {5000, "64-inf"}} {
		lo, hi := binBounds(binOf(c.n))
		if got := BinLabel(lo, hi); got != c.label {
			t.Errorf("%d in flight: bin %q, want %q", c.n, got, c.label)
		}
	}
}

// sequential returns n back-to-back requests (solo) with every chunk gap
// itl, starting at t0.
func sequential(n int, itl time.Duration, withID bool) []Req {
	var out []Req
	t := int64(0)
	for i := 0; i < n; i++ {
		q := Req{Start: t, OK: true, InputTokens: 100 + i, OutputTokens: 3, TTFT: 20 * time.Millisecond,
			ITLs: []time.Duration{itl, itl}}
		q.End = t + int64(q.TTFT+2*itl)
		if withID {
			q.ID = string(rune('a'+i%26)) + strings.Repeat("x", i/26)
		}
		out = append(out, q)
		t = q.End
	}
	return out
}

func TestPairingSoloCutoff(t *testing.T) {
	for _, n := range []int{29, 30} {
		m := sequential(n, 10*time.Millisecond, false)
		b := sequential(n, 9*time.Millisecond, false)
		po, err := PairRequests(m, b, PairByOrder)
		if err != nil {
			t.Fatal(err)
		}
		pl := SummarizePairs(1, po, PairByOrder)
		if pl.Pairs != n || pl.Solo != n || pl.SameInFlight != n {
			t.Fatalf("n=%d: %+v", n, pl)
		}
		if pl.Shown != (n >= MinSoloPairs) {
			t.Errorf("n=%d: shown %v", n, pl.Shown)
		}
		// ITL 9 vs 10 ms: −10 %; latency (20+18)/(20+20) − 1 = −5 %; TTFT 0.
		if !nearPct(pl.ITLSolo.F(), -10) || !nearPct(pl.ITLSame.F(), -10) || !nearPct(pl.LatencySolo.F(), -5) || !nearPct(pl.TTFTSolo.F(), 0) {
			t.Errorf("n=%d: medians %+v", n, pl)
		}
	}
}

func TestPairingKeys(t *testing.T) {
	m := sequential(3, time.Millisecond, true)
	b := sequential(3, time.Millisecond, true)
	// BLIS lists them in another order: id pairing must not care.
	b[0], b[2] = b[2], b[0]
	po, err := PairRequests(m, b, PairByID)
	if err != nil || len(po.Pairs) != 3 || po.Unmatched != 0 || po.Mismatched != 0 {
		t.Fatalf("by id: %+v, %v", po, err)
	}
	for _, p := range po.Pairs {
		if p.M.ID != p.B.ID {
			t.Errorf("paired %q with %q", p.M.ID, p.B.ID)
		}
	}
	// A different output length is not the same request.
	b[1].OutputTokens = 4
	po, _ = PairRequests(m, b, PairByID)
	if po.Mismatched != 1 || len(po.Pairs) != 2 {
		t.Errorf("token mismatch: %+v", po)
	}
	// A failed request is not paired; its counterpart is unmatched.
	b[1].OutputTokens, b[1].OK = 3, false
	po, _ = PairRequests(m, b, PairByID)
	if po.Unmatched != 1 || len(po.Pairs) != 2 {
		t.Errorf("failed request: %+v", po)
	}
	// Repeated ids cannot name one request.
	b[1].OK, b[2].ID = true, b[0].ID
	if _, err := PairRequests(m, b, PairByID); err == nil || !strings.Contains(err.Error(), "repeats") {
		t.Errorf("repeated id: %v", err)
	}
	// Sessions and turns.
	for i := range m {
		m[i].Session, m[i].Turn = "s1", i
		b[i].Session, b[i].Turn = "s1", i
	}
	b = sequential(3, time.Millisecond, false)
	for i := range b {
		b[i].Session, b[i].Turn = "s1", 2-i
		b[i].InputTokens = 100 + 2 - i
	}
	po, err = PairRequests(m, b, PairBySession)
	if err != nil || len(po.Pairs) != 3 {
		t.Fatalf("by session: %+v %v", po, err)
	}
	for _, p := range po.Pairs {
		if p.M.Turn != p.B.Turn {
			t.Errorf("turn %d paired with %d", p.M.Turn, p.B.Turn)
		}
	}
	if _, err := PairRequests(m, b, "nonsense"); err == nil {
		t.Error("unknown key accepted")
	}
}

func TestSameInFlightRule(t *testing.T) {
	for _, c := range []struct {
		m, b int
		want bool
	}{{3, 4, true}, {4, 3, true}, {3, 3, true}, {3, 5, false}, {0, 2, false}} {
		p := Pair{MFl: Flight{Mean: c.m, Overlap: c.m}, BFl: Flight{Mean: c.b, Overlap: c.b}}
		if p.SameInFlight() != c.want {
			t.Errorf("in flight %d vs %d: same %v, want %v", c.m, c.b, !c.want, c.want)
		}
	}
}

func reqITL(ms float64) *Req {
	g := time.Duration(ms * 1e6)
	return &Req{OK: true, OutputTokens: 2, ITLs: []time.Duration{g}, End: int64(g)}
}

func TestSlopesAndBins(t *testing.T) {
	// Measured ITL 10, 12, 14 ms at 0, 1, 2 in flight: slope 2 ms per
	// request; BLIS 9, 10, 11: slope 1; ratio 0.5. A pair 3 apart in
	// flight is not load-matched and is left out.
	mk := func(mIn, bIn int, mITL, bITL float64) Pair {
		return Pair{M: reqITL(mITL), B: reqITL(bITL), MFl: Flight{mIn, mIn}, BFl: Flight{bIn, bIn}}
	}
	pairs := []Pair{mk(0, 0, 10, 9), mk(1, 1, 12, 10), mk(2, 2, 14, 11), mk(2, 5, 100, 1)}
	s := ITLSlopes(pairs)
	if s.Pairs != 3 || !nearPct(s.Measured.F(), 2) || !nearPct(s.BLIS.F(), 1) || !nearPct(s.Ratio.F(), 0.5) {
		t.Errorf("slopes %+v", s)
	}
	bins := ITLByInFlight(pairs)
	want := []struct {
		label string
		n     int
		med   float64
	}{{"0-0", 1, -10}, {"1-1", 1, 100 * (10.0/12 - 1)}, {"2-3", 1, 100 * (11.0/14 - 1)}}
	if len(bins) != len(want) {
		t.Fatalf("bins %+v", bins)
	}
	for i, w := range want {
		if bins[i].Label != w.label || bins[i].Pairs != w.n || !nearPct(bins[i].Median.F(), w.med) {
			t.Errorf("bin %d: %+v, want %+v", i, bins[i], w)
		}
	}
	if !math.IsNaN(LeastSquaresSlope([]float64{1, 1}, []float64{2, 3})) {
		t.Error("slope with no spread in x is not NaN")
	}
}
