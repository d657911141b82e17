package inferencex

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"blis/scenario"
)

// Columns is the header of an InferenceX calibration CSV
// (aiconfigurator's systems/silicon_sample.csv), in order.
var Columns = []string{
	"id", "silicon_data_source", "backend", "backend_version", "model_path", "system", "precision", "mode",
	"isl", "osl", "gemm_quant_mode", "moe_quant_mode",
	"batch_size", "tp_size", "pp_size", "attention_dp_size", "moe_tp_size", "moe_ep_size",
	"prefill_batch_size", "prefill_num_workers", "prefill_tp_size", "prefill_pp_size",
	"prefill_attention_dp_size", "prefill_moe_tp_size", "prefill_moe_ep_size",
	"decode_batch_size", "decode_num_workers", "decode_tp_size", "decode_pp_size",
	"decode_attention_dp_size", "decode_moe_tp_size", "decode_moe_ep_size",
	"silicon_ttft_ms", "silicon_tpot_ms",
}

// Layout is one engine's parallel layout as the CSV states it. Zero means
// the cell was empty.
type Layout struct {
	BatchSize   int `json:"batch_size,omitempty"`
	NumWorkers  int `json:"num_workers,omitempty"`
	TP          int `json:"tp,omitempty"`
	PP          int `json:"pp,omitempty"`
	AttentionDP int `json:"attention_dp,omitempty"`
	MoETP       int `json:"moe_tp,omitempty"`
	MoEEP       int `json:"moe_ep,omitempty"`
}

// Row is one measured run of an InferenceX calibration CSV.
// Integer cells left empty read as 0.
type Row struct {
	Line int // 1-based line of the row in its file

	ID             string
	Source         string // silicon_data_source, verbatim
	Backend        string // vllm, sglang, trtllm
	BackendVersion string // "" when the CSV leaves it blank
	ModelPath      string // Hugging Face id of the model family
	System         string // h100_sxm, b200_sxm, gb200, ...
	Precision      string // fp8, fp4, bf16, int4, or ""
	Mode           string // agg or disagg
	ISL, OSL       int
	GemmQuantMode  string
	MoEQuantMode   string

	Agg     Layout // batch_size, tp_size, ... (agg rows)
	Prefill Layout // prefill_* (disagg rows)
	Decode  Layout // decode_* (disagg rows)

	TTFTms float64 // silicon_ttft_ms
	TPOTms float64 // silicon_tpot_ms
}

// SourceField returns the value of key=value in silicon_data_source
// ("" when absent). Entries are separated by "; ".
func (r *Row) SourceField(key string) string {
	for _, part := range strings.Split(r.Source, ";") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if ok && k == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// MeasuredDate is the YYYY-MM-DD prefix of the measured= entry of
// silicon_data_source, or "" when the row carries no valid date.
func (r *Row) MeasuredDate() string {
	m := r.SourceField("measured")
	if len(m) < 10 {
		return ""
	}
	d := m[:10]
	for i, c := range d {
		if i == 4 || i == 7 {
			if c != '-' {
				return ""
			}
		} else if c < '0' || c > '9' {
			return ""
		}
	}
	return d
}

// Image is the container image named in silicon_data_source: the image=
// entry, or a bare last entry such as "vllm/vllm-openai:v0.19.0-cu130".
func (r *Row) Image() string {
	if im := r.SourceField("image"); im != "" {
		return im
	}
	parts := strings.Split(r.Source, ";")
	last := strings.TrimSpace(parts[len(parts)-1])
	if len(parts) > 1 && !strings.Contains(last, "=") && strings.Contains(last, ":") {
		return last
	}
	return ""
}

// WIP reports whether silicon_data_source marks the run as coming from an
// unmerged InferenceX branch (wip=True).
func (r *Row) WIP() bool { return strings.EqualFold(r.SourceField("wip"), "true") }

// GapAnalysis reports whether the row comes from aiconfigurator's own
// gap-analysis collections rather than from InferenceX.
func (r *Row) GapAnalysis() bool {
	src := r.SourceField("source_file")
	return strings.Contains(src, "gap-analysis") || strings.Contains(src, "gap_analysis")
}

// Read reads an InferenceX calibration CSV strictly: the header
// must be Columns, every row must have every column, numbers
// must parse and lie in range. The first problem is returned as a
// *scenario.InputError naming the file, the line, the column and the value.
func Read(file string, r io.Reader) ([]Row, error) {
	cr := csv.NewReader(r)
	cr.ReuseRecord = true
	cr.FieldsPerRecord = -1 // counted here, to name the line and the columns
	bad := func(line int, col, value, msg string) error {
		key := ""
		if col != "" {
			key = "column " + col
		}
		return &scenario.InputError{File: file, Line: line, Key: key, Value: value, Msg: msg}
	}
	head, err := cr.Read()
	if err == io.EOF {
		return nil, bad(1, "", "", "empty file: expected the header "+strings.Join(Columns, ","))
	}
	if err != nil {
		return nil, csvError(file, err)
	}
	if len(head) > 0 {
		head[0] = strings.TrimPrefix(head[0], "\ufeff")
	}
	for i, want := range Columns {
		if i >= len(head) {
			return nil, bad(1, "", "", fmt.Sprintf("header has %d columns, expected %d; missing %s", len(head), len(Columns), strings.Join(Columns[i:], ",")))
		}
		if head[i] != want {
			return nil, bad(1, "", head[i], fmt.Sprintf("header column %d is %q, expected %q", i+1, head[i], want))
		}
	}
	if len(head) > len(Columns) {
		return nil, bad(1, "", head[len(Columns)], fmt.Sprintf("header has %d columns, expected %d", len(head), len(Columns)))
	}

	var rows []Row
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, csvError(file, err)
		}
		line, _ := cr.FieldPos(0)
		if len(rec) != len(Columns) {
			return nil, bad(line, "", "", fmt.Sprintf("row has %d columns, expected %d", len(rec), len(Columns)))
		}
		p := rowParser{rec: rec, line: line, file: file, pos: cr.FieldPos}
		row := p.parse()
		if p.err != nil {
			return nil, p.err
		}
		rows = append(rows, row)
	}
	return rows, nil
}

func csvError(file string, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return &scenario.InputError{File: file, Line: pe.Line,
			Msg: fmt.Sprintf("not valid CSV at column %d: %v", pe.Column, pe.Err)}
	}
	return &scenario.InputError{File: file, Msg: "cannot read: " + err.Error()}
}

// rowParser parses one record, keeping the first error.
type rowParser struct {
	rec  []string
	line int
	file string
	pos  func(field int) (line, column int)
	err  error
}

func (p *rowParser) fail(i int, msg string) {
	if p.err != nil {
		return
	}
	line, _ := p.pos(i)
	p.err = &scenario.InputError{File: p.file, Line: line, Key: "column " + Columns[i], Value: p.rec[i], Msg: msg}
}

func (p *rowParser) str(i int, required bool) string {
	v := p.rec[i]
	if required && strings.TrimSpace(v) == "" {
		p.fail(i, "must not be empty")
	}
	if strings.TrimSpace(v) != v {
		p.fail(i, "has leading or trailing spaces")
	}
	return v
}

// int parses a non-negative integer; empty reads as 0 unless required.
func (p *rowParser) int(i int, required bool) int {
	v := p.rec[i]
	if v == "" {
		if required {
			p.fail(i, "must not be empty: expected an integer ≥ 1")
		}
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > 1<<30 {
		p.fail(i, "expected an integer in [0, 2^30]")
		return 0
	}
	if required && n < 1 {
		p.fail(i, "expected an integer ≥ 1")
	}
	return n
}

func (p *rowParser) ms(i int) float64 {
	v := p.rec[i]
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || !(f > 0) {
		p.fail(i, "expected a latency in milliseconds > 0")
		return 0
	}
	return f
}

func (p *rowParser) layout(first int) Layout {
	return Layout{
		BatchSize: p.int(first, false), NumWorkers: p.int(first+1, false), TP: p.int(first+2, false),
		PP: p.int(first+3, false), AttentionDP: p.int(first+4, false), MoETP: p.int(first+5, false),
		MoEEP: p.int(first+6, false),
	}
}

func (p *rowParser) parse() Row {
	row := Row{
		Line:           p.line,
		ID:             p.str(0, true),
		Source:         p.str(1, false),
		Backend:        p.str(2, true),
		BackendVersion: p.str(3, false),
		ModelPath:      p.str(4, true),
		System:         p.str(5, true),
		Precision:      p.str(6, false),
		Mode:           p.str(7, true),
		ISL:            p.int(8, true),
		OSL:            p.int(9, true),
		GemmQuantMode:  p.str(10, false),
		MoEQuantMode:   p.str(11, false),
	}
	if row.Mode != "agg" && row.Mode != "disagg" && p.err == nil {
		p.fail(7, "expected agg or disagg")
	}
	agg := row.Mode == "agg"
	row.Agg = Layout{
		BatchSize: p.int(12, agg), TP: p.int(13, agg), PP: p.int(14, false),
		AttentionDP: p.int(15, false), MoETP: p.int(16, false), MoEEP: p.int(17, false),
	}
	row.Prefill = p.layout(18)
	row.Decode = p.layout(25)
	row.TTFTms = p.ms(32)
	row.TPOTms = p.ms(33)
	return row
}
