#!/usr/bin/env python3
"""Runs bench_meta_ops (mtk's meta device, in C) and the same calls on
torch's meta device (timeit, same shapes) in one run, and prints ns/op for
both and how many times faster mtk is.

    python3 bench/run.py [--bin build/bench_meta_ops] [--scale 1] [--json]

Targets (reported, never asserted): under 200 ns per mtk meta op, and at
least 50x faster than torch.
"""

import argparse
import json
import os
import subprocess
import sys
import timeit

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET_NS = 200.0
TARGET_SPEEDUP = 50.0


def run_mtk(binary: str, scale: float) -> dict:
    out = subprocess.run([binary, str(scale)], check=True, capture_output=True, text=True)
    return {r["name"]: r for r in json.loads(out.stdout)["results"]}


def torch_cases():
    """name -> (callable doing `number` ops, ops per call), on torch's meta device."""
    import torch

    x = torch.empty(64, 128, device="meta")   # (64, 128)
    y = torch.empty(64, 128, device="meta")   # (64, 128)
    w = torch.empty(128, 256, device="meta")  # (128, 256)

    def chain():
        h = x
        for _ in range(200):
            h = torch.add(h, y)                # (64, 128)
            h = torch.mul(h, y)                # (64, 128)
            h = torch.transpose(h, 0, 1)       # (128, 64)
            h = h.reshape(64, 128)             # (64, 128), contiguous
            h = torch.sigmoid(h)               # (64, 128)
        return h

    return {
        "add": (lambda: torch.add(x, y), 1),
        "matmul": (lambda: torch.matmul(x, w), 1),
        "reshape": (lambda: x.reshape(128, 64), 1),
        "chain": (chain, 1000),
    }


def time_torch(fn, ops_per_call: int, budget_s: float) -> float:
    """ns per op: the best of 5 repeats of enough calls to fill the budget."""
    fn()
    t = timeit.timeit(fn, number=1)
    number = max(1, int(budget_s / 5 / max(t, 1e-9)))
    best = min(timeit.repeat(fn, number=number, repeat=5))
    return best / number / ops_per_call * 1e9


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.environ.get("MTK_BENCH", os.path.join(REPO, "build", "bench_meta_ops")))
    ap.add_argument("--scale", type=float, default=1.0, help="multiplies mtk's op counts")
    ap.add_argument("--torch-seconds", type=float, default=0.5, help="time budget per torch case")
    ap.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = ap.parse_args()
    if not os.access(args.bin, os.X_OK):
        print("run.py: no benchmark binary at %s (build it: cmake --build build)" % args.bin,
              file=sys.stderr)
        return 2

    mtk = run_mtk(args.bin, args.scale)
    rows = []
    for name, (fn, ops) in torch_cases().items():
        torch_ns = time_torch(fn, ops, args.torch_seconds)
        m = mtk[name]
        rows.append({"name": name, "what": m["what"], "mtk_ns": m["ns_per_op"],
                     "torch_ns": torch_ns, "speedup": torch_ns / m["ns_per_op"]})

    if args.json:
        print(json.dumps({"unit": "ns/op", "results": rows}, indent=2))
        return 0
    print("%-8s %12s %12s %9s   %s" % ("op", "mtk ns/op", "torch ns/op", "speedup", "what"))
    for r in rows:
        print("%-8s %12.1f %12.1f %8.0fx   %s" % (r["name"], r["mtk_ns"], r["torch_ns"],
                                               r["speedup"], r["what"]))
    slow = [r["name"] for r in rows if r["mtk_ns"] >= TARGET_NS]
    short = [r["name"] for r in rows if r["speedup"] < TARGET_SPEEDUP]
    print("\ntargets: < %.0f ns per mtk meta op: %s; >= %.0fx faster than torch: %s" % (
        TARGET_NS, "met" if not slow else "missed by " + ", ".join(slow),
        TARGET_SPEEDUP, "met" if not short else "missed by " + ", ".join(short)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
