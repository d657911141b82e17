package catalog

import "blis/internal/suggest"

// candidate is one spelling (key) of a catalog entry (name).
type candidate = suggest.Candidate

// closeMatches returns up to n entry names near query (see suggest.CloseMatches).
func closeMatches(query string, cands []candidate, n int) []string {
	return suggest.CloseMatches(query, cands, n)
}
