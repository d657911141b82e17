package score

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
)

// Request-level pairing: the same request on both sides, compared one to
// one. Population metrics mix BLIS's error with differences in offered
// load; a pair whose two sides had the same number of requests in flight
// does not. The rules are those of the validation pages this format
// follows: solo pairs have nothing else in flight on either side;
// same-in-flight pairs have in-flight counts equal within ±1; per-level
// medians are shown only for levels with at least MinSoloPairs solo pairs.

// Pairing keys (a manifest's pair-by).
const (
	PairBySession = "session" // (session id, turn)
	PairByID      = "id"      // request id
	PairByOrder   = "order"   // n-th sent on one side with n-th sent on the other
)

// MinSoloPairs is the fewest solo pairs a level needs to be shown.
const MinSoloPairs = 30

// Flight is a request's load: how many other requests were in flight
// while it ran.
type Flight struct {
	// Mean is the time-weighted mean number of other requests in flight
	// over the request's [start, end), rounded to the nearest integer
	// (halves up). A request of zero length counts those in flight at its
	// start.
	Mean int
	// Overlap counts the other requests whose [start, end) overlaps it;
	// Solo is Overlap == 0.
	Overlap int
}

// Solo reports whether nothing else was in flight.
func (f Flight) Solo() bool { return f.Overlap == 0 }

// Flights computes every request's Flight (all requests, failed ones too:
// they held a slot). Intervals are half-open, so a request sent the
// instant another ends does not overlap it.
func Flights(reqs []Req) []Flight {
	n := len(reqs)
	starts := make([]int64, n)
	ends := make([]int64, n)
	for i := range reqs {
		starts[i], ends[i] = reqs[i].Start, reqs[i].End
	}
	slices.Sort(starts)
	slices.Sort(ends)
	// Boundaries of the step function active(t) and its running integral.
	type ev struct {
		at    int64
		delta int
	}
	evs := make([]ev, 0, 2*n)
	for i := range reqs {
		evs = append(evs, ev{reqs[i].Start, 1}, ev{reqs[i].End, -1})
	}
	slices.SortFunc(evs, func(a, b ev) int { return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.delta, b.delta)) })
	var times []int64
	var active []int       // active on [times[k], times[k+1])
	var integral []float64 // ∫ active from times[0] to times[k]
	cur := 0
	for i := 0; i < len(evs); {
		t := evs[i].at
		for i < len(evs) && evs[i].at == t {
			cur += evs[i].delta
			i++
		}
		if k := len(times); k > 0 {
			integral = append(integral, integral[k-1]+float64(active[k-1])*float64(t-times[k-1]))
		} else {
			integral = append(integral, 0)
		}
		times = append(times, t)
		active = append(active, cur)
	}
	at := func(t int64) (float64, int) { // integral up to t, active at t
		k, found := slices.BinarySearch(times, t)
		if !found {
			k-- // t lies inside [times[k], times[k+1])
		}
		if k < 0 {
			return 0, 0
		}
		return integral[k] + float64(active[k])*float64(t-times[k]), active[k]
	}
	out := make([]Flight, n)
	for i := range reqs {
		s, e := reqs[i].Start, reqs[i].End
		// Others overlapping [s, e): started before e and ended after s.
		startedBefore, _ := slices.BinarySearch(starts, e) // starts < e
		endedBy := upperBound(ends, s)                     // ends ≤ s
		overlap := startedBefore - endedBy - 1             // less itself
		if e == s {
			// A zero-length request overlaps those with start ≤ s < end;
			// it is itself among those with end ≤ s.
			overlap = upperBound(starts, s) - endedBy
		}
		out[i].Overlap = max(0, overlap)
		if e > s {
			is, _ := at(s)
			ie, _ := at(e)
			mean := (ie-is)/float64(e-s) - 1
			out[i].Mean = max(0, int(math.Floor(mean+0.5)))
		} else {
			_, a := at(s)
			out[i].Mean = max(0, a) // active at s excludes a zero-length request
		}
		if out[i].Overlap == 0 {
			out[i].Mean = 0
		}
	}
	return out
}

// upperBound is the number of elements of sorted xs that are ≤ x.
func upperBound(xs []int64, x int64) int {
	i, found := slices.BinarySearch(xs, x)
	for found && i < len(xs) && xs[i] == x {
		i++
	}
	return i
}

// Pair is one request on both sides.
type Pair struct {
	M, B       *Req
	MFl, BFl   Flight
	MIdx, BIdx int // indices into the sides' slices
}

// Solo reports whether neither side had anything else in flight.
func (p Pair) Solo() bool { return p.MFl.Solo() && p.BFl.Solo() }

// SameInFlight reports whether the in-flight counts agree within ±1.
func (p Pair) SameInFlight() bool { return max(p.MFl.Mean-p.BFl.Mean, p.BFl.Mean-p.MFl.Mean) <= 1 }

// PairOutcome is the result of pairing two sides.
type PairOutcome struct {
	Pairs []Pair
	// Unmatched counts successful requests of either side with no
	// counterpart; Mismatched counts matches left out because their
	// input or output token counts differ (not the same request).
	Unmatched  int
	Mismatched int
}

// PairRequests matches measured and BLIS requests by key (PairBySession,
// PairByID or PairByOrder). Only successful requests are paired; a key
// that repeats on a side is an error (it cannot name one request).
func PairRequests(meas, blis []Req, by string) (PairOutcome, error) {
	var out PairOutcome
	mf, bf := Flights(meas), Flights(blis)
	key := func(q *Req) string {
		switch by {
		case PairBySession:
			return q.Session + "\x00" + strconv.Itoa(q.Turn)
		case PairByID:
			return q.ID
		}
		return ""
	}
	okIdx := func(reqs []Req) []int {
		var idx []int
		for i := range reqs {
			if reqs[i].OK {
				idx = append(idx, i)
			}
		}
		return idx
	}
	mi, bi := okIdx(meas), okIdx(blis)
	var matches [][2]int
	switch by {
	case PairByOrder:
		sortBy := func(reqs []Req, idx []int) {
			slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(reqs[a].Start, reqs[b].Start) })
		}
		sortBy(meas, mi)
		sortBy(blis, bi)
		n := min(len(mi), len(bi))
		for k := 0; k < n; k++ {
			matches = append(matches, [2]int{mi[k], bi[k]})
		}
		out.Unmatched = len(mi) - n + len(bi) - n
	case PairBySession, PairByID:
		index := func(reqs []Req, idx []int, side string) (map[string]int, error) {
			m := make(map[string]int, len(idx))
			for _, i := range idx {
				k := key(&reqs[i])
				if by == PairByID && k == "" {
					return nil, fmt.Errorf("validate: pair by id: a %s request has no id", side)
				}
				if by == PairBySession && reqs[i].Session == "" {
					return nil, fmt.Errorf("validate: pair by session: a %s request has no session id", side)
				}
				if _, dup := m[k]; dup {
					return nil, fmt.Errorf("validate: pair by %s: %s key %q repeats", by, side, readableKey(k))
				}
				m[k] = i
			}
			return m, nil
		}
		bm, err := index(blis, bi, "BLIS")
		if err != nil {
			return out, err
		}
		if _, err := index(meas, mi, "measured"); err != nil {
			return out, err
		}
		used := 0
		for _, i := range mi { // measured order: deterministic
			if j, ok := bm[key(&meas[i])]; ok {
				matches = append(matches, [2]int{i, j})
				used++
			} else {
				out.Unmatched++
			}
		}
		out.Unmatched += len(bi) - used
	default:
		return out, fmt.Errorf("validate: pair by %q: allowed: %s, %s, %s", by, PairBySession, PairByID, PairByOrder)
	}
	for _, m := range matches {
		a, b := &meas[m[0]], &blis[m[1]]
		if a.InputTokens != b.InputTokens || a.OutputTokens != b.OutputTokens {
			out.Mismatched++
			continue
		}
		out.Pairs = append(out.Pairs, Pair{M: a, B: b, MFl: mf[m[0]], BFl: bf[m[1]], MIdx: m[0], BIdx: m[1]})
	}
	return out, nil
}

func readableKey(k string) string {
	if s, t, ok := cutNUL(k); ok {
		return s + " turn " + t
	}
	return k
}

func cutNUL(k string) (string, string, bool) {
	for i := 0; i < len(k); i++ {
		if k[i] == 0 {
			return k[:i], k[i+1:], true
		}
	}
	return k, "", false
}

// PairLevel is one level's paired errors (medians of per-request signed
// errors, percent).
type PairLevel struct {
	Level        Num `json:"level"`
	Pairs        int `json:"pairs"`
	Solo         int `json:"solo_pairs"`
	SameInFlight int `json:"same_in_flight_pairs"`
	// Shown is false when the level has fewer than MinSoloPairs solo
	// pairs; the page omits it.
	Shown        bool   `json:"shown"`
	ITLSolo      Num    `json:"itl_solo_median_pct"`
	ITLSame      Num    `json:"itl_same_in_flight_median_pct"`
	LatencySolo  Num    `json:"request_latency_solo_median_pct"`
	TTFTSolo     Num    `json:"ttft_solo_median_pct"`
	Unmatched    int    `json:"unmatched"`
	Mismatched   int    `json:"mismatched_tokens"`
	PairedByNote string `json:"paired_by"`
	// NotBound marks a level whose records do not reproduce the file's
	// published aggregates (binding.go): reported, but flagged.
	NotBound bool `json:"not_bound,omitempty"`
}

// SummarizePairs computes a level's medians.
func SummarizePairs(level float64, po PairOutcome, by string) PairLevel {
	pl := PairLevel{Level: Num(level), Pairs: len(po.Pairs), Unmatched: po.Unmatched, Mismatched: po.Mismatched, PairedByNote: by}
	var itlSolo, itlSame, latSolo, ttftSolo []float64
	for _, p := range po.Pairs {
		itlErr := SignedError(p.B.ITLms(), p.M.ITLms())
		if p.Solo() {
			pl.Solo++
			itlSolo = appendFinite(itlSolo, itlErr)
			latSolo = appendFinite(latSolo, SignedError(float64(p.B.E2E()), float64(p.M.E2E())))
			ttftSolo = appendFinite(ttftSolo, SignedError(float64(p.B.TTFT), float64(p.M.TTFT)))
		}
		if p.SameInFlight() {
			pl.SameInFlight++
			itlSame = appendFinite(itlSame, itlErr)
		}
	}
	pl.Shown = pl.Solo >= MinSoloPairs
	pl.ITLSolo, pl.ITLSame, pl.LatencySolo, pl.TTFTSolo = Num(median(itlSolo)), Num(median(itlSame)), Num(median(latSolo)), Num(median(ttftSolo))
	return pl
}

func appendFinite(xs []float64, x float64) []float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return xs
	}
	return append(xs, x)
}

// InFlightBin is one bin of the ITL-by-load table.
type InFlightBin struct {
	Lo, Hi int    `json:"-"` // Hi < 0: no upper bound
	Label  string `json:"in_flight"`
	Pairs  int    `json:"pairs"`
	Median Num    `json:"itl_median_error_pct"`
}

// binOf is the bin index of an in-flight count: 0, 1, 2–3, 4–7, …, 64+.
func binOf(n int) int {
	if n <= 0 {
		return 0
	}
	b := 1
	for x := n; x > 1; x >>= 1 {
		b++
	}
	return min(b, 7)
}

func binBounds(b int) (int, int) {
	switch {
	case b == 0:
		return 0, 0
	case b == 7:
		return 64, -1
	}
	return 1 << (b - 1), 1<<b - 1
}

// BinLabel is a bin's label as those pages print it: "0-0", "2-3",
// "64-inf".
func BinLabel(lo, hi int) string {
	if hi < 0 {
		return strconv.Itoa(lo) + "-inf"
	}
	return strconv.Itoa(lo) + "-" + strconv.Itoa(hi)
}

// ITLByInFlight bins same-in-flight pairs (pooled over levels) by the
// measured side's in-flight count and gives each bin's median ITL error.
// Empty bins are left out.
func ITLByInFlight(pairs []Pair) []InFlightBin {
	var errs [8][]float64
	for _, p := range pairs {
		if !p.SameInFlight() {
			continue
		}
		e := SignedError(p.B.ITLms(), p.M.ITLms())
		if math.IsNaN(e) || math.IsInf(e, 0) {
			continue
		}
		b := binOf(p.MFl.Mean)
		errs[b] = append(errs[b], e)
	}
	var out []InFlightBin
	for b := range errs {
		if len(errs[b]) == 0 {
			continue
		}
		lo, hi := binBounds(b)
		out = append(out, InFlightBin{Lo: lo, Hi: hi, Label: BinLabel(lo, hi), Pairs: len(errs[b]), Median: Num(median(errs[b]))})
	}
	return out
}

// Slopes are the least-squares slopes of per-request ITL (ms) against
// in-flight count on each side, over the same pairs, and their ratio
// BLIS/measured (1 is exact). A slope is NaN when its side's in-flight
// counts do not vary.
type Slopes struct {
	Pairs    int `json:"pairs"`
	Measured Num `json:"measured_ms_per_request"`
	BLIS     Num `json:"blis_ms_per_request"`
	Ratio    Num `json:"ratio"`
}

// ITLSlopes fits both sides over the same-in-flight pairs.
func ITLSlopes(pairs []Pair) Slopes {
	var mx, my, bx, by []float64
	for _, p := range pairs {
		if !p.SameInFlight() {
			continue
		}
		mi, bi := p.M.ITLms(), p.B.ITLms()
		if math.IsNaN(mi) || math.IsNaN(bi) {
			continue
		}
		mx, my = append(mx, float64(p.MFl.Mean)), append(my, mi)
		bx, by = append(bx, float64(p.BFl.Mean)), append(by, bi)
	}
	m, b := LeastSquaresSlope(mx, my), LeastSquaresSlope(bx, by)
	s := Slopes{Pairs: len(mx), Measured: Num(m), BLIS: Num(b), Ratio: NaN()}
	if m != 0 && !math.IsNaN(m) && !math.IsNaN(b) {
		s.Ratio = Num(b / m)
	}
	return s
}

// LeastSquaresSlope is the ordinary least-squares slope of y on x, NaN
// with fewer than two points or no spread in x.
func LeastSquaresSlope(x, y []float64) float64 {
	if len(x) < 2 || len(x) != len(y) {
		return math.NaN()
	}
	mx, my := Mean(x), Mean(y)
	var sxy, sxx float64
	for i := range x {
		sxy += (x[i] - mx) * (y[i] - my)
		sxx += (x[i] - mx) * (x[i] - mx)
	}
	if sxx == 0 {
		return math.NaN()
	}
	return sxy / sxx
}
