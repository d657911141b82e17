#!/usr/bin/env python3
"""Time vLLM v1's sampler per decode step, by batch size, vocabulary and
sampling parameters: the per-step GPU work that BLIS does not price (it
charges only host time per sampled token).

Why: the Qwen3-32B H100 rows of the calibration file (vLLM 0.12.0,
aiconfigurator's gap-analysis collection, client unknown) decode 4-28 %
slower than BLIS, growing with the number of running requests
(docs/accuracy.md, "Regime: Qwen3-32B on H100"). Qwen3-32B's
generation_config.json sets temperature 0.6, top_k 20, top_p 0.95, which
vLLM (--generation-config auto) applies to requests that send no sampling
parameters; InferenceX's client sends temperature 0 (greedy). vLLM 0.12 on
CUDA samples top-k/top-p with the PyTorch path unless
VLLM_USE_FLASHINFER_SAMPLER=1: a full sort of the [batch, vocab] fp32
logits per step. No public table times it; these rows say how large it is.

What runs, mirroring vllm/v1/sample/sampler.py (Sampler.forward/sample) of
the installed vLLM from the logits on: the bf16 logits cast to fp32; greedy
rows take argmax; otherwise the logits are divided by the temperature and
passed to vLLM's own TopKTopPSampler (imported, so the installed version's
path is what is timed: forward_native or forward_cuda, recorded in
kernel_source), and the greedy argmax is taken too as vLLM does for mixed
batches. The sampler runs eagerly after the model's CUDA graph in vLLM's
GPU model runner, so it is timed eagerly: mean wall time per call over
--iters back-to-back calls after --warmup, synchronised at both ends
(launch overhead included, as in serving), plus the CUDA-event time.

Output (--out): sampler_perf.csv with framework, version, device, op_name,
kernel_source, batch_size, vocab_size, sampling, temperature, top_k, top_p,
latency (ms, wall), device_latency (ms, CUDA events).

Needs: one CUDA GPU, torch and vllm installed.
Run: python3 tools/gpu/sampler_vocab.py --out /tmp/sampler   (about 2 min;
run once more with VLLM_USE_FLASHINFER_SAMPLER=1 for FlashInfer's path)
"""
import argparse
import csv
import os
import time

import torch

try:
    import vllm
    from vllm.v1.sample.ops.topk_topp_sampler import TopKTopPSampler
except ImportError as e:  # pragma: no cover - needs vllm
    raise SystemExit(f"vllm's v1 sampler not importable ({e}); install vllm on the GPU machine")

COLUMNS = ["framework", "version", "device", "op_name", "kernel_source", "batch_size", "vocab_size",
           "sampling", "temperature", "top_k", "top_p", "latency", "device_latency"]

# Vocabularies: Qwen3 (151936), Llama-3 (128256), gpt-oss (201088).
VOCABS = [151936, 128256, 201088]
BATCHES = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]
# (name, temperature, top_k, top_p); top_k 0 / top_p 1 mean "off" as in vLLM.
MODES = [
    ("greedy", 0.0, 0, 1.0),
    ("temperature", 0.6, 0, 1.0),
    ("top_k", 0.6, 20, 1.0),
    ("top_p", 0.6, 0, 0.95),
    ("top_k_top_p", 0.6, 20, 0.95),  # Qwen3's generation_config.json
]


def make_sampler():
    try:
        return TopKTopPSampler(logprobs_mode="raw_logprobs")
    except TypeError:  # older signature
        return TopKTopPSampler()


def step_fn(sampler, logits_bf16, temp, k, p, greedy):
    """One Sampler step from the lm_head's bf16 logits."""
    def fn():
        logits = logits_bf16.to(torch.float32)
        greedy_ids = logits.argmax(dim=-1)
        if greedy:
            return greedy_ids
        logits = logits.div_(temp.unsqueeze(1))
        out = sampler(logits, {}, k, p)
        return out[0] if isinstance(out, tuple) else out
    return fn


def time_eager(fn, warmup, iters):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    t0 = time.perf_counter()
    start.record()
    for _ in range(iters):
        fn()
    end.record()
    torch.cuda.synchronize()
    wall = (time.perf_counter() - t0) * 1e3 / iters
    return wall, start.elapsed_time(end) / iters


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="output folder")
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--iters", type=int, default=50)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    dev = torch.device("cuda")
    device_name = torch.cuda.get_device_name(dev)
    sampler = make_sampler()
    source = "vllm_" + getattr(sampler.forward, "__name__", "forward")
    path = os.path.join(args.out, "sampler_perf.csv")
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(COLUMNS)
        for vocab in VOCABS:
            for b in BATCHES:
                torch.manual_seed(0)
                logits = (torch.randn(b, vocab, device=dev) * 4).to(torch.bfloat16)
                for name, t, k, p in MODES:
                    temp = torch.full((b,), max(t, 1e-5), device=dev)
                    kk = torch.full((b,), k, dtype=torch.int32, device=dev) if k > 0 else None
                    pp = torch.full((b,), p, device=dev) if p < 1.0 else None
                    fn = step_fn(sampler, logits, temp, kk, pp, t == 0.0)
                    wall, devms = time_eager(fn, args.warmup, args.iters)
                    src = "argmax" if t == 0.0 else source
                    w.writerow(["vllm", vllm.__version__, device_name, "sampler", src, b, vocab,
                                name, t, k, p, f"{wall:.5f}", f"{devms:.5f}"])
                    f.flush()
                    print(f"vocab {vocab} batch {b:4d} {name:12s} {wall:8.3f} ms wall {devms:8.3f} ms device")
    print("wrote", path)


if __name__ == "__main__":
    main()
