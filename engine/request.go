package engine

import (
	"time"

	"blis/workload"
)

// Status is where a request is in vLLM's request state machine
// (vllm/v1/request.py RequestStatus).
type Status uint8

const (
	StatusWaiting   Status = iota // queued, never scheduled or preempted
	StatusRunning                 // in the running list
	StatusPreempted               // blocks freed, back at the head of waiting
	StatusFinished                // produced its last output token
	StatusRejected                // refused at admission (see RejectReason)
	StatusAborted                 // cancelled by the client (Engine.Abort)
	// StatusWaitingForRemoteKVs: a disaggregated request's blocks are
	// allocated on this (decode) engine and its prompt's KV is on its way
	// from the prefill engine (RequestStatus.WAITING_FOR_REMOTE_KVS).
	StatusWaitingForRemoteKVs
)

// Request is one request inside a replica. The cluster loop owns it, the
// benchmark client fills it from a workload request, the loop hands it to
// Engine.Add, and both read its times afterwards.
type Request struct {
	ID        int64
	Prompt    []workload.Segment // prompt identity (owned by the request)
	OutputID  uint64             // identity of the tokens this request generates
	PromptLen int
	MaxTokens int // output tokens to generate (ignore_eos)

	// Client-visible times (simulated), set by the engine.
	Arrived        time.Duration
	FirstScheduled time.Duration
	FirstToken     time.Duration
	LastToken      time.Duration // time of the most recent output token
	Finished       time.Duration

	Status       Status
	spec         reqSpec // speculative decoding (spec.go); two bytes in Status's padding
	RejectReason string
	NumComputed  int // vLLM's num_computed_tokens
	NumOutput    int // output tokens generated so far
	CachedTokens int // prefix-cache hit at first scheduling
	Preemptions  int

	// Handle is the caller's: the cluster loop's index into its own record
	// of the request (who sent it, when, for which session). The engine
	// never reads it, as etcd raft never reads its entries' data.
	Handle uint64
	// Private says no other request shares any of r's content (its prompt
	// segments and its output are its own), so no other request can ever
	// find r's blocks in the prefix cache (set by the client; see
	// Engine.cacheFull for what the engine saves with it).
	Private bool

	// KeepKV (a prefill engine's copy of a disaggregated request, sent
	// with kv_transfer_params do_remote_decode) keeps the request's blocks
	// when it finishes until Engine.ReleaseKV: the decode engine reads
	// them (NixlConnector.request_finished returns delay_free_blocks).
	KeepKV bool
	// TransferBlocks is, for a remote-prefill request (Engine.AddRemote),
	// how many blocks its prompt's KV fills on this engine beyond its
	// local prefix-cache hit: the blocks the decode engine reads from the
	// prefill engine. Set when the blocks are allocated.
	TransferBlocks int

	scheduledOnce bool
	remote        uint8 // remoteNone, remotePending (blocks not allocated yet), remoteLoading (KV in flight)
	kvKept        bool  // finished with KeepKV: its blocks are held until ReleaseKV
	// readyAt is when r last became schedulable: its arrival, or its
	// remote KV's (async scheduling admits by it).
	readyAt      time.Duration
	abortPending bool     // Abort arrived while r was in the step in flight
	kv           reqGroup // KV blocks in the first (for a plain model, only) KV cache group
	hashes       []uint64 // chained hashes of the request's full blocks so far
	cur          segCursor
	stepTokens   int        // tokens scheduled in the current step
	stepContext  int        // NumComputed before the current step
	kvMore       []reqGroup // the other KV cache groups of a hybrid model

	off offReq // KV offloading state (offload.go)
}

// A remote-prefill request's state on the decode engine.
const (
	remoteNone    uint8 = iota
	remotePending       // waiting for its blocks to be allocated
	remoteLoading       // blocks allocated, KV in flight (StatusWaitingForRemoteKVs)
)

// reqGroup is what a request holds in one KV cache group (vLLM's
// SingleTypeKVCacheManager.req_to_blocks and num_cached_block).
type reqGroup struct {
	blocks    []int32 // KV blocks in token order; 0, the null block, where a sliding window freed one
	numCached int     // leading blocks already registered in the prefix cache
	skipped   int     // leading blocks freed by a sliding window (all null)
}

// group returns r's blocks in KV cache group g.
func (r *Request) group(g int) *reqGroup {
	if g == 0 {
		return &r.kv
	}
	return &r.kvMore[g-1]
}

// NumTokens is vLLM's num_tokens: prompt plus output tokens so far.
func (r *Request) NumTokens() int { return r.PromptLen + r.NumOutput }

// segCursor walks the request's token identity (prompt segments, then the
// output) block by block, so block hashes cost O(segments touched).
type segCursor struct {
	seg int // index into Prompt; len(Prompt) means "in the output"
	off int // offset within that segment
}

// splitmix64 is a fast, well-mixed 64-bit hash step (integer hashes only:
// vLLM hashes token ids with sha256/xxhash; BLIS needs identity, not crypto).
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// extendHashes computes the chained block hashes of every full block among
// the request's first n tokens (vLLM: request.block_hashes, each block's hash
// = H(parent hash, block tokens)). Block content is named by the (segment,
// offset, length) pieces it covers.
func (r *Request) extendHashes(n, blockSize int) {
	full := n / blockSize
	for len(r.hashes) < full {
		var h uint64 = 0x6a09e667f3bcc908
		if k := len(r.hashes); k > 0 {
			h = r.hashes[k-1]
		}
		need := blockSize
		for need > 0 {
			var id uint64
			var segLen int
			if r.cur.seg < len(r.Prompt) {
				id, segLen = r.Prompt[r.cur.seg].ID, r.Prompt[r.cur.seg].Len
			} else {
				id, segLen = r.OutputID, int(^uint(0)>>1)
			}
			take := segLen - r.cur.off
			if take > need {
				take = need
			}
			if take > 0 {
				h = splitmix64(h ^ splitmix64(splitmix64(id)^(uint64(r.cur.off)<<32|uint64(take))))
				r.cur.off += take
				need -= take
			}
			if r.cur.off >= segLen {
				r.cur.seg++
				r.cur.off = 0
			}
		}
		if h == 0 {
			h = 1 // 0 means "no hash" in the block pool
		}
		r.hashes = append(r.hashes, h)
	}
}

// Reset clears r for reuse, keeping its slices' storage.
func (r *Request) Reset() {
	prompt, blocks, hashes, more := r.Prompt[:0], r.kv.blocks[:0], r.hashes[:0], r.kvMore
	for i := range more {
		more[i] = reqGroup{blocks: more[i].blocks[:0]}
	}
	*r = Request{Prompt: prompt, kv: reqGroup{blocks: blocks}, kvMore: more, hashes: hashes}
}

// PromptBlockHashes appends to dst the chained hashes of the full blocks of
// prompt at blockSize, exactly as an engine with that block size names them
// in its prefix cache (and in the KV events it reports). A router indexing
// prefixes uses it, so its index and the engines' caches agree on identity.
func PromptBlockHashes(dst []uint64, prompt []workload.Segment, blockSize int) []uint64 {
	n := 0
	for _, s := range prompt {
		n += s.Len
	}
	r := Request{Prompt: prompt, hashes: dst}
	r.extendHashes(n-n%blockSize, blockSize)
	return r.hashes
}
