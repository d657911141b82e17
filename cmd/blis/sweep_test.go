package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"blis/sweep/store"
)

// cliEnv, when set to a JSON list of arguments, makes the test binary run
// `blis ARGS...` and exit: the resume test kills such a real process.
const cliEnv = "BLIS_TEST_CLI_ARGS"

func TestMain(m *testing.M) {
	if args := os.Getenv(cliEnv); args != "" {
		var list []string
		if err := json.Unmarshal([]byte(args), &list); err != nil {
			os.Exit(3)
		}
		os.Exit(run(list, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// A small grid with infeasible points (70B does not fit one H100) and a
// zipped pair; 2,000-request points are the benchmark's, these are small.
const testGrid = `name: t
base: {model: llama-3.1-70b, hardware: h100, num-prompts: 40, random-input-len: 256, random-output-len: 64}
axes:
  tensor-parallel-size: [1, 4, 8]
zip:
  - {max-num-seqs: [32, 128], max-num-batched-tokens: [2048, 8192]}
load:
  max-concurrency: [2, 16]
exclude:
  - {tensor-parallel-size: 8, max-num-seqs: 32, max-concurrency: 2}
`

func writeGrid(t *testing.T, dir, text string) string {
	t.Helper()
	p := filepath.Join(dir, "grid.yaml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func sweepCLI(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return out.String(), errb.String(), code
}

func sweepMust(t *testing.T, args ...string) string {
	t.Helper()
	out, errs, code := sweepCLI(t, args...)
	if code != 0 {
		t.Fatalf("blis %s: exit %d\n%s", strings.Join(args, " "), code, errs)
	}
	return out
}

// Every stored point's result JSON is what `blis run` of the point's
// scenario file writes with --save-result, byte for byte; infeasible
// points are recorded with the reason.
func TestSweepPointIsBlisRun(t *testing.T) {
	dir := t.TempDir()
	g := writeGrid(t, dir, testGrid)
	sdir := filepath.Join(dir, "s")
	sweepMust(t, "sweep", g, "--out", sdir, "--jobs", "2", "-q")
	tab, err := store.Load(sdir)
	if err != nil {
		t.Fatal(err)
	}
	if len(tab.Rows) != 11 {
		t.Fatalf("%d points, want 11", len(tab.Rows))
	}
	ok, infeasible := 0, 0
	for _, r := range tab.Rows {
		idx := r[0].(int64)
		switch r[tab.Col("status")] {
		case store.StatusInfeasible:
			infeasible++
			if reason := r[tab.Col("reason")].(string); !strings.Contains(reason, "does not fit") {
				t.Errorf("point %d: reason %q", idx, reason)
			}
			continue
		case store.StatusOK:
			ok++
		default:
			t.Fatalf("point %d: status %v", idx, r[tab.Col("status")])
		}
		scen := sweepMust(t, "sweep", "show", sdir, "--point", itoa(idx), "--scenario")
		pf := filepath.Join(dir, "p.yaml")
		if err := os.WriteFile(pf, []byte(scen), 0o644); err != nil {
			t.Fatal(err)
		}
		rf := filepath.Join(dir, "run.json")
		sweepMust(t, "run", pf, "--save-result", "--result-filename", rf, "-q")
		want, _ := os.ReadFile(rf)
		got, err := os.ReadFile(filepath.Join(sdir, r[tab.Col("result")].(string)))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("point %d: stored JSON differs from blis run of its scenario", idx)
		}
		if r[tab.Col("gpus")].(int64) != r[tab.Col("tensor-parallel-size")].(int64) {
			t.Errorf("point %d: gpus %v", idx, r[tab.Col("gpus")])
		}
		for _, c := range []string{"p50_ttft_ms", "p90_tpot_ms", "p99_e2el_ms", "interactivity", "output_throughput_per_gpu"} {
			if v, _ := r[tab.Col(c)].(float64); !(v > 0) {
				t.Errorf("point %d: %s = %v", idx, c, r[tab.Col(c)])
			}
		}
	}
	if ok != 7 || infeasible != 4 {
		t.Errorf("%d ok, %d infeasible; want 7 and 4", ok, infeasible)
	}
	show := sweepMust(t, "sweep", "show", sdir)
	if !strings.Contains(show, "11 of 11 points stored, 7 ok, 4 infeasible") {
		t.Errorf("show:\n%s", show)
	}
	// A second run finds every point stored and changes nothing.
	before, _ := os.ReadFile(filepath.Join(sdir, store.DBName))
	_, errs, _ := sweepCLI(t, "sweep", g, "--out", sdir)
	after, _ := os.ReadFile(filepath.Join(sdir, store.DBName))
	if !bytes.Equal(before, after) || !strings.Contains(errs, "0 run now, 11 already there") {
		t.Errorf("a resume of a finished sweep changed the store or ran points: %s", errs)
	}
}

func itoa(i int64) string { return strconv.FormatInt(i, 10) }

// storeFiles reads every file of a store, by relative path.
func storeFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out[rel], err = os.ReadFile(p)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameStores(t *testing.T, a, b string) {
	t.Helper()
	fa, fb := storeFiles(t, a), storeFiles(t, b)
	if len(fa) != len(fb) {
		t.Errorf("%s has %d files, %s has %d", a, len(fa), b, len(fb))
	}
	for name, data := range fa {
		if !bytes.Equal(data, fb[name]) {
			t.Errorf("%s differs between %s and %s", name, a, b)
		}
	}
	ca := sweepMust(t, "sweep", "export", a, "--csv", "-")
	cb := sweepMust(t, "sweep", "export", b, "--csv", "-")
	if ca != cb {
		t.Errorf("the CSV exports of %s and %s differ", a, b)
	}
}

// Four shards merged give the store of the unsharded sweep: the same
// database file, the same point files, the same export.
func TestSweepShardsMergeIdentical(t *testing.T) {
	dir := t.TempDir()
	g := writeGrid(t, dir, testGrid)
	whole := filepath.Join(dir, "whole")
	sweepMust(t, "sweep", g, "--out", whole, "-q")
	var shards []string
	for i := range 4 {
		sd := filepath.Join(dir, "shard"+itoa(int64(i)))
		args := []string{"sweep", g, "--out", sd, "--shard-count", "4", "-q", "--jobs", "1"}
		if i == 3 {
			t.Setenv("JOB_COMPLETION_INDEX", "3") // as an Indexed Job's pod
		} else {
			args = append(args, "--shard-index", itoa(int64(i)))
		}
		sweepMust(t, args...)
		shards = append(shards, sd)
	}
	merged := filepath.Join(dir, "merged")
	// Shard 0 twice: a duplicate that agrees is accepted.
	sweepMust(t, append([]string{"sweep", "merge", merged}, append(shards, shards[0])...)...)
	sameStores(t, whole, merged)

	// A shard of another grid is refused.
	other := writeGrid(t, t.TempDir(), strings.Replace(testGrid, "num-prompts: 40", "num-prompts: 41", 1))
	od := filepath.Join(dir, "other")
	sweepMust(t, "sweep", other, "--out", od, "--shard-count", "4", "--shard-index", "0", "-q")
	_, errs, code := sweepCLI(t, "sweep", "merge", filepath.Join(dir, "m2"), shards[0], od)
	if code != 2 || !strings.Contains(errs, "another grid") {
		t.Errorf("merge of two grids: exit %d, %s", code, errs)
	}
	// A shard's store given to another shard is refused.
	_, errs, code = sweepCLI(t, "sweep", g, "--out", shards[0], "--shard-count", "4", "--shard-index", "1")
	if code != 2 || !strings.Contains(errs, "holds shard 0/4") {
		t.Errorf("shard store reused: exit %d, %s", code, errs)
	}
}

// Resume after a real kill: a `blis sweep` process is SIGKILLed once some
// points are stored; the resumed sweep keeps them (runs only the rest) and
// ends with the store an uninterrupted sweep gives.
func TestSweepResumeAfterKill(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a subprocess sweep")
	}
	dir := t.TempDir()
	text := strings.Replace(testGrid, "num-prompts: 40", "num-prompts: 300", 1)
	text = strings.Replace(text, "max-concurrency: [2, 16]", "max-concurrency: [2, 4, 8, 16]", 1)
	g := writeGrid(t, dir, text)
	killed := filepath.Join(dir, "killed")
	args, _ := json.Marshal([]string{"sweep", g, "--out", killed, "--jobs", "1", "-q"})
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), cliEnv+"="+string(args))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stored := 0
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		if tab, err := store.Load(killed); err == nil && len(tab.Rows) >= 3 {
			stored = len(tab.Rows)
			break
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	if stored == 0 {
		t.Fatalf("no point stored before the deadline (process: %v)", err)
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
		t.Skipf("the sweep finished before the kill (%d points stored); nothing to resume", stored)
	}
	tab, err := store.Load(killed)
	if err != nil {
		t.Fatal(err)
	}
	kept := len(tab.Rows)
	if kept < stored {
		t.Fatalf("%d points stored before the kill, %d after", stored, kept)
	}
	if kept == int(tab.Info.Points) {
		t.Skip("every point was stored before the kill landed")
	}
	_, errs, code := sweepCLI(t, "sweep", g, "--out", killed, "-q")
	if code != 0 {
		t.Fatal(errs)
	}
	if want := itoa(int64(kept)) + " already there"; !strings.Contains(errs, want) {
		t.Errorf("resume: %q lacks %q", errs, want)
	}
	whole := filepath.Join(dir, "whole")
	sweepMust(t, "sweep", g, "--out", whole, "-q")
	sameStores(t, whole, killed)
}

func TestSweepBadInput(t *testing.T) {
	dir := t.TempDir()
	g := writeGrid(t, dir, testGrid)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"sweep", writeGrid(t, t.TempDir(), "axes:\n  max-num-seq: [1]\n")}, "grid.yaml:2: max-num-seq: not a scenario key; did you mean max-num-seqs?"},
		{[]string{"sweep", g, "--max-points", "5"}, "the grid has 12 points before exclusions"},
		{[]string{"sweep", g, "--shard-index", "1"}, "--shard-index needs --shard-count"},
		{[]string{"sweep", g, "--shard-count", "2", "--shard-index", "2"}, "shard index 2: must be from 0 to 1"},
		{[]string{"sweep", g, "--shard-count", "2"}, "JOB_COMPLETION_INDEX"},
		{[]string{"sweep", filepath.Join(dir, "nope.yaml")}, "cannot read the grid"},
		{[]string{"sweep"}, "sweep takes one grid file"},
		{[]string{"sweep", "show", dir}, "not a sweep store"},
		{[]string{"sweep", "export", dir}, "export needs --csv"},
		{[]string{"sweep", "merge", dir}, "at least one shard store"},
	} {
		_, errs, code := sweepCLI(t, c.args...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("blis %s: exit %d, %q; want 2 and %q", strings.Join(c.args, " "), code, errs, c.want)
		}
	}
	// No work was done: no store was created (the default --out is the
	// grid's name, in the working directory).
	if _, err := os.Stat("t"); err == nil {
		t.Error("a bad invocation created a store")
	}
}

func TestSweepExport(t *testing.T) {
	dir := t.TempDir()
	g := writeGrid(t, dir, testGrid)
	sdir := filepath.Join(dir, "s")
	sweepMust(t, "sweep", g, "--out", sdir, "-q")
	csvPath, pqPath := filepath.Join(dir, "p.csv"), filepath.Join(dir, "p.parquet")
	sweepMust(t, "sweep", "export", sdir, "--csv", csvPath, "--parquet", pqPath)
	for _, p := range []string{csvPath, pqPath} {
		// Exports are ordinary files, not the temporary file's 0600.
		if fi, err := os.Stat(p); err != nil {
			t.Error(err)
		} else if fi.Mode().Perm() != 0o644 {
			t.Errorf("%s: mode %v, want 0644", p, fi.Mode().Perm())
		}
	}
	data, _ := os.ReadFile(csvPath)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if !strings.HasPrefix(lines[0], "idx,id,status,reason,seed,tensor-parallel-size,max-num-seqs,max-num-batched-tokens,max-concurrency,scenario,result,completed") {
		t.Errorf("CSV header %s", lines[0])
	}
	f, err := os.Open(pqPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for j, fld := range pf.Schema().Fields() {
		col[fld.Name()] = j
	}
	rows := make([]parquet.Row, 100)
	n, _ := parquet.NewReader(pf).ReadRows(rows)
	if n != 11 || len(col) != 0 && len(col) != len(strings.Split(lines[0], ",")) {
		t.Fatalf("%d parquet rows, %d columns", n, len(col))
	}
	tab, _ := store.Load(sdir)
	for i, r := range rows[:n] {
		if got := string(r[col["id"]].ByteArray()); got != tab.Rows[i][1] {
			t.Errorf("parquet row %d: id %s", i, got)
		}
		if got := r[col["tensor-parallel-size"]].Int64(); got != tab.Rows[i][tab.Col("tensor-parallel-size")] {
			t.Errorf("parquet row %d: tp %d", i, got)
		}
		v := r[col["output_throughput"]]
		if ok := tab.Rows[i][tab.Col("status")] == store.StatusOK; ok == v.IsNull() || ok && v.Double() != tab.Rows[i][tab.Col("output_throughput")] {
			t.Errorf("parquet row %d: output_throughput %v", i, v)
		}
	}
}

// A point whose run served nothing (every request timed out) is stored as
// unserved with the reason, not fatal.
func TestSweepUnserved(t *testing.T) {
	dir := t.TempDir()
	g := writeGrid(t, dir, "name: u\nbase: {model: llama-3.1-8b, hardware: h100, num-prompts: 10}\naxes:\n  request-timeout-seconds: [0.001, 0]\n")
	sdir := filepath.Join(dir, "u")
	sweepMust(t, "sweep", g, "--out", sdir, "-q")
	tab, err := store.Load(sdir)
	if err != nil {
		t.Fatal(err)
	}
	st, reason := tab.Col("status"), tab.Col("reason")
	if len(tab.Rows) != 2 || tab.Rows[0][st] != store.StatusUnserved || !strings.Contains(tab.Rows[0][reason].(string), "no request succeeded") || tab.Rows[1][st] != store.StatusOK {
		t.Errorf("rows: %v", tab.Rows)
	}
	if tab.Rows[0][tab.Col("result")] != nil {
		t.Error("an unserved point has a result file")
	}
}
