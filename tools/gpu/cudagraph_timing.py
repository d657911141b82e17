# SPDX-License-Identifier: Apache-2.0
"""The one CUDA-graph timer the scripts in tools/gpu share."""

import torch


def graph_ms(fn, warmup=5, iters=20):
    """Mean milliseconds of one replay of fn captured in a CUDA graph: fn runs
    three times on a side stream (allocations, autotuning), is captured, the
    graph is replayed `warmup` times, then `iters` replays are timed."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    for _ in range(warmup):
        g.replay()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        g.replay()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / iters
