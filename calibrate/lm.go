package calibrate

import (
	"math"
)

// model predicts one row's latency in seconds from parameters p (already
// mapped to their natural scale). It must be deterministic and cheap.
type model func(p []float64, row int) float64

// problem is a least-squares fit of log(prediction / measurement) over a set
// of rows: minimising the squared log ratio weighs a 2 µs kernel that is 20 %
// off like a 20 ms kernel that is 20 % off, which is what MAPE judges.
type problem struct {
	rows []int     // indices into the measurement arrays
	y    []float64 // measured seconds, indexed by row
	f    model
	// Parameters are searched in an unconstrained space θ; param maps θ to
	// the law's value (exp for positive quantities, logistic for fractions).
	kinds []paramKind
	// w, when set, weighs each row's squared residual (indexed like rows).
	w []float64
}

type paramKind int

const (
	positive paramKind = iota // p = exp(θ)
	fraction                  // p = 1/(1+exp(−θ)), in (0, 1)
	free                      // p = θ
)

func toParam(k paramKind, th float64) float64 {
	switch k {
	case positive:
		return math.Exp(th)
	case fraction:
		return 1 / (1 + math.Exp(-th))
	}
	return th
}

func toTheta(k paramKind, p float64) float64 {
	switch k {
	case positive:
		return math.Log(p)
	case fraction:
		return math.Log(p / (1 - p))
	}
	return p
}

func (pr *problem) params(th, p []float64) {
	for i, k := range pr.kinds {
		p[i] = toParam(k, th[i])
	}
}

// residuals fills r with log(pred/meas) and returns the sum of squares. A
// non-finite or non-positive prediction is a huge residual.
func (pr *problem) residuals(th, p, r []float64) float64 {
	pr.params(th, p)
	var ss float64
	for i, row := range pr.rows {
		v := pr.f(p, row)
		var e float64
		if v > 0 && !math.IsInf(v, 0) && !math.IsNaN(v) {
			e = math.Log(v / pr.y[row])
		} else {
			e = 50
		}
		if pr.w != nil {
			e *= pr.w[i]
		}
		r[i] = e
		ss += e * e
	}
	return ss
}

// maxStep bounds one step in the search space θ.
const maxStep = 1.0

// solve runs Levenberg–Marquardt from p0 (natural scale) and returns the
// fitted parameters. Deterministic: no randomness, fixed iteration order.
func (pr *problem) solve(p0 []float64) []float64 {
	np, nr := len(p0), len(pr.rows)
	th := make([]float64, np)
	for i, k := range pr.kinds {
		th[i] = toTheta(k, p0[i])
	}
	p := make([]float64, np)
	r := make([]float64, nr)
	r2 := make([]float64, nr)
	J := make([]float64, nr*np)
	thT := make([]float64, np)
	A := make([]float64, np*np)
	g := make([]float64, np)
	delta := make([]float64, np)
	ss := pr.residuals(th, p, r)
	lambda := 1e-3
	for iter := 0; iter < 300; iter++ {
		// Forward-difference Jacobian in θ.
		for j := 0; j < np; j++ {
			copy(thT, th)
			h := 1e-6 * math.Max(1, math.Abs(th[j]))
			thT[j] += h
			pr.residuals(thT, p, r2)
			for i := 0; i < nr; i++ {
				J[i*np+j] = (r2[i] - r[i]) / h
			}
		}
		for a := 0; a < np; a++ {
			g[a] = 0
			for b := 0; b < np; b++ {
				A[a*np+b] = 0
			}
		}
		for i := 0; i < nr; i++ {
			row := J[i*np : (i+1)*np]
			for a := 0; a < np; a++ {
				g[a] += row[a] * r[i]
				for b := 0; b <= a; b++ {
					A[a*np+b] += row[a] * row[b]
				}
			}
		}
		for a := 0; a < np; a++ {
			for b := a + 1; b < np; b++ {
				A[a*np+b] = A[b*np+a]
			}
		}
		improved := false
		for tries := 0; tries < 30; tries++ {
			if !dampedStep(A, g, lambda, delta, np) {
				lambda *= 10
				continue
			}
			// Trust region in θ: no parameter moves by more than a factor
			// e^maxStep (or that much in logit) per step, so one long step
			// cannot throw a parameter onto a flat plateau (a ramp's half
			// point at 1e-30) it never returns from.
			big := 0.0
			for _, d := range delta {
				big = math.Max(big, math.Abs(d))
			}
			scale := 1.0
			if big > maxStep {
				scale = maxStep / big
			}
			for j := range thT {
				thT[j] = th[j] - scale*delta[j]
			}
			ss2 := pr.residuals(thT, p, r2)
			if ss2 < ss {
				rel := (ss - ss2) / math.Max(ss, 1e-300)
				copy(th, thT)
				r, r2 = r2, r
				ss = ss2
				lambda = math.Max(lambda/10, 1e-12)
				improved = true
				if rel < 1e-9 {
					iter = 1 << 30
				}
				break
			}
			lambda *= 10
		}
		if !improved {
			break
		}
	}
	pr.params(th, p)
	return p
}

// solveL1 minimises the sum of |log(pred/meas)| — close to the MAPE that
// judges the laws — by iteratively reweighted least squares from the
// least-squares solution: each round weighs a row by 1/sqrt(max(|r|, δ)).
func (pr *problem) solveL1(p0 []float64, rounds int) []float64 {
	p := pr.solve(p0)
	pr.w = make([]float64, len(pr.rows))
	for round := 0; round < rounds; round++ {
		for i, row := range pr.rows {
			e := math.Abs(math.Log(pr.f(p, row) / pr.y[row]))
			pr.w[i] = 1 / math.Sqrt(math.Max(e, 0.01))
		}
		p = pr.solve(p)
	}
	pr.w = nil
	return p
}

// dampedStep solves (A + λ·diag(A)) δ = g by Gaussian elimination with
// partial pivoting; false when singular.
func dampedStep(A, g []float64, lambda float64, delta []float64, n int) bool {
	M := make([]float64, n*(n+1))
	for a := 0; a < n; a++ {
		for b := 0; b < n; b++ {
			M[a*(n+1)+b] = A[a*n+b]
		}
		d := A[a*n+a]
		if d <= 0 {
			d = 1e-12
		}
		M[a*(n+1)+a] += lambda * d
		M[a*(n+1)+n] = g[a]
	}
	for c := 0; c < n; c++ {
		piv := c
		for r := c + 1; r < n; r++ {
			if math.Abs(M[r*(n+1)+c]) > math.Abs(M[piv*(n+1)+c]) {
				piv = r
			}
		}
		if M[piv*(n+1)+c] == 0 {
			return false
		}
		if piv != c {
			for k := 0; k <= n; k++ {
				M[c*(n+1)+k], M[piv*(n+1)+k] = M[piv*(n+1)+k], M[c*(n+1)+k]
			}
		}
		for r := c + 1; r < n; r++ {
			f := M[r*(n+1)+c] / M[c*(n+1)+c]
			for k := c; k <= n; k++ {
				M[r*(n+1)+k] -= f * M[c*(n+1)+k]
			}
		}
	}
	for r := n - 1; r >= 0; r-- {
		s := M[r*(n+1)+n]
		for k := r + 1; k < n; k++ {
			s -= M[r*(n+1)+k] * delta[k]
		}
		delta[r] = s / M[r*(n+1)+r]
		if math.IsNaN(delta[r]) || math.IsInf(delta[r], 0) {
			return false
		}
	}
	return true
}

// mape is the mean absolute percentage error of the model over rows.
func (pr *problem) mape(p []float64, rows []int) float64 {
	if len(rows) == 0 {
		return math.NaN()
	}
	var s float64
	for _, row := range rows {
		s += math.Abs(pr.f(p, row)/pr.y[row] - 1)
	}
	return 100 * s / float64(len(rows))
}
