package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"blis/catalog"
	"blis/kernel"
)

func newCatalogCmd(stdout io.Writer) *cobra.Command {
	c := &cobra.Command{Use: "catalog", Short: "Inspect the embedded models, their operator graphs and chips"}
	c.AddCommand(
		&cobra.Command{
			Use:   "list",
			Short: "List the embedded models (with their operator graphs) and chips",
			Args:  noArgs,
			RunE:  func(*cobra.Command, []string) error { return catalogList(stdout) },
		},
		&cobra.Command{
			Use:   "show MODEL",
			Short: "Print a model's configuration and operator graph",
			Args: func(_ *cobra.Command, args []string) error {
				if len(args) != 1 {
					return &usageError{fmt.Errorf("catalog show takes one model (a Hugging Face id or alias), got %d arguments", len(args))}
				}
				return nil
			},
			RunE: func(_ *cobra.Command, args []string) error { return catalogShow(stdout, args[0]) },
		},
		newDeriveCmd(stdout),
	)
	return c
}

func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return &usageError{fmt.Errorf("%s takes no arguments, got %q", cmd.CommandPath(), args)}
	}
	return nil
}

func catalogList(stdout io.Writer) error {
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "Models:")
	for _, m := range catalog.Models() {
		summary := ""
		if g, err := catalog.LookupGraph(m.ID); err != nil {
			summary = "graph: " + err.Error()
		} else {
			summary = g.Summary()
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", m.ID, summary, joinAliases(m.Aliases))
	}
	if unsupported := catalog.UnsupportedModels(); len(unsupported) > 0 {
		fmt.Fprintln(tw, "Known but not supported (blis catalog show MODEL says what is missing):")
		for _, u := range unsupported {
			fmt.Fprintf(tw, "  %s\t%s\n", u.ID, u.Short)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "Chips:")
	for _, ch := range catalog.Chips() {
		fmt.Fprintf(stdout, "  %-52s %s\n", ch.Name, joinAliases(ch.Aliases))
	}
	return nil
}

func catalogShow(stdout io.Writer, name string) error {
	g, err := catalog.LookupGraph(name)
	if err != nil {
		return &usageError{err}
	}
	m, err := catalog.LookupModel(name)
	if err != nil {
		return &usageError{err}
	}
	var b bytes.Buffer
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	row := func(k, format string, args ...any) { fmt.Fprintf(tw, "%s\t%s\n", k, fmt.Sprintf(format, args...)) }
	row("Model", "%s", m.ID)
	if len(m.Aliases) > 0 {
		row("Aliases", "%s", strings.Join(m.Aliases, ", "))
	}
	row("Config", "%s", m.Source)
	row("Architecture", "%s (model_type %s); graph mirrors %s", m.Architecture, m.ModelType, g.Mirrors)
	weights := fmt.Sprintf("weights %s", shortName(m.WeightDtype))
	if m.QuantMethod != "" {
		weights += fmt.Sprintf(" (quantization %s; bytes per parameter: %.4g GEMMs and experts, %.4g attention, %.4g dense MLP and shared experts)",
			m.QuantMethod, m.WeightBytesPerParam, m.AttnWeightBytesPerParam, m.DenseWeightBytesPerParam)
	}
	row("Dtype", "activations %s, %s", g.Dtype, weights)
	if m.QuantMethod != "" {
		row("Quant format", "%s", m.QuantScheme)
		// The kernel vLLM runs the format with on each chip family, or
		// why it cannot (kernel.ResolveQuant).
		for _, ch := range catalog.Chips() {
			qk, err := kernel.ResolveQuant(m, ch)
			if err != nil {
				row("  on "+ch.Name, "cannot run: %v", err)
				continue
			}
			row("  on "+ch.Name, "%s", qk)
		}
	}
	row("Sizes", "hidden %d, %d layers, %d heads (%d KV) × %d, intermediate %d, vocab %d (padded %d)%s, max positions %d",
		m.HiddenSize, m.NumLayers, m.NumHeads, m.NumKVHeads, m.HeadDim, m.IntermediateSize, m.VocabSize, g.Vocab,
		map[bool]string{true: ", tied embeddings"}[m.TieEmbeddings], m.MaxPositions)
	if m.IsMoE() {
		s := fmt.Sprintf("%d experts, top-%d, expert intermediate %d", m.NumExperts, m.ExpertsPerToken, m.MoEIntermediateSize)
		if m.NumSharedExperts > 0 {
			s += fmt.Sprintf(", %d shared (intermediate %d)", m.NumSharedExperts, m.SharedExpertIntermediateSize)
		}
		if d := m.NumDenseLayers(); d > 0 {
			s += fmt.Sprintf(", %d dense layers", d)
		}
		row("MoE", "%s", s)
	}
	if m.IsMLA() {
		row("MLA", "kv_lora_rank %d, q_lora_rank %d, qk_nope_head_dim %d, qk_rope_head_dim %d, v_head_dim %d",
			m.KVLoraRank, m.QLoraRank, m.QKNopeHeadDim, m.QKRopeHeadDim, m.VHeadDim)
	}
	if m.SlidingWindowLayers > 0 {
		if m.AttentionChunk > 0 {
			row("Chunked attn", "chunks of %d tokens on %d of %d layers (priced and cached as a sliding window of one chunk)", m.AttentionChunk, m.SlidingWindowLayers, m.NumLayers)
		} else {
			row("Sliding window", "%d tokens on %d of %d layers", m.SlidingWindow, m.SlidingWindowLayers, m.NumLayers)
		}
	}
	runs := make([]string, len(g.Stack))
	for i, r := range g.Stack {
		runs[i] = fmt.Sprintf("[%s]×%d", strings.Join(r.Kinds, ", "), r.Repeat)
	}
	row("Stack", "%s", g.Summary())
	row("", "%s", strings.Join(runs, " then "))
	if err := tw.Flush(); err != nil {
		return err
	}

	dtypeBytes := m.DtypeBytes
	writeOps(&b, "Embedding", g.Embed)
	for _, k := range g.Layers {
		writeKind(&b, "Layer kind", k, g.Dtype, dtypeBytes)
	}
	writeOps(&b, "Head", g.Head)
	if g.Draft != nil {
		fmt.Fprintf(&b, "\nDraft: --speculative-config method %q, mirrors %s\n", g.Draft.Method, g.Draft.Mirrors)
		for _, k := range g.Draft.Layers {
			writeKind(&b, "Draft layer", k, g.Dtype, dtypeBytes)
		}
	} else {
		fmt.Fprintln(&b, "\nDraft: none")
	}
	if len(g.Notes) > 0 {
		fmt.Fprintln(&b, "\nNotes:")
		for _, n := range g.Notes {
			fmt.Fprintf(&b, "  - %s\n", n)
		}
	}
	_, err = stdout.Write(b.Bytes())
	return err
}

func writeKind(w io.Writer, title string, k catalog.LayerKind, dtype string, dtypeBytes float64) {
	head := fmt.Sprintf("%s %q × %d", title, k.Name, k.Count)
	if a := k.Attention(); a != nil && a.EntryBytes > 0 {
		// DeepSeek-V4: fixed byte layouts, replicated on every rank.
		head += fmt.Sprintf(" — KV cache: the last %d tokens of %d B each", a.Window, a.EntryBytes)
		if a.CompressRatio > 0 {
			head += fmt.Sprintf(", one %d B entry per %d tokens", a.EntryBytes, a.CompressRatio)
		}
		if a.IndexerCacheBytes > 0 {
			head += fmt.Sprintf(" with a %d B indexer key", a.IndexerCacheBytes)
		}
		if a.StateTokens > 0 {
			head += fmt.Sprintf(", compressor state %d B a token for %d tokens", a.StateBytes, a.StateTokens)
		}
		if a.IndexerStateTokens > 0 {
			head += fmt.Sprintf(" (indexer's %d B for %d)", a.IndexerStateBytes, a.IndexerStateTokens)
		}
		head += "; replicated on every TP rank"
	} else if a != nil {
		shard := "split over TP with the KV heads"
		if a.KVCacheShard == "replicated" {
			shard = "replicated on every TP rank"
		}
		head += fmt.Sprintf(" — KV cache %d elements per token per layer (%g B in %s), %s",
			k.KVCacheElems, float64(k.KVCacheElems)*dtypeBytes, dtype, shard)
		if a.IndexerCacheBytes > 0 {
			head += fmt.Sprintf(", plus the indexer's %d B key cache (fp8 keys and scales, any KV dtype)", a.IndexerCacheBytes)
		}
	}
	writeOps(w, head, k.Ops)
}

func writeOps(w io.Writer, title string, ops []catalog.Op) {
	fmt.Fprintf(w, "\n%s\n", title)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for i := range ops {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", ops[i].Kind, ops[i].Name, ops[i].Describe())
	}
	tw.Flush()
}

func shortName(dtype string) string {
	switch dtype {
	case "bfloat16":
		return "bf16"
	case "float16":
		return "fp16"
	}
	return dtype
}

func newDeriveCmd(stdout io.Writer) *cobra.Command {
	var write bool
	dir := filepath.Join("catalog", "models")
	c := &cobra.Command{
		Use:   "derive",
		Short: "Derive every model's operator graph and compare it with (or, with --write, store it as) catalog/models/*/graph.json",
		Args:  noArgs,
		RunE: func(*cobra.Command, []string) error {
			if st, err := os.Stat(dir); err != nil || !st.IsDir() {
				return &usageError{fmt.Errorf("--catalog-dir %s is not a directory; run from the repository root or pass --catalog-dir", dir)}
			}
			files, err := catalog.DeriveGraphs()
			if err != nil {
				return err
			}
			stale, written := 0, 0
			for _, f := range files {
				p := filepath.Join(dir, f.Dir, "graph.json")
				old, err := os.ReadFile(p)
				if err != nil && !errors.Is(err, os.ErrNotExist) {
					return err
				}
				if bytes.Equal(old, f.Derived) {
					continue
				}
				if write {
					if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
						return err
					}
					if err := os.WriteFile(p, f.Derived, 0o644); err != nil {
						return err
					}
					written++
					fmt.Fprintf(stdout, "wrote %s\n", p)
					continue
				}
				stale++
				if old == nil {
					fmt.Fprintf(stdout, "missing: %s\n", p)
				} else {
					fmt.Fprintf(stdout, "stale: %s: %s\n", p, firstDifference(old, f.Derived))
				}
			}
			if stale > 0 {
				return fmt.Errorf("%d of %d stored graphs differ from a fresh derivation; run `go run ./cmd/blis catalog derive --write`", stale, len(files))
			}
			if write {
				fmt.Fprintf(stdout, "%d graphs derived, %d written\n", len(files), written)
			} else {
				fmt.Fprintf(stdout, "all %d stored graphs match a fresh derivation\n", len(files))
			}
			return nil
		},
	}
	c.Flags().BoolVar(&write, "write", false, "rewrite the stored graph.json files that differ")
	c.Flags().StringVar(&dir, "catalog-dir", dir, "the catalog's models folder")
	return c
}

// firstDifference names the first line where stored and derived differ.
func firstDifference(stored, derived []byte) string {
	a, b := strings.Split(string(stored), "\n"), strings.Split(string(derived), "\n")
	for i := 0; i < len(a) || i < len(b); i++ {
		var x, y string
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			return fmt.Sprintf("line %d: stored `%s`, derived `%s`", i+1, strings.TrimSpace(x), strings.TrimSpace(y))
		}
	}
	return "same lines, different bytes"
}

func joinAliases(a []string) string {
	if len(a) == 0 {
		return ""
	}
	s := "aliases: " + a[0]
	for _, x := range a[1:] {
		s += ", " + x
	}
	return s
}
