// Package store keeps a sweep's results in a directory: an embedded SQLite
// database (pure Go, modernc.org/sqlite: no cgo, so the one static binary
// runs on any node of a cluster) with one row per point, and each point's
// result JSON beside it in points/.
//
// The JSON files are kept as files, not blobs: each is exactly the file
// `blis run <point's scenario> --save-result` writes, so any tool that reads
// vLLM bench results reads them as they are, a diff of two points is a
// diff of two files, and the database stays small enough to rebuild in
// index order at the end of a run. That rebuild gives the store one
// canonical form: a sweep run whole, resumed, or run as shards and merged
// ends with the same database file, byte for byte.
package store

import (
	"bytes"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver

	"blis/metrics"
	"blis/scenario"
	"blis/sweep/grid"
)

// DBName is the database's file name in a store directory; PointsDir holds
// the points' result JSON files.
const (
	DBName    = "sweep.db"
	PointsDir = "points"
)

// A point's status.
const (
	// StatusOK is a point that ran and served requests.
	StatusOK = "ok"
	// StatusInfeasible is a point whose deployment cannot exist (the model
	// does not fit, TP does not divide the heads, the KV pool holds less
	// than one request): Resolve's reason.
	StatusInfeasible = "infeasible"
	// StatusUnserved is a point that ran but served nothing (every
	// request failed or none was sent).
	StatusUnserved = "unserved"
)

// MetricColumns are the summary columns of the points table, in order;
// MetricsOf fills them.
var MetricColumns = func() []string {
	cols := []string{
		"completed", "failed", "duration_s",
		"request_throughput", "output_throughput", "total_token_throughput",
		"gpus", "output_throughput_per_gpu", "total_token_throughput_per_gpu",
	}
	for _, m := range []string{"ttft", "tpot", "itl", "e2el"} {
		cols = append(cols, "mean_"+m+"_ms", "p50_"+m+"_ms", "p90_"+m+"_ms", "p99_"+m+"_ms")
	}
	return append(cols, "interactivity", "request_goodput", "preemptions", "kv_cache_tokens", "prefix_cache_hit_rate")
}()

// MetricsOf is a finished run's row of MetricColumns, gpus the GPUs the
// deployment uses (TP × PP × DP × replicas over every pool). A percentile
// the run did not compute is NULL, and so is goodput when no SLO was set.
// Interactivity is InferenceX's median_intvty, tokens/s per user
// (metrics.Interactivity: 1000 / median TPOT ms, 0 when no request had two
// tokens).
func MetricsOf(r *metrics.Result, gpus int) []any {
	perGPU := func(v float64) any {
		if gpus <= 0 {
			return nil
		}
		return v / float64(gpus)
	}
	pct := func(st metrics.Stat, p float64) any {
		if i := slices.Index(r.Percentiles, p); i >= 0 && i < len(st.Percentiles) {
			return st.Percentiles[i]
		}
		if p == 50 {
			return st.Median
		}
		return nil
	}
	row := []any{
		int64(r.Completed), int64(r.Failed), r.DurationS,
		r.RequestThroughput, r.OutputThroughput, r.TotalTokenThroughput,
		int64(gpus), perGPU(r.OutputThroughput), perGPU(r.TotalTokenThroughput),
	}
	for _, st := range []metrics.Stat{r.TTFT, r.TPOT, r.ITL, r.E2EL} {
		row = append(row, st.Mean, pct(st, 50), pct(st, 90), pct(st, 99))
	}
	var goodput any
	if r.HasGoodput {
		goodput = r.RequestGoodput
	}
	return append(row, metrics.Interactivity(r.TPOT.Median), goodput, int64(r.NumPreemptions), int64(r.GPUKVCacheTokens), r.PrefixCacheHitRate)
}

// Record is one finished point as the store keeps it.
type Record struct {
	Point  grid.Point
	Status string
	Reason string // why a point is not ok; "" when ok
	// Metrics is MetricsOf's row for an ok point; nil otherwise.
	Metrics []any
	// JSON is an ok point's result JSON; nil otherwise.
	JSON []byte
}

// Shard says which points a store holds: those with index % Count ==
// Index (round-robin, so every shard gets a share of each region of the
// grid and shards finish together). Count 0 or 1 is the whole grid.
type Shard struct{ Index, Count int }

// Has reports whether the shard runs point index i.
func (s Shard) Has(i int) bool { return s.Count <= 1 || i%s.Count == s.Index }

func (s Shard) String() string {
	if s.Count <= 1 {
		return ""
	}
	return fmt.Sprintf("%d/%d", s.Index, s.Count)
}

// Store is an open store, safe for concurrent Put.
type Store struct {
	dir  string
	db   *sql.DB
	keys []string // the axis columns
	mu   sync.Mutex
}

// Open opens the store in dir for g (creating it when absent). An existing
// store of another grid, or of another shard, is an error: a resume must
// run the same points.
func Open(dir string, g *grid.Grid, total int, shard Shard) (*Store, error) {
	if err := os.MkdirAll(filepath.Join(dir, PointsDir), 0o755); err != nil {
		return nil, &scenario.InputError{Key: "--out", Value: dir, Msg: "cannot create the store: " + unwrap(err)}
	}
	path := filepath.Join(dir, DBName)
	cleanLeftovers(dir)
	db, err := openDB(path)
	if err != nil {
		return nil, err
	}
	// A database without tables is new, or was left by a kill before its
	// tables were committed: either way the store starts afresh.
	var tables int64
	if err := db.QueryRow("SELECT COUNT(*) FROM sqlite_master").Scan(&tables); err != nil {
		db.Close()
		return nil, &scenario.InputError{Key: "--out", Value: dir, Msg: fmt.Sprintf("%s is not a sweep store: %v", DBName, err)}
	}
	fresh := tables == 0
	st := &Store{dir: dir, db: db, keys: columnKeys(g)}
	if fresh {
		if err := create(db, g, total, shard); err != nil {
			db.Close()
			return nil, err
		}
		return st, nil
	}
	info, err := readInfo(db)
	if err != nil {
		db.Close()
		return nil, &scenario.InputError{Key: "--out", Value: dir, Msg: fmt.Sprintf("%s is not a sweep store (%v); give another --out", DBName, err)}
	}
	if info.Hash != g.Hash {
		db.Close()
		return nil, &scenario.InputError{Key: "--out", Value: dir, Msg: fmt.Sprintf("holds a sweep of another grid (%s, hash %.12s; this grid's is %.12s); give another --out, or the grid that made it", info.Name, info.Hash, g.Hash)}
	}
	if info.Shard != shard.String() && info.Shard != "" {
		db.Close()
		return nil, &scenario.InputError{Key: "--out", Value: dir, Msg: fmt.Sprintf("holds shard %s of the grid, not %s; give each shard its own --out", info.Shard, cmpOr(shard.String(), "the whole grid"))}
	}
	// A whole (or merged) store given to a shard is accepted: the
	// shard's points are a subset of its points.
	return st, nil
}

// cleanLeftovers removes what a killed run can leave half-written: a result
// file not yet renamed into place, a canonical rebuild not yet renamed
// over the database (SQLite's own journal is rolled back on open).
func cleanLeftovers(dir string) {
	tmps, _ := filepath.Glob(filepath.Join(dir, PointsDir, "*.tmp"))
	for _, f := range tmps {
		os.Remove(f)
	}
	rebuild := filepath.Join(dir, DBName+".rebuild")
	os.Remove(rebuild)
	os.Remove(rebuild + "-journal")
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func unwrap(err error) string {
	if u := errors.Unwrap(err); u != nil {
		return u.Error()
	}
	return err.Error()
}

func openDB(path string) (*sql.DB, error) {
	db, err := sql.Open("sqlite", path)
	if err != nil {
		return nil, err
	}
	// One connection: the writes are serialised here anyway, and a single
	// connection keeps PRAGMAs in force.
	db.SetMaxOpenConns(1)
	if _, err := db.Exec("PRAGMA busy_timeout = 10000"); err != nil {
		db.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return db, nil
}

// columnKeys are the axis keys that get their own column (seed has the
// point's own column already).
func columnKeys(g *grid.Grid) []string {
	var out []string
	for _, k := range g.Keys() {
		if k != "seed" {
			out = append(out, k)
		}
	}
	return out
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// schema is the store's tables. The grid table holds the grid file and its
// hash; meta holds the shard of a shard's store; points has one row per
// finished point: its place, ID, status, seed, axis values, scenario file,
// result file and summary metrics.
func schema(keys []string) []string {
	var cols []string
	cols = append(cols, "idx INTEGER PRIMARY KEY", "id TEXT NOT NULL", "status TEXT NOT NULL", "reason TEXT NOT NULL", "seed INTEGER NOT NULL")
	for _, k := range keys {
		cols = append(cols, quoteIdent(k)) // no declared type: ints, reals and text as the axis holds them
	}
	cols = append(cols, "scenario TEXT NOT NULL", "result TEXT")
	for _, m := range MetricColumns {
		switch m {
		case "completed", "failed", "gpus", "preemptions", "kv_cache_tokens":
			cols = append(cols, m+" INTEGER")
		default:
			cols = append(cols, m+" REAL")
		}
	}
	return []string{
		"CREATE TABLE grid (name TEXT NOT NULL, hash TEXT NOT NULL, points INTEGER NOT NULL, text TEXT NOT NULL)",
		"CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
		"CREATE TABLE points (\n  " + strings.Join(cols, ",\n  ") + "\n)",
		"CREATE INDEX points_status ON points (status)",
	}
}

func create(db *sql.DB, g *grid.Grid, total int, shard Shard) error {
	tx, err := db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, q := range schema(columnKeys(g)) {
		if _, err := tx.Exec(q); err != nil {
			return fmt.Errorf("creating the store: %w", err)
		}
	}
	if _, err := tx.Exec("INSERT INTO grid VALUES (?, ?, ?, ?)", g.Name, g.Hash, int64(total), string(g.Text)); err != nil {
		return err
	}
	if s := shard.String(); s != "" {
		if _, err := tx.Exec("INSERT INTO meta VALUES ('shard', ?)", s); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// Info is a store's grid row and shard.
type Info struct {
	Name, Hash string
	Points     int // the grid's points after exclusions
	Text       string
	Shard      string // "I/N" for a shard's store, "" otherwise
}

func readInfo(db *sql.DB) (Info, error) {
	var in Info
	var n int64
	if err := db.QueryRow("SELECT name, hash, points, text FROM grid").Scan(&in.Name, &in.Hash, &n, &in.Text); err != nil {
		return in, err
	}
	in.Points = int(n)
	err := db.QueryRow("SELECT value FROM meta WHERE key = 'shard'").Scan(&in.Shard)
	if errors.Is(err, sql.ErrNoRows) {
		err = nil
	}
	return in, err
}

// Done lists the indexes of the points the store holds: a resume skips
// them.
func (s *Store) Done() (map[int]bool, error) {
	rows, err := s.db.Query("SELECT idx FROM points")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[int]bool{}
	for rows.Next() {
		var i int64
		if err := rows.Scan(&i); err != nil {
			return nil, err
		}
		out[int(i)] = true
	}
	return out, rows.Err()
}

// ResultName is an ok point's result file, relative to the store.
func ResultName(p grid.Point) string {
	return filepath.ToSlash(filepath.Join(PointsDir, fmt.Sprintf("%06d-%s.json", p.Index, p.ID)))
}

// Put stores one finished point: its result JSON first (written whole, then
// renamed into place), then its row in one transaction, so a kill at any
// moment leaves either the point stored or not at all.
func (s *Store) Put(r Record) error {
	var result any
	if r.Status == StatusOK {
		name := ResultName(r.Point)
		path := filepath.Join(s.dir, filepath.FromSlash(name))
		if err := writeFileAtomic(path, r.JSON); err != nil {
			return err
		}
		result = name
	}
	args := []any{int64(r.Point.Index), r.Point.ID, r.Status, r.Reason, r.Point.Seed}
	for _, k := range s.keys {
		args = append(args, axisValue(r.Point, k))
	}
	args = append(args, string(r.Point.Scenario), result)
	if r.Metrics != nil {
		if len(r.Metrics) != len(MetricColumns) {
			return fmt.Errorf("point %d: %d metrics for %d columns", r.Point.Index, len(r.Metrics), len(MetricColumns))
		}
		for _, m := range r.Metrics {
			args = append(args, finite(m))
		}
	} else {
		for range MetricColumns {
			args = append(args, nil)
		}
	}
	q := "INSERT OR REPLACE INTO points VALUES (" + strings.TrimSuffix(strings.Repeat("?, ", len(args)), ", ") + ")"
	s.mu.Lock()
	defer s.mu.Unlock()
	_, err := s.db.Exec(q, args...)
	return err
}

// finite stores NaN and ±Inf as NULL (SQLite has no NaN; the metrics
// package promises none, this is belt and braces).
func finite(v any) any {
	if f, ok := v.(float64); ok && (math.IsNaN(f) || math.IsInf(f, 0)) {
		return nil
	}
	return v
}

// axisValue is a point's value of key as SQLite holds it: an integer or a
// finite real where the text is one, else the text.
func axisValue(p grid.Point, key string) any {
	for _, kv := range p.Values {
		if kv.Key != key {
			continue
		}
		if i, err := strconv.ParseInt(kv.Value, 10, 64); err == nil {
			return i
		}
		if f, err := strconv.ParseFloat(kv.Value, 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
			return f
		}
		return kv.Value
	}
	return nil
}

func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Finalize rebuilds the store's database in its canonical form: a fresh
// file with the same tables, the rows inserted in index order in one
// transaction, then renamed over the old one. Two stores holding the same
// points of the same grid are then the same file, however their points
// were run (in any order, resumed, sharded and merged).
func Finalize(dir string) error {
	path := filepath.Join(dir, DBName)
	t, err := Load(dir)
	if err != nil {
		return err
	}
	return writeCanonical(path, t)
}

func writeCanonical(path string, t *Table) error {
	tmp := path + ".rebuild"
	os.Remove(tmp)
	db, err := openDB(tmp)
	if err != nil {
		return err
	}
	fail := func(err error) error {
		db.Close()
		os.Remove(tmp)
		return err
	}
	tx, err := db.Begin()
	if err != nil {
		return fail(err)
	}
	for _, q := range schema(t.Keys) {
		if _, err := tx.Exec(q); err != nil {
			tx.Rollback()
			return fail(err)
		}
	}
	if _, err := tx.Exec("INSERT INTO grid VALUES (?, ?, ?, ?)", t.Info.Name, t.Info.Hash, int64(t.Info.Points), t.Info.Text); err != nil {
		tx.Rollback()
		return fail(err)
	}
	if t.Info.Shard != "" {
		if _, err := tx.Exec("INSERT INTO meta VALUES ('shard', ?)", t.Info.Shard); err != nil {
			tx.Rollback()
			return fail(err)
		}
	}
	q := "INSERT INTO points VALUES (" + strings.TrimSuffix(strings.Repeat("?, ", len(t.Columns)), ", ") + ")"
	for _, row := range t.Rows {
		if _, err := tx.Exec(q, row...); err != nil {
			tx.Rollback()
			return fail(err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fail(err)
	}
	if err := db.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}

// Table is a store read whole: its grid, its columns and its rows in
// index order, each value as SQLite returns it (int64, float64, string or
// nil).
type Table struct {
	Info    Info
	Keys    []string // the axis columns
	Columns []string
	Rows    [][]any
}

// Col is the place of a column, -1 if none.
func (t *Table) Col(name string) int { return slices.Index(t.Columns, name) }

// Load reads a store.
func Load(dir string) (*Table, error) {
	path := filepath.Join(dir, DBName)
	if _, err := os.Stat(path); err != nil {
		return nil, &scenario.InputError{File: dir, Msg: "not a sweep store: no " + DBName + " in it"}
	}
	db, err := openDB(path)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	info, err := readInfo(db)
	if err != nil {
		return nil, &scenario.InputError{File: path, Msg: "not a sweep store: " + err.Error()}
	}
	rows, err := db.Query("SELECT * FROM points ORDER BY idx")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	t := &Table{Info: info, Columns: cols}
	seedAt, scenAt := slices.Index(cols, "seed"), slices.Index(cols, "scenario")
	if seedAt < 0 || scenAt < seedAt {
		return nil, &scenario.InputError{File: path, Msg: "not a sweep store: the points table lacks seed or scenario"}
	}
	t.Keys = slices.Clone(cols[seedAt+1 : scenAt])
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		for i, v := range vals {
			if b, ok := v.([]byte); ok {
				vals[i] = string(b)
			}
		}
		t.Rows = append(t.Rows, vals)
	}
	return t, rows.Err()
}

// Merge combines shard stores into out: every shard must hold the same
// grid (its hash); a point in two shards must be the same row and the
// same result file in both. out is written in canonical form, so merging
// the shards of a sweep gives the store the unsharded sweep gives. It
// returns the merged table.
func Merge(out string, shards []string) (*Table, error) {
	var merged *Table
	byIdx := map[int64]int{}   // index → row in merged.Rows
	from := map[int64]string{} // index → the shard it came from
	for _, dir := range shards {
		t, err := Load(dir)
		if err != nil {
			return nil, err
		}
		if merged == nil {
			merged = &Table{Info: t.Info, Keys: t.Keys, Columns: t.Columns}
			merged.Info.Shard = ""
		} else if t.Info.Hash != merged.Info.Hash {
			return nil, &scenario.InputError{File: dir, Msg: fmt.Sprintf("holds a sweep of another grid (%s, hash %.12s) than %s (%s, hash %.12s)", t.Info.Name, t.Info.Hash, shards[0], merged.Info.Name, merged.Info.Hash)}
		}
		resultAt := t.Col("result")
		for _, row := range t.Rows {
			idx := row[0].(int64)
			if at, dup := byIdx[idx]; dup {
				if !slices.Equal(merged.Rows[at], row) {
					return nil, &scenario.InputError{File: dir, Msg: fmt.Sprintf("point %d differs from the same point in %s; the shards did not run the same sweep", idx, from[idx])}
				}
				if name, ok := row[resultAt].(string); ok {
					a, errA := os.ReadFile(filepath.Join(from[idx], name))
					b, errB := os.ReadFile(filepath.Join(dir, name))
					if errA != nil || errB != nil || !bytes.Equal(a, b) {
						return nil, &scenario.InputError{File: dir, Msg: fmt.Sprintf("point %d's result %s differs from (or is missing beside) the one in %s", idx, name, from[idx])}
					}
				}
				continue
			}
			byIdx[idx] = len(merged.Rows)
			from[idx] = dir
			merged.Rows = append(merged.Rows, row)
		}
	}
	if merged == nil {
		return nil, &scenario.InputError{Msg: "merge needs at least one shard store"}
	}
	slices.SortFunc(merged.Rows, func(a, b []any) int { return int(a[0].(int64) - b[0].(int64)) })
	if err := os.MkdirAll(filepath.Join(out, PointsDir), 0o755); err != nil {
		return nil, &scenario.InputError{File: out, Msg: "cannot create the store: " + unwrap(err)}
	}
	if _, err := os.Stat(filepath.Join(out, DBName)); err == nil {
		return nil, &scenario.InputError{File: out, Msg: "already holds a store; merge into a new directory"}
	}
	resultAt := merged.Col("result")
	for _, row := range merged.Rows {
		name, ok := row[resultAt].(string)
		if !ok {
			continue
		}
		data, err := os.ReadFile(filepath.Join(from[row[0].(int64)], filepath.FromSlash(name)))
		if err != nil {
			return nil, fmt.Errorf("point %d: %w", row[0], err)
		}
		if err := writeFileAtomic(filepath.Join(out, filepath.FromSlash(name)), data); err != nil {
			return nil, err
		}
	}
	if err := writeCanonical(filepath.Join(out, DBName), merged); err != nil {
		return nil, err
	}
	return merged, nil
}

// NotOK counts the stored points that are infeasible or unserved.
func (s *Store) NotOK() (int, error) {
	var n int64
	err := s.db.QueryRow("SELECT COUNT(*) FROM points WHERE status != ?", StatusOK).Scan(&n)
	return int(n), err
}

// Text is a value the store gives (SQLite's int64, float64, string or nil)
// as text: integers as integers, reals in the shortest form that reads back
// exactly, NULL as "".
func Text(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case string:
		return x
	}
	return fmt.Sprint(v)
}

// Num is a value the store gives as a number: NaN for NULL and for text
// that is not one.
func Num(v any) float64 {
	switch x := v.(type) {
	case int64:
		return float64(x)
	case float64:
		return x
	case string:
		if f, err := strconv.ParseFloat(strings.TrimSpace(x), 64); err == nil {
			return f
		}
	}
	return math.NaN()
}
