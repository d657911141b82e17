package catalog

import "fmt"

// Engram is a model's conditional memory (DeepSeek's Engram, arXiv
// 2601.07372, as DeepSeek-V4.1-Flash ships it): at each Engram layer every
// token's trailing n-grams (orders 2..MaxNgram) are hashed by Heads hash
// functions each, and every hash picks one row of HeadDim values from that
// layer's table; the gathered rows are projected and gated into the
// residual stream. The lookup depends only on the token ids, so vLLM runs
// it before the layers that need it, and the tables need not live in GPU
// memory (kernel/engram.go prices where they do live).
//
// The numbers are the config's text_config keys engram_layer_ids,
// engram_num_embeddings, engram_max_ngram_size, engram_n_heads and
// engram_head_dim. Each table is split into one hashed sub-table per
// (n-gram order, head) — (MaxNgram−1)·Heads of them, each about
// engram_vocab_size rows (384,006,168 rows = 24 sub-tables of a prime near
// 16 M for DeepSeek-V4.1-Flash) — and vLLM's tensor parallelism splits those
// hash heads over the ranks (vllm/config/engram.py EngramConfig).
type Engram struct {
	Layers   []int   // decoder layers with an Engram module (engram_layer_ids)
	Rows     []int64 // rows of each layer's table (engram_num_embeddings)
	MaxNgram int     // engram_max_ngram_size: n-gram orders 2..MaxNgram are hashed
	Heads    int     // engram_n_heads: hash functions per n-gram order
	HeadDim  int     // engram_head_dim: values per table row
	// ValueBytes is one table value's size (1: FP8 E4M3 as the checkpoint
	// stores them) and ScaleBytesPerRow the row's block scales (one ue8m0
	// byte per 32 values: 8 for a 256-value row). Rows of 264 bytes put
	// DeepSeek-V4.1-Flash's 768,022,850 rows at 188.8 GiB, the figure vLLM's
	// Engram docs and ROCm/ATOM report.
	ValueBytes       float64
	ScaleBytesPerRow float64
}

// maxEngramRows bounds a table's row count (engram_num_embeddings), which
// may exceed maxConfigInt, so that products with row sizes stay exact.
const maxEngramRows = 1 << 40

// engramScaleBlock is the values per ue8m0 block scale in an Engram row
// (DeepSeek-V4.1's fp8 weight_block_size 32).
const engramScaleBlock = 32

// HashHeads is the number of rows one token gathers at one Engram layer:
// one per hash head of every n-gram order.
func (e *Engram) HashHeads() int { return (e.MaxNgram - 1) * e.Heads }

// RowBytes is one table row with its scales.
func (e *Engram) RowBytes() float64 { return float64(e.HeadDim)*e.ValueBytes + e.ScaleBytesPerRow }

// totalRows is the row count of every Engram table together.
func (e *Engram) totalRows() float64 {
	var rows int64
	for _, r := range e.Rows {
		rows += r
	}
	return float64(rows)
}

// TableBytes is every Engram table's size, all ranks together.
func (e *Engram) TableBytes() float64 { return e.totalRows() * e.RowBytes() }

// Params counts the tables' values (what a parameter count includes).
func (e *Engram) Params() float64 { return e.totalRows() * float64(e.HeadDim) }

// GatherBytesPerToken is what one token's lookups read over every Engram
// layer, all ranks together.
func (e *Engram) GatherBytesPerToken() float64 {
	return float64(len(e.Layers)*e.HashHeads()) * e.RowBytes()
}

// EmbedDim is the width of one layer's gathered vector (all hash heads'
// rows side by side), the input of its key and value projections.
func (e *Engram) EmbedDim() int { return e.HashHeads() * e.HeadDim }

// parseEngram reads the Engram keys when the config has engram_layer_ids;
// a config without them has no Engram (m.Engram stays nil).
func (c cfg) parseEngram(m *Model) error {
	layers, ok, err := c.intList("engram_layer_ids")
	if err != nil || !ok || len(layers) == 0 {
		return err
	}
	rowsRaw, ok, err := c.list("engram_num_embeddings")
	if err != nil {
		return err
	}
	if !ok || len(rowsRaw) != len(layers) {
		return c.errf("engram_num_embeddings", "must list one table size per engram_layer_ids entry (%d)", len(layers))
	}
	e := &Engram{Layers: layers, ValueBytes: 1}
	seen := map[int]bool{}
	for i, l := range layers {
		if l >= m.NumLayers {
			return c.errf(fmt.Sprintf("engram_layer_ids[%d]", i), "layer %d is beyond num_hidden_layers %d", l, m.NumLayers)
		}
		if seen[l] {
			return c.errf(fmt.Sprintf("engram_layer_ids[%d]", i), "layer %d is listed twice", l)
		}
		seen[l] = true
	}
	for i, v := range rowsRaw {
		n, err := c.asIntUpTo(fmt.Sprintf("engram_num_embeddings[%d]", i), v, maxEngramRows)
		if err != nil {
			return err
		}
		if n < 1 {
			return c.errf(fmt.Sprintf("engram_num_embeddings[%d]", i), "%d rows: want at least 1", n)
		}
		e.Rows = append(e.Rows, n)
	}
	if e.MaxNgram, err = c.posInt("engram_max_ngram_size"); err != nil {
		return err
	}
	if e.MaxNgram < 2 {
		return c.errf("engram_max_ngram_size", "%d: Engram hashes n-grams of order 2 and up, want at least 2", e.MaxNgram)
	}
	if e.Heads, err = c.posInt("engram_n_heads"); err != nil {
		return err
	}
	if e.HeadDim, err = c.posInt("engram_head_dim"); err != nil {
		return err
	}
	e.ScaleBytesPerRow = float64((e.HeadDim + engramScaleBlock - 1) / engramScaleBlock)
	m.Engram = e
	return nil
}
