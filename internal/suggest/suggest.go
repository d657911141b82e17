// Package suggest finds the known names closest to a mistyped one, so that
// every "unknown X" error can say "did you mean ...".
package suggest

import (
	"sort"
	"strings"
)

// Candidate is one spelling (Key) of an entry (Name); an entry may have many.
type Candidate struct{ Key, Name string }

// CloseMatches returns up to n entry names whose spellings are near query:
// a spelling that contains the query (or is contained in it) ranks first,
// then by edit distance, which must be at most max(2, len(query)/4).
// Ties break by name, so the answer is deterministic.
func CloseMatches(query string, cands []Candidate, n int) []string {
	if len(query) > 200 {
		query = query[:200]
	}
	limit := max(2, len(query)/4)
	best := map[string]int{}
	for _, c := range cands {
		score := -1
		if query != "" && (strings.Contains(c.Key, query) || (len(c.Key) >= 4 && strings.Contains(query, c.Key))) {
			score = 0
		} else if d := levenshtein(query, c.Key); d <= limit {
			score = 1 + d
		}
		if score < 0 {
			continue
		}
		if s, ok := best[c.Name]; !ok || score < s {
			best[c.Name] = score
		}
	}
	names := make([]string, 0, len(best))
	for k := range best {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool {
		if best[names[i]] != best[names[j]] {
			return best[names[i]] < best[names[j]]
		}
		return names[i] < names[j]
	})
	if len(names) > n {
		names = names[:n]
	}
	return names
}

// levenshtein is the edit distance between a and b, by bytes (names and
// keys are ASCII).
func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
