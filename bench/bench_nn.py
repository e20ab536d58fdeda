#!/usr/bin/env python3
"""Runs bench_nn (mtk, in C: a 32-layer TransformerEncoderLayer(d=4096) stack
built on meta plus one traced forward) and the same in torch on
torch.device('meta') (build, then a forward under FlopCounterMode), one run
each, and prints both times, the ratio and the memory of the meta model.

    python3 bench/bench_nn.py [--bin build/bench_nn] [--layers 32] [--json]

Targets (reported, never asserted): mtk at least 100x faster than torch;
the meta model's metadata under 1 MB.
"""

import argparse
import json
import os
import subprocess
import sys
import time
import tracemalloc

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET_SPEEDUP = 100.0
TARGET_BYTES = 1 << 20


def run_mtk(binary, layers):
    out = subprocess.run([binary, str(layers)], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def run_torch(layers):
    import torch
    from torch import nn
    from torch.utils.flop_counter import FlopCounterMode

    def build():
        with torch.device("meta"):
            return nn.Sequential(*[nn.TransformerEncoderLayer(4096, 32, 16384) for _ in range(layers)])

    t0 = time.perf_counter()
    model = build()
    t1 = time.perf_counter()
    # the model's Python memory, from a second build (tracemalloc slows it down)
    tracemalloc.start()
    second = build()
    model_bytes = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    del second
    x = torch.empty(128, 1, 4096, device="meta")
    t1c = time.perf_counter()
    with FlopCounterMode(display=False) as counter:
        y = model(x)
    t2 = time.perf_counter()
    with FlopCounterMode(display=False):  # a second, warm forward, for reference
        model(x)
    t3 = time.perf_counter()
    build_ms, forward_ms = (t1 - t0) * 1e3, (t2 - t1c) * 1e3
    return {"params": sum(p.numel() for p in model.parameters()), "build_ms": build_ms,
            "forward_ms": forward_ms, "total_ms": build_ms + forward_ms, "warm_forward_ms": (t3 - t2) * 1e3,
            "flops": counter.get_total_flops(), "model_python_bytes": model_bytes,
            "output": list(y.shape)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.environ.get("MTK_BENCH_NN", os.path.join(REPO, "build", "bench_nn")))
    ap.add_argument("--layers", type=int, default=32)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if not os.access(args.bin, os.X_OK):
        print("bench_nn.py: no benchmark binary at %s (build it: cmake --build build)" % args.bin, file=sys.stderr)
        return 2
    mtk = run_mtk(args.bin, args.layers)
    ref = run_torch(args.layers)
    ratio = ref["total_ms"] / mtk["total_ms"]
    result = {"mtk": mtk, "torch": ref, "speedup": ratio,
              "warm_speedup": (ref["build_ms"] + ref["warm_forward_ms"]) / mtk["total_ms"],
              "params_agree": mtk["params"] == ref["params"], "flops_agree": mtk["flops"] == ref["flops"]}
    if args.json:
        print(json.dumps(result))
        return 0
    print("%d x TransformerEncoderLayer(4096, 32, 16384) on meta, build + traced forward, one run" % args.layers)
    print("  %-6s build %9.3f ms   forward %9.3f ms   total %9.3f ms" % ("mtk", mtk["build_ms"], mtk["forward_ms"], mtk["total_ms"]))
    print("  %-6s build %9.3f ms   forward %9.3f ms   total %9.3f ms   (warm forward %.3f ms)" %
          ("torch", ref["build_ms"], ref["forward_ms"], ref["total_ms"], ref["warm_forward_ms"]))
    print("  speedup: %.0fx (target >= %.0fx; %.0fx against torch's warm forward)" %
          (ratio, TARGET_SPEEDUP, result["warm_speedup"]))
    print("  parameters: mtk %d, torch %d (%s)" % (mtk["params"], ref["params"], "agree" if result["params_agree"] else "DIFFER"))
    print("  FLOPs: mtk %d, torch %d (%s)" % (mtk["flops"], ref["flops"], "agree" if result["flops_agree"] else "DIFFER"))
    print("  meta model metadata: mtk %.0f KB (target < %d KB), torch %.0f KB of Python objects" %
          (mtk["model_arena_bytes"] / 1024, TARGET_BYTES // 1024, ref["model_python_bytes"] / 1024))
    return 0


if __name__ == "__main__":
    sys.exit(main())
