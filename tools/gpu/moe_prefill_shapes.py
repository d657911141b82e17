#!/usr/bin/env python3
"""Time vLLM's fused-MoE layer at the prefill shapes BLIS's MoE laws extrapolate to.

The MoE laws (kernel/laws.go MoETime, fitted by calibrate/moe.go) come from
aiconfigurator's vLLM 0.24.0 moe_perf tables (data/ops). Three kernels that
InferenceX's gpt-oss-120b and MiniMax-M2.5 runs use were never timed at those
models' shapes, so BLIS prices them with another shape's or another kernel's
law (docs/accuracy.md, "Regime: MoE prefill is too fast"):

  * gpt-oss-120b (hidden 2880, inter 2880, 128 experts, top-4) on
    - Marlin MXFP4 (VLLM_MXFP4_USE_MARLIN=1, Hopper): priced with the Marlin law
      fitted on Kimi shapes;
    - FlashInfer TRT-LLM MXFP4 x MXFP8 (VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8=1,
      Blackwell): priced with the law fitted on 4096x2048 and 7168x3072;
  * MiniMax-M2.5 (hidden 3072, inter 1536, 256 experts, top-8, 128x128-block
    FP8) on vLLM's Triton fused MoE on Blackwell (VLLM_USE_FLASHINFER_MOE_FP8=0,
    VLLM_MOE_USE_DEEP_GEMM=0): no Blackwell Triton rows, priced with the
    TRT-LLM law.

This script builds one vLLM FusedMoE layer per (model, kernel, moe_tp, moe_ep)
with random weights, routes num_tokens tokens under the three distributions of
aiconfigurator's collector (balanced, power_law_1.01, power_law_1.2: expert
loads drawn from P(x) ~ x^-alpha and the top-k choices sampled to match), and
times the layer's forward inside a captured CUDA graph (mean of 20 replays
after 5 warm-up replays). It writes one CSV with exactly the columns of
data/ops/<chip>/moe/vllm/<version>/moe_perf.parquet, latency in ms, so that
`blis calibrate ops` can take the rows once they are converted to parquet.

Run on the GPU the rows are for (H100/H200 for the Hopper kernels, B200 for the
Blackwell ones), in an environment with the vLLM version under test:

    python3 tools/gpu/moe_prefill_shapes.py --out moe_prefill_shapes.csv

Kernels the chip cannot run are skipped with a message. Expect ~5 minutes on
one GPU.
"""

import argparse
import csv
import os
import sys

import torch

from cudagraph_timing import graph_ms

TOKENS = [1, 8, 64, 256, 512, 1024, 2048, 4096, 8192, 16384]
DISTRIBUTIONS = ["balanced", "power_law_1.01", "power_law_1.2"]

# (model tag, hidden, inter, experts, topk, moe_dtype, env, kernel label, min capability, max capability)
CASES = [
    ("gpt-oss-120b", 2880, 2880, 128, 4, "w4a16_mxfp4",
     {"VLLM_MXFP4_USE_MARLIN": "1"}, "vllm_gptossmxfp4moe_marlin_marlinexperts", 80, 99),
    ("gpt-oss-120b", 2880, 2880, 128, 4, "w4a8_mxfp4_mxfp8",
     {"VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8": "1"},
     "vllm_gptossmxfp4moe_flashinfer_trtllm_mxfp4_mxfp8_trtllmmxfp4expertsmonolithic", 100, 109),
    ("MiniMax-M2.5", 3072, 1536, 256, 8, "fp8_block",
     {"VLLM_USE_FLASHINFER_MOE_FP8": "0", "VLLM_MOE_USE_DEEP_GEMM": "0"},
     "vllm_fp8moe_triton_tritonexperts", 90, 109),
]

# (moe_tp, moe_ep) layouts InferenceX ran these models at (TP 1..8, with and
# without --enable-expert-parallel).
LAYOUTS = [(1, 1), (2, 1), (4, 1), (8, 1), (1, 2), (1, 4), (1, 8)]

COLUMNS = ["framework", "version", "device", "op_name", "kernel_source", "moe_dtype",
           "num_tokens", "hidden_size", "inter_size", "topk", "num_experts",
           "moe_tp_size", "moe_ep_size", "distribution", "latency"]


def routing(num_tokens, experts, topk, dist, gen):
    """Top-k expert ids and weights for num_tokens tokens under dist."""
    if dist == "balanced":
        ids = torch.arange(num_tokens * topk, device="cuda") % experts
        ids = ids.view(num_tokens, topk)
    else:
        alpha = float(dist.split("_")[-1])
        # expert popularity from a power law, then top-k without replacement
        pop = torch.arange(1, experts + 1, device="cuda", dtype=torch.float32) ** (-alpha)
        pop = pop[torch.randperm(experts, device="cuda", generator=gen)]
        ids = torch.multinomial(pop.expand(num_tokens, -1), topk, replacement=False, generator=gen)
    weights = torch.full((num_tokens, topk), 1.0 / topk, device="cuda", dtype=torch.float32)
    return weights, ids.to(torch.int32)


def build_layer(case, tp, ep):
    """One vLLM FusedMoE layer of the case's shape on this rank (rank 0)."""
    from vllm.config import VllmConfig, set_current_vllm_config
    from vllm.model_executor.layers.fused_moe import FusedMoE
    tag, hidden, inter, experts, topk, dtype = case[:6]
    quant = None
    if dtype.startswith("w4"):
        from vllm.model_executor.layers.quantization.mxfp4 import Mxfp4Config
        quant = Mxfp4Config()
    elif dtype == "fp8_block":
        from vllm.model_executor.layers.quantization.fp8 import Fp8Config
        quant = Fp8Config(is_checkpoint_fp8_serialized=True, activation_scheme="dynamic",
                          weight_block_size=[128, 128])
    cfg = VllmConfig()
    with set_current_vllm_config(cfg):
        layer = FusedMoE(num_experts=experts, top_k=topk, hidden_size=hidden,
                         intermediate_size=inter, params_dtype=torch.bfloat16,
                         reduce_results=False, renormalize=True, quant_config=quant,
                         tp_size=tp, ep_size=ep, dp_size=1,
                         has_bias=tag == "gpt-oss-120b",
                         activation="swigluoai" if tag == "gpt-oss-120b" else "silu",
                         prefix="model.layers.0.mlp.experts").cuda()
        for p in layer.parameters():
            if p.dtype in (torch.bfloat16, torch.float32):
                p.data.normal_(0, 0.02)
            elif p.dtype == torch.uint8:
                p.data.random_(0, 255)
        layer.quant_method.process_weights_after_loading(layer)
    return layer, cfg


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="moe_prefill_shapes.csv")
    ap.add_argument("--tokens", type=int, nargs="*", default=TOKENS)
    args = ap.parse_args()
    import vllm
    from vllm.distributed import init_distributed_environment, initialize_model_parallel
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29511")
    init_distributed_environment(world_size=1, rank=0, local_rank=0, backend="nccl")
    initialize_model_parallel(1, 1)
    cap = torch.cuda.get_device_capability()
    cap = cap[0] * 10 + cap[1]
    device = torch.cuda.get_device_name()
    gen = torch.Generator(device="cuda")
    gen.manual_seed(0)
    with open(args.out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(COLUMNS)
        for case in CASES:
            tag, hidden, inter, experts, topk, dtype, env, label, lo, hi = case
            if not lo <= cap <= hi:
                print(f"skip {tag} {label}: needs compute capability {lo}..{hi}, have {cap}", file=sys.stderr)
                continue
            os.environ.update(env)
            for tp, ep in LAYOUTS:
                try:
                    layer, cfg = build_layer(case, tp, ep)
                except Exception as e:  # a layout the kernel refuses: say so, go on
                    print(f"skip {tag} {label} tp{tp} ep{ep}: {e}", file=sys.stderr)
                    continue
                from vllm.config import set_current_vllm_config
                for n in args.tokens:
                    x = torch.randn(n, hidden, device="cuda", dtype=torch.bfloat16)
                    for dist in DISTRIBUTIONS:
                        # the layer's router input: logits that pick the sampled experts
                        wts, ids = routing(n, experts, topk, dist, gen)
                        logits = torch.full((n, experts), -30.0, device="cuda", dtype=torch.bfloat16)
                        logits.scatter_(1, ids.long(), 0.0)
                        with set_current_vllm_config(cfg):
                            # FusedMoE.forward_impl where the version has it (the
                            # layer's own computation, outside the custom-op wrapper)
                            fwd = getattr(layer, "forward_impl", layer.forward)
                            ms = graph_ms(lambda: fwd(x, logits))
                        w.writerow(["VLLM", vllm.__version__, device, "moe", label, dtype, n, hidden,
                                    inter, topk, experts, tp, ep, dist, f"{ms:.6f}"])
                        f.flush()
                del layer
                torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
