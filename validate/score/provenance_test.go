package score

import "testing"

func TestArmVerdictRule(t *testing.T) {
	m := ProvRow{Verdict: Match}
	for _, c := range []struct {
		rows         []ProvRow
		reproducible bool
		want         string
	}{
		{[]ProvRow{m, m}, true, Exact},
		{[]ProvRow{m, {Verdict: Unstated}}, true, Partial},
		{[]ProvRow{m, {Verdict: Mismatch, Removable: true}}, true, Partial},
		{[]ProvRow{m}, false, NotReproducible},
		{nil, true, Exact},
	} {
		if got := ArmVerdict(c.rows, c.reproducible); got != c.want {
			t.Errorf("%+v: %s, want %s", c.rows, got, c.want)
		}
	}
}

func TestEngineMatches(t *testing.T) {
	for v, want := range map[string]bool{
		EngineVersion: true, EngineVersion + ".2": true, EngineVersion + "0": false, EngineVersion + "rc1": false, "0.10.2": false, "": false,
	} {
		if got := EngineMatches(v); got != want {
			t.Errorf("EngineMatches(%q) = %v, want %v", v, got, want)
		}
	}
}
