package page

import (
	"bytes"
	"strings"
	"testing"

	"blis/validate/score"
)

func gatePage(mape float64, points int) *Page {
	return &Page{Name: "g", TolerancePP: 1, Arms: []*ArmPage{{Name: "a", Population: []MetricPop{
		{Metric: "TTFT mean", PopStats: score.PopStats{Points: points, MAPE: score.Num(mape), SignedMean: score.Num(-mape)}},
	}}}}
}

func TestGate(t *testing.T) {
	var b bytes.Buffer
	if err := NewBaseline(gatePage(10, 5)).WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	base, err := ReadBaseline("g.baseline.json", b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		pg       *Page
		ok       bool
		improved bool
		want     string
	}{
		{"same", gatePage(10, 5), true, false, ""},
		{"within tolerance", gatePage(10.9, 5), true, false, ""},
		{"worse", gatePage(11.2, 5), false, false, "MAPE 11.20%, baseline 10.00% (+1.20 pp > 1 pp tolerance)"},
		{"fewer points", gatePage(10, 4), false, false, "4 points, baseline 5"},
		{"no longer computable", gatePage(score.NaN().F(), 5), false, false, "no longer computable"},
		{"gone", &Page{Name: "g"}, false, false, "no longer scored"},
		{"better", gatePage(5, 5), true, true, ""},
	} {
		res := Check(base, c.pg, 1)
		if res.OK() != c.ok || (len(res.Improved) > 0) != c.improved {
			t.Errorf("%s: %+v", c.name, res)
		}
		if c.want != "" && (len(res.Failures) == 0 || !strings.Contains(res.Failures[0], c.want)) {
			t.Errorf("%s: failures %q, want %q", c.name, res.Failures, c.want)
		}
	}
	if _, err := ReadBaseline("x.json", []byte(`{"validation":"g","extra":1}`)); err == nil {
		t.Error("unknown field accepted")
	}
}

func FuzzReadBaseline(f *testing.F) {
	var b bytes.Buffer
	NewBaseline(gatePage(10, 5)).WriteJSON(&b)
	f.Add(b.String())
	f.Add(`{"headlines":[{"arm":"a","metric":"m","points":1,"mape_pct":null}]}`)
	f.Fuzz(func(t *testing.T, s string) {
		base, err := ReadBaseline("f.json", []byte(s))
		if err != nil {
			return
		}
		// Whatever it holds, checking a page against it must not panic.
		Check(base, gatePage(3, 2), 1)
	})
}
