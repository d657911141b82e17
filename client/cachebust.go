package client

import (
	"blis/engine"
	"blis/workload"
)

// Identity salts for segments the client makes up.
const (
	tagPad    = 0x7061640000000000 // "pad": recorded output a one-token warm-up skipped
	tagSynth  = 0x73796e7400000000 // "synt": recorded responses in a primer's history
	tagMarker = 0x6d61726b00000000 // "mark": cache-bust markers
)

// MarkerTokens is the length of aiperf's cache-bust marker
// "[rid:<12 hex digits>]\n\n" (timing/strategies/cache_bust.py): about 16
// tokens under Llama-3-style BPE, which splits hex digits one by one.
const MarkerTokens = 16

// markerPos is where a cache-bust marker goes in a first message of n
// segments whose first sys are a system prompt.
func (d *Client) markerPos(sys, n int) int {
	if d.cfg.CacheBust == CacheBustSystemPrefix {
		return 0
	}
	return min(sys, n)
}

// insertMarker puts marker m into r's first message (its prompt starts with
// it) and counts its tokens.
func (d *Client) insertMarker(r *engine.Request, m uint64, sys int) {
	r.Prompt = insertSeg(r.Prompt, d.markerPos(sys, len(r.Prompt)), workload.Segment{ID: m, Len: MarkerTokens})
	r.PromptLen += MarkerTokens
}

func insertSeg(p []workload.Segment, at int, s workload.Segment) []workload.Segment {
	p = append(p, workload.Segment{})
	copy(p[at+1:], p[at:])
	p[at] = s
	return p
}
