package workload

// Shortest is the fewest prompt and output tokens any request of spec can
// have, for the synthetic datasets whose lengths the flags fix (random,
// prefix_repetition, shared_prefix); ok is false for the others, whose
// lengths only their file or generator knows. A caller checks it against
// the deployment at start-up: when even the shortest request cannot be
// served, every request would fail.
func Shortest(spec TraceSpec) (prompt, output int, ok bool) {
	name, _, err := spec.resolve()
	if err != nil {
		return 0, 0, false
	}
	switch name {
	case DatasetRandom:
		r := spec.Random
		inLo, _, outLo, _ := r.bounds()
		return r.NumSpecialTokens + r.PrefixLen + inLo, outLo, true
	case DatasetPrefixRepetition:
		p := spec.PrefixRepetition.withDefaults()
		return p.PrefixLen + p.SuffixLen, p.OutputLen, true
	case DatasetSharedPrefix:
		p := spec.SharedPrefix.withDefaults()
		return p.SystemPromptLen + p.QuestionLen, p.OutputLen, true
	}
	return 0, 0, false
}
