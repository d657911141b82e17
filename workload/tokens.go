package workload

// ApproxTokens is BLIS's tokenizer-free token count of a text: ⌈UTF-8
// bytes / 4⌉ (0 for ""). It stands in for len(tokenizer(text).input_ids)
// wherever a format carries text rather than token counts (sharegpt,
// mooncake text_input).
//
// Why bytes/4: byte-pair tokenizers with 100k+ vocabularies (OpenAI's
// cl100k/o200k, Llama 3's 128k, Qwen's 151k) average about four bytes of
// English prose or code per token — OpenAI's published rule of thumb of "~4
// characters per token". Counting bytes rather than characters or words
// keeps the rule meaningful for code and for scripts without spaces
// (a CJK character is 3 UTF-8 bytes and usually 1–2 tokens, so words × 1.3
// would be far off while bytes/4 is within a factor of about 2). It ignores
// the special tokens a tokenizer adds (BOS), which vLLM's own count
// includes: expect prompts about one token shorter than vLLM measures, and
// ±25 % per text on prose.
func ApproxTokens(text string) int {
	return (len(text) + 3) / 4
}
