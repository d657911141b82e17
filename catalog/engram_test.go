package catalog

import (
	"encoding/json"
	"io/fs"
	"math"
	"reflect"
	"strings"
	"testing"
)

// v41Engram is the Engram block of DeepSeek-V4.1-Flash's text_config
// (catalog/models/PROVENANCE.md names where each value is published).
const v41Engram = `"engram_layer_ids": [1, 3], "engram_num_embeddings": [384006168, 384016682],
	"engram_max_ngram_size": 4, "engram_n_heads": 8, "engram_head_dim": 256`

func TestParseEngram(t *testing.T) {
	m, err := ParseConfig("x.json", cfgJSON(v41Engram))
	if err != nil {
		t.Fatal(err)
	}
	e := m.Engram
	if e == nil {
		t.Fatal("no Engram parsed")
	}
	if e.HashHeads() != 24 || e.EmbedDim() != 24*256 {
		t.Errorf("hash heads %d, embed dim %d; want 24 (3 n-gram orders × 8 heads), 6144", e.HashHeads(), e.EmbedDim())
	}
	if e.RowBytes() != 264 {
		t.Errorf("row bytes %g, want 256 fp8 values + 8 ue8m0 scales", e.RowBytes())
	}
	// 768,022,850 rows × 264 B = 188.83 GiB: vLLM's and ATOM's figure.
	if gib := e.TableBytes() / (1 << 30); math.Abs(gib-188.83) > 0.01 {
		t.Errorf("tables %.3f GiB, want 188.83", gib)
	}
	if p := e.Params(); math.Abs(p/1e9-196.61) > 0.01 {
		t.Errorf("params %.3f B, want 196.61 (\"196B parameters\")", p/1e9)
	}
	if b := e.GatherBytesPerToken(); b != 2*24*264 {
		t.Errorf("gather bytes/token %g, want %d", b, 2*24*264)
	}
	if plain, err := ParseConfig("x.json", cfgJSON("")); err != nil || plain.Engram != nil {
		t.Errorf("a config without engram keys: Engram %v, err %v", plain.Engram, err)
	}
}

func TestParseEngramErrors(t *testing.T) {
	tests := []struct{ name, extra, want string }{
		{"rows missing", `"engram_layer_ids": [1], "engram_max_ngram_size": 4, "engram_n_heads": 8, "engram_head_dim": 256`, `"engram_num_embeddings"`},
		{"rows count", `"engram_layer_ids": [1, 2], "engram_num_embeddings": [5], "engram_max_ngram_size": 4, "engram_n_heads": 8, "engram_head_dim": 256`, "one table size per"},
		{"layer beyond", `"engram_layer_ids": [9], "engram_num_embeddings": [5], "engram_max_ngram_size": 4, "engram_n_heads": 8, "engram_head_dim": 256`, "beyond num_hidden_layers 4"},
		{"layer twice", `"engram_layer_ids": [1, 1], "engram_num_embeddings": [5, 5], "engram_max_ngram_size": 4, "engram_n_heads": 8, "engram_head_dim": 256`, "listed twice"},
		{"zero rows", `"engram_layer_ids": [1], "engram_num_embeddings": [0], "engram_max_ngram_size": 4, "engram_n_heads": 8, "engram_head_dim": 256`, "want at least 1"},
		{"rows text", `"engram_layer_ids": [1], "engram_num_embeddings": ["5"], "engram_max_ngram_size": 4, "engram_n_heads": 8, "engram_head_dim": 256`, "want an integer"},
		{"ngram 1", `"engram_layer_ids": [1], "engram_num_embeddings": [5], "engram_max_ngram_size": 1, "engram_n_heads": 8, "engram_head_dim": 256`, "order 2 and up"},
		{"heads missing", `"engram_layer_ids": [1], "engram_num_embeddings": [5], "engram_max_ngram_size": 4, "engram_head_dim": 256`, `"engram_n_heads"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig("x.json", cfgJSON(tc.extra))
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "x.json") {
				t.Fatalf("err %v, want it to name x.json and contain %q", err, tc.want)
			}
		})
	}
}

// The catalog's DeepSeek-V4.1-Flash is V4-Flash's config plus V4.1's Engram
// block and nothing else (models/PROVENANCE.md, "Written configs").
func TestV41FlashIsV4FlashPlusEngram(t *testing.T) {
	read := func(dir string) map[string]any {
		data, err := fs.ReadFile(modelFS, "models/"+dir+"/config.json")
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	v4, v41 := read("deepseek-ai--DeepSeek-V4-Flash"), read("deepseek-ai--DeepSeek-V4.1-Flash")
	for k, v := range v41 {
		if strings.HasPrefix(k, "engram_") {
			continue
		}
		if !reflect.DeepEqual(v, v4[k]) {
			t.Errorf("key %q differs from V4-Flash's", k)
		}
	}
	for k := range v4 {
		if _, ok := v41[k]; !ok {
			t.Errorf("key %q of V4-Flash missing", k)
		}
	}
	m, err := LookupModel("deepseek-v4.1-flash")
	if err != nil {
		t.Fatal(err)
	}
	if m.Engram == nil || len(m.Engram.Layers) != 2 || m.Engram.HashHeads() != 24 {
		t.Fatalf("Engram %+v", m.Engram)
	}
	g, err := LookupGraph(m.ID)
	if err != nil {
		t.Fatal(err)
	}
	kinds := g.LayerKinds()
	for i, k := range kinds {
		if has := strings.HasSuffix(k, "_engram"); has != (i == 1 || i == 14) {
			t.Errorf("layer %d kind %s", i, k)
		}
	}
	if op := g.Kind(kinds[14]).Op("engram.kv_proj"); op == nil || op.K != 24*256 || op.N != 2*m.HiddenSize || op.Shard != ShardRow {
		t.Errorf("layer 14's Engram projection: %+v", op)
	}
}
