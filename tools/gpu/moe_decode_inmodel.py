#!/usr/bin/env python3
"""Time vLLM's fused MoE at decode batch sizes the way a model runs it.

Why: data/ops/*/moe tables (aiconfigurator's collector) time one MoE layer
called again and again on the SAME expert weights with routing precomputed.
In a served model every layer has its own experts (L2 cold at each layer)
and the router's top-k kernel runs before the experts. At decode (1..256
rows) those two differences are largest, and BLIS's MoE law is fitted on the
table only. This script times, per token count, under one CUDA graph:

  same_weights : N calls on one layer's weights (the table's method)
  cold_chain   : N calls, each on a different layer's weights (a model)
  cold_routed  : as cold_chain plus vLLM's top-k routing from router logits
                 (sigmoid + e_score_correction_bias + renormalize, as
                 MiniMax-M2.5 and Kimi-K2.5 route)

and writes one CSV with data/ops/*/moe_perf columns (latency in ms per
layer), distribution = "uniform_random" (i.i.d. logits: independent
sequences at decode), kernel_source = "<mode>:<vllm kernel>".

Shapes: MiniMax-M2.5 FP8 block (hidden 3072, inter 1536, 256 experts,
top-8) at moe_tp 1, 2, 4, 8 and moe_ep 2, 4, 8; Kimi-K2.5 INT4 W4A16
(hidden 7168, inter 2048, 384 experts, top-8, group 32 as its checkpoint)
at moe_tp 4, 8.

Run on one GPU with vLLM installed (H200 or B200; about 10 minutes):
  python3 tools/gpu/moe_decode_inmodel.py --out moe_decode_inmodel.csv
"""

import argparse
import csv
import sys

import torch

from cudagraph_timing import graph_ms

TOKENS = [1, 2, 4, 8, 16, 32, 48, 64, 96, 128, 256]
CALLS = 16          # MoE calls per graph replay
L2_BYTES = 256 << 20  # cold_chain holds at least 4x this many expert bytes

SHAPES = [
    # model, dtype, hidden, inter, experts, topk, tp, ep, group
    *[("MiniMax-M2.5", "fp8_block", 3072, 1536, 256, 8, tp, 1, 128) for tp in (1, 2, 4, 8)],
    *[("MiniMax-M2.5", "fp8_block", 3072, 1536, 256, 8, 1, ep, 128) for ep in (2, 4, 8)],
    *[("Kimi-K2.5", "int4_wo", 7168, 2048, 384, 8, tp, 1, 32) for tp in (4, 8)],
]


def make_layer(dtype, hidden, inter, local, group, dev):
    """One layer's local expert weights and its fused_experts quant config."""
    from vllm.model_executor.layers.fused_moe import config as fmc
    if dtype == "fp8_block":
        w1 = torch.randn(local, 2 * inter, hidden, device=dev).to(torch.float8_e4m3fn)
        w2 = torch.randn(local, hidden, inter, device=dev).to(torch.float8_e4m3fn)
        s1 = torch.rand(local, (2 * inter + 127) // 128, (hidden + 127) // 128, device=dev) + 0.5
        s2 = torch.rand(local, (hidden + 127) // 128, (inter + 127) // 128, device=dev) + 0.5
        q = fmc.fp8_w8a8_moe_quant_config(w1_scale=s1, w2_scale=s2, a1_scale=None,
                                          a2_scale=None, block_shape=[128, 128])
        nbytes = w1.numel() + w2.numel()
    else:  # int4 weight-only, packed two per byte, bf16 group scales
        w1 = torch.randint(0, 127, (local, 2 * inter, hidden // 2), dtype=torch.uint8, device=dev)
        w2 = torch.randint(0, 127, (local, hidden, inter // 2), dtype=torch.uint8, device=dev)
        s1 = torch.rand(local, 2 * inter, hidden // group, device=dev, dtype=torch.bfloat16)
        s2 = torch.rand(local, hidden, inter // group, device=dev, dtype=torch.bfloat16)
        q = fmc.int4_w4a16_moe_quant_config(w1_scale=s1, w2_scale=s2, w1_zp=None, w2_zp=None,
                                            block_shape=[0, group])
        nbytes = w1.numel() + w2.numel()
    return (w1, w2, q), nbytes


def route(logits, bias, topk):
    """vLLM's sigmoid + bias top-k (fused_topk_bias), falling back to torch."""
    try:
        from vllm.model_executor.layers.fused_moe.router.fused_topk_bias_router import fused_topk_bias
        w, i = fused_topk_bias(hidden_states=logits, gating_output=logits, scoring_func="sigmoid",
                               e_score_correction_bias=bias, topk=topk, renormalize=True)
        return w, i
    except (ImportError, TypeError):  # older vLLM: the same math in torch ops
        s = logits.sigmoid()
        i = torch.topk(s + bias, topk, dim=-1)[1]
        w = s.gather(1, i)
        return (w / w.sum(-1, keepdim=True)).float(), i.to(torch.int32)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="CSV file to write")
    args = ap.parse_args()
    import vllm
    from vllm.config import VllmConfig, set_current_vllm_config
    from vllm.model_executor.layers.fused_moe import fused_experts
    from vllm.model_executor.layers.fused_moe.layer import determine_expert_map

    dev = "cuda:0"
    torch.cuda.set_device(dev)
    gpu = torch.cuda.get_device_name(dev)
    cols = ["framework", "version", "device", "op_name", "kernel_source", "moe_dtype", "num_tokens",
            "hidden_size", "inter_size", "topk", "num_experts", "moe_tp_size", "moe_ep_size",
            "distribution", "latency"]
    with open(args.out, "w", newline="") as fh, set_current_vllm_config(VllmConfig()):
        out = csv.writer(fh)
        out.writerow(cols)
        for model, dtype, hidden, inter, experts, topk, tp, ep, group in SHAPES:
            n = inter // tp
            emap = determine_expert_map(ep, 0, experts)
            local, expert_map = emap[0], emap[1]
            first, nbytes = make_layer(dtype, hidden, inter=n, local=local, group=group, dev=dev)
            layers = [first]
            while len(layers) < 2 or (len(layers) < CALLS and nbytes * len(layers) < 4 * L2_BYTES):
                layers.append(make_layer(dtype, hidden, n, local, group, dev)[0])
            bias = torch.randn(experts, device=dev, dtype=torch.float32) * 0.01
            for t in TOKENS:
                x = torch.randn(t, hidden, device=dev, dtype=torch.bfloat16)
                logits = torch.randn(t, experts, device=dev, dtype=torch.float32)
                tw, ti = route(logits, bias, topk)

                def run(mode):
                    def fn():
                        for c in range(CALLS):
                            w1, w2, q = first if mode == "same_weights" else layers[c % len(layers)]
                            if mode == "cold_routed":
                                rw, ri = route(logits, bias, topk)
                            else:
                                rw, ri = tw, ti
                            fused_experts(x, w1, w2, rw, ri, inplace=False, quant_config=q,
                                          global_num_experts=experts, expert_map=expert_map)
                    return fn

                for mode in ("same_weights", "cold_chain", "cold_routed"):
                    try:
                        ms = graph_ms(run(mode), warmup=1) / CALLS
                    except Exception as e:  # a kernel that refuses the shape: say so, go on
                        print(f"{model} {dtype} tp{tp} ep{ep} T={t} {mode}: {e}", file=sys.stderr)
                        continue
                    out.writerow(["VLLM", vllm.__version__, gpu, "moe", f"{mode}:fused_experts", dtype, t,
                                  hidden, inter, topk, experts, tp, ep, "uniform_random", f"{ms:.6f}"])
                    fh.flush()
                    print(f"{model} {dtype} tp{tp} ep{ep} T={t:4d} {mode:13s} {ms*1e3:8.1f} us", flush=True)
            del layers, first
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
