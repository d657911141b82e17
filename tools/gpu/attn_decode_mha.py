#!/usr/bin/env python3
"""Time vLLM's FlashAttention-3 decode attention at the shapes the H100/H200
per-operator tables (data/ops/<chip>/attention/vllm/0.24.0/
generation_attention_perf.parquet) do not cover: MHA layers with 16-40 KV
heads per GPU (Llama-2-7B/13B, CodeLlama-7B at TP1-2), batches of 64-256
sequences with 0.5-4k cached tokens each. The tables stop at 8 KV heads per
GPU, so BLIS's attention_decode law (kernel.AttnDecodeTime) extrapolates its
per-(sequence, KV head) cost 4x for Llama-2-7B; these rows test that.

It also times the mixed step a 2048-token budget makes near the
max-num-seqs cap: B decode rows plus one prefill chunk of (2048 - B) tokens
over a cached prefix, as ONE varlen call (vLLM v1's FlashAttentionImpl runs
decode and prefill rows of a step together), to compare against BLIS's
separate decode-law + prefill-law pricing.

Each call is captured in a CUDA graph and replayed (vLLM replays decode
steps from graphs), timed with CUDA events over --iters replays after
--warmup. Paged KV cache, block size 16 (vLLM's default for FlashAttention),
bf16 (and fp8 with --fp8) KV, scheduler metadata from get_scheduler_metadata
as vllm/v1/attention/backends/flash_attn.py builds it.

Output (in --out): generation_attention_perf.csv with the same columns as
the data/ops table (latency in ms; kernel_source vllm_flash_attn_fa3), and
mixed_attention_perf.csv (decode_batch, decode_ctx, prefill_tokens,
prefill_cached, latency of the one call, decode_latency and prefill_latency
of the same rows as two calls: what a one-call pricing of mixed steps must
reproduce, docs/accuracy.md). Convert the first to parquet beside the table
(pandas.read_csv(...).to_parquet(...)) to fit it with `blis calibrate ops`.

Needs: one Hopper GPU, torch and vllm (with vllm.vllm_flash_attn) installed.
Run: python3 tools/gpu/attn_decode_mha.py --out /tmp/attn_mha   (about 6 min)
"""
import argparse
import csv
import os

import torch

from cudagraph_timing import graph_ms

try:
    from vllm.vllm_flash_attn import flash_attn_varlen_func, get_scheduler_metadata
except ImportError as e:  # pragma: no cover - needs vllm
    raise SystemExit(f"vllm.vllm_flash_attn not importable ({e}); install vllm on the GPU machine")

import vllm

BLOCK = 16
COLUMNS = ["framework", "version", "device", "op_name", "kernel_source", "batch_size", "isl",
           "num_heads", "num_key_value_heads", "head_dim", "beam_width", "attn_dtype",
           "kv_cache_dtype", "step", "window_size", "latency"]

# (num_heads, num_key_value_heads, head_dim) per GPU: MHA shapes beyond the
# tables' 8 KV heads, and GQA shapes the tables have, as a cross-check.
SHAPES = [(32, 32, 128), (16, 16, 128), (40, 40, 128), (20, 20, 128),
          (32, 8, 128), (8, 8, 128), (64, 8, 128), (32, 4, 128)]
BATCHES = [1, 8, 32, 64, 96, 112, 128, 192, 256]
CTXS = [128, 512, 1024, 1536, 2048, 4096]
MIXED_BATCHES = [64, 100, 128]
MIXED_CHUNK_CACHED = [0, 2048, 6144]


def make_call(q_lens, k_lens, heads, kv_heads, head_dim, kv_dtype):
    """One varlen FA3 call over a paged cache: rows i has q_lens[i] new
    queries attending causally to k_lens[i] keys (cached + new)."""
    dev = "cuda"
    nb = [(k + BLOCK - 1) // BLOCK for k in k_lens]
    blocks = sum(nb)
    kc = torch.randn(blocks, BLOCK, kv_heads, head_dim, device=dev, dtype=torch.bfloat16)
    vc = torch.randn_like(kc)
    descale = None
    if kv_dtype == "fp8":
        kc, vc = kc.to(torch.float8_e4m3fn), vc.to(torch.float8_e4m3fn)
        descale = torch.ones(len(q_lens), kv_heads, device=dev, dtype=torch.float32)
    table = torch.zeros(len(q_lens), max(nb), dtype=torch.int32, device=dev)
    off = 0
    for i, n in enumerate(nb):
        table[i, :n] = torch.arange(off, off + n, dtype=torch.int32, device=dev)
        off += n
    tq = sum(q_lens)
    q = torch.randn(tq, heads, head_dim, device=dev, dtype=torch.bfloat16)
    if kv_dtype == "fp8":
        q = q.to(torch.float8_e4m3fn)
    out = torch.empty(tq, heads, head_dim, device=dev, dtype=torch.bfloat16)
    cu_q = torch.tensor([0] + list(torch.tensor(q_lens).cumsum(0).tolist()), dtype=torch.int32, device=dev)
    seqused_k = torch.tensor(k_lens, dtype=torch.int32, device=dev)
    meta = get_scheduler_metadata(
        batch_size=len(q_lens), max_seqlen_q=max(q_lens), max_seqlen_k=max(k_lens),
        num_heads_q=heads, num_heads_kv=kv_heads, headdim=head_dim,
        cache_seqlens=seqused_k, qkv_dtype=q.dtype, cu_seqlens_q=cu_q, page_size=BLOCK,
        causal=True, window_size=(-1, -1))
    scale = head_dim ** -0.5

    def fn():
        flash_attn_varlen_func(
            q=q, k=kc, v=vc, out=out, cu_seqlens_q=cu_q, max_seqlen_q=max(q_lens),
            seqused_k=seqused_k, max_seqlen_k=max(k_lens), softmax_scale=scale, causal=True,
            block_table=table, fa_version=3, scheduler_metadata=meta,
            q_descale=descale, k_descale=descale, v_descale=descale)
    return fn


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--fp8", action="store_true", help="also time an fp8 KV cache")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    device = torch.cuda.get_device_name(0)
    kv_dtypes = ["bfloat16"] + (["fp8"] if a.fp8 else [])
    with open(os.path.join(a.out, "generation_attention_perf.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(COLUMNS)
        for kvd in kv_dtypes:
            for h, kvh, d in SHAPES:
                for b in BATCHES:
                    for ctx in CTXS:
                        # The table's rows cache isl tokens and decode at step
                        # ctx - isl; isl = ctx - 1, step 1 keeps KV length ctx.
                        fn = make_call([1] * b, [ctx] * b, h, kvh, d, kvd)
                        ms = graph_ms(fn, a.warmup, a.iters)
                        w.writerow(["VLLM", vllm.__version__, device, "generation_attention",
                                    "vllm_flash_attn_fa3", b, ctx - 1, h, kvh, d, 1, "bfloat16",
                                    kvd, 1, 0, f"{ms:.6f}"])
                        f.flush()
                        torch.cuda.empty_cache()
    with open(os.path.join(a.out, "mixed_attention_perf.csv"), "w", newline="") as f:
        w = csv.writer(f)
        # latency: the one varlen call vLLM's FlashAttentionImpl makes;
        # decode_latency and prefill_latency: the same rows as two separate
        # calls (how BLIS prices a mixed step: decode law + prefill law), so
        # what one call saves is measured on the same GPU in the same run.
        w.writerow(["device", "num_heads", "num_key_value_heads", "head_dim", "kv_cache_dtype",
                    "decode_batch", "decode_ctx", "prefill_tokens", "prefill_cached", "latency",
                    "decode_latency", "prefill_latency"])
        for h, kvh, d in [(32, 32, 128), (32, 4, 128), (32, 8, 128)]:
            for b in MIXED_BATCHES:
                for ctx in [1024, 2048, 4096]:
                    for cached in MIXED_CHUNK_CACHED:
                        chunk = 2048 - b
                        fn = make_call([1] * b + [chunk], [ctx] * b + [cached + chunk], h, kvh, d, "bfloat16")
                        ms = graph_ms(fn, a.warmup, a.iters)
                        dec_ms = graph_ms(make_call([1] * b, [ctx] * b, h, kvh, d, "bfloat16"), a.warmup, a.iters)
                        pre_ms = graph_ms(make_call([chunk], [cached + chunk], h, kvh, d, "bfloat16"), a.warmup, a.iters)
                        w.writerow([device, h, kvh, d, "bfloat16", b, ctx, chunk, cached, f"{ms:.6f}",
                                    f"{dec_ms:.6f}", f"{pre_ms:.6f}"])
                        f.flush()
                        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
