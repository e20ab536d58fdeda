#!/usr/bin/env python3
"""Compares mtk's cpu kernels with torch's cpu kernels, one run, same
thread count (issue 3).  For each case it runs build/bench_cpu_kernels
(mtk, in C) with OPENBLAS_NUM_THREADS set, then the same op in torch after
torch.set_num_threads (in this process), on the same input values (both
fill their inputs from one formula), and prints a table: mtk ms, torch ms
(best of --runs after a warm-up of up to 0.5 s; the short matmul and conv2d cases run
4x as many, since one stall of a loaded machine spoils a short run), two
ratios torch/mtk, and the target per op, marked met or missed; plus whether
the output checksums (sum of |y|) agree.  The two ratios: "ratio" takes
each side's best time over all --rounds; "paired" is the median, over the
rounds, of torch's median / mtk's median within one round.  On a virtual
machine whose speed changes in phases (other tenants), the best times of
the two sides can come from different phases; a round's pair is measured
seconds apart.  A target counts as met when both ratios meet it.

    python3 bench/bench_cpu_kernels.py [--bin build/bench_cpu_kernels]
        [--threads 2] [--runs 5] [--rounds 3] [--json] [CASE ...]

Above the table it prints the machine, as the C side reports it: the cpu
model, the vector instruction sets present, the kernel variant that ran
(the best this cpu has, or MTK_CPU_ISA=baseline|avx2|avx512's, see
docs/ops.md) and what each case dispatched to.

Cases: matmul, conv2d_r50_b1, conv2d_r50_b8, conv2d_3x3, softmax,
layer_norm, add (default: all).  Targets (reported, never asserted): within
1.25x of torch (ratio >= 0.8) for matmul and conv2d, at least parity
(ratio >= 1.0) for softmax, layer_norm and add.
"""

import argparse
import json
import os
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CASES = ["matmul", "conv2d_r50_b1", "conv2d_r50_b8", "conv2d_3x3", "softmax", "layer_norm", "add"]
SHAPES = {
    "matmul": "(1024,1024) @ (1024,1024)",
    "conv2d_r50_b1": "1x3x224x224 * 64x3x7x7 s2 p3",
    "conv2d_r50_b8": "8x3x224x224 * 64x3x7x7 s2 p3",
    "conv2d_3x3": "8x64x56x56 * 64x64x3x3 p1",
    "softmax": "(8,2048,4096) dim -1",
    "layer_norm": "(8,2048,4096) last dim",
    "add": "64M + 64M",
}
# warm-up, as bench_cpu_kernels.c: one call, more while under WARMUP_MS in all
WARMUP_MS = 500.0
WARMUP_MAX_CALLS = 20
# cases of tens of ms at most: SHORT_RUN_FACTOR times --runs each
SHORT_CASES = {"matmul", "conv2d_r50_b1", "conv2d_r50_b8", "conv2d_3x3"}
SHORT_RUN_FACTOR = 4
# minimum ratio torch_ms / mtk_ms: 1/1.25 = within 1.25x of torch; 1.0 = parity
TARGETS = {"matmul": 0.8, "conv2d_r50_b1": 0.8, "conv2d_r50_b8": 0.8, "conv2d_3x3": 0.8,
           "softmax": 1.0, "layer_norm": 1.0, "add": 1.0}


def run_mtk(binary, threads, runs, cases):
    """({case: result}, cpu) of one run of the C benchmark; cpu is its
    report of the machine and of the kernel variant each case ran."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads))
    out = subprocess.run([binary, str(threads), str(runs)] + cases, check=True, capture_output=True,
                         text=True, env=env)
    doc = json.loads(out.stdout)
    return {c["name"]: c for c in doc["cases"]}, doc.get("cpu", {})


def cpu_lines(cpu):
    """The machine and the dispatch, as printed above the table."""
    request = cpu.get("isa_request")
    forced = " (MTK_CPU_ISA=%s)" % request if request else ""
    kernels = cpu.get("kernels", {})
    return ["cpu: %s; instruction sets: %s; kernels run the %s variant%s (best here: %s)" % (
                cpu.get("model", "?"), " ".join(cpu.get("isa_present", [])) or "none of the vector ones",
                cpu.get("isa_active", "?"), forced, cpu.get("isa_best", "?")),
            "dispatch: " + "; ".join("%s: %s" % kv for kv in kernels.items())]


def filled(torch, shape, seed):
    """The C side's fill_value(i, seed) for every element, as float32."""
    n = 1
    for s in shape:
        n *= s
    h = ((torch.arange(n, dtype=torch.int64) + seed * 7919) * 2654435761) & 0xFFFFFFFF
    return (h.double() / 4294967296.0 - 0.5).float().reshape(shape)


def torch_case(torch, name):
    """(inputs, fn) for one case, inputs filled as bench_cpu_kernels.c does."""
    F = torch.nn.functional
    if name == "matmul":
        return [filled(torch, (1024, 1024), 1), filled(torch, (1024, 1024), 2)], torch.matmul
    if name.startswith("conv2d_r50"):
        n = 8 if name == "conv2d_r50_b8" else 1
        return ([filled(torch, (n, 3, 224, 224), 1), filled(torch, (64, 3, 7, 7), 2)],
                lambda x, w: F.conv2d(x, w, None, stride=2, padding=3))
    if name == "conv2d_3x3":
        return ([filled(torch, (8, 64, 56, 56), 1), filled(torch, (64, 64, 3, 3), 2)],
                lambda x, w: F.conv2d(x, w, None, padding=1))
    if name == "softmax":
        return [filled(torch, (8, 2048, 4096), 1)], lambda x: torch.softmax(x, -1)
    if name == "layer_norm":
        return ([filled(torch, (8, 2048, 4096), 1), filled(torch, (4096,), 2), filled(torch, (4096,), 3)],
                lambda x, w, b: F.layer_norm(x, (4096,), w, b, 1e-5))
    if name == "add":
        return [filled(torch, (64 << 20,), 1), filled(torch, (64 << 20,), 2)], torch.add
    raise ValueError(name)


def run_torch(threads, runs, cases):
    import torch
    torch.set_num_threads(threads)
    results = {}
    with torch.inference_mode():
        for name in cases:
            inputs, fn = torch_case(torch, name)
            # warm-up as the C side: one call, more while under WARMUP_MS in all
            # (torch's 1-batch conv2d stays ~10x slower for its first few calls)
            y = fn(*inputs)
            checksum = y.double().abs().sum().item()
            del y
            t_start, calls = time.perf_counter(), 1
            while (time.perf_counter() - t_start) * 1e3 < WARMUP_MS and calls < WARMUP_MAX_CALLS:
                fn(*inputs)
                calls += 1
            times = []
            for _ in range(runs):
                t0 = time.perf_counter()
                y = fn(*inputs)
                times.append((time.perf_counter() - t0) * 1e3)
                del y
            times.sort()
            results[name] = {"best_ms": times[0], "median_ms": times[len(times) // 2], "times_ms": times,
                             "checksum": checksum}
            del inputs
    return results, torch.__version__, torch.get_num_threads()


def merge_times(into, results):
    """Pools each case's times from another round into `into`."""
    for name, r in results.items():
        if name in into:
            times = sorted(into[name]["times_ms"] + r["times_ms"])
            into[name].update(times_ms=times, best_ms=times[0], median_ms=times[len(times) // 2])
        else:
            into[name] = dict(r)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.environ.get("MTK_BENCH_CPU",
                                                    os.path.join(REPO, "build", "bench_cpu_kernels")))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3, help="alternations of mtk and torch per case")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("cases", nargs="*", help="subset of: " + ", ".join(CASES))
    args = ap.parse_args()
    cases = args.cases or CASES
    unknown = [c for c in cases if c not in CASES]
    if unknown:
        print("bench_cpu_kernels.py: unknown case(s) %s; known: %s" % (", ".join(unknown), ", ".join(CASES)),
              file=sys.stderr)
        return 2
    if not os.access(args.bin, os.X_OK):
        print("bench_cpu_kernels.py: no benchmark binary at %s (build it: cmake --build build)" % args.bin,
              file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    # case by case, mtk then torch, so both sides of a row see about the same
    # load on a shared machine
    # and in --rounds alternations, so a machine whose speed drifts over
    # seconds (other tenants) slows both sides alike; times pooled
    # Besides the pooled best-of, each round's pair of medians gives a
    # ratio of its own: mtk and torch measured seconds apart, in the same
    # phase of the machine; the median of those is the "paired" ratio.
    mtk, ref, paired, cpu = {}, {}, {}, {}
    for name in cases:
        runs = min(args.runs * SHORT_RUN_FACTOR, 50) if name in SHORT_CASES else args.runs
        for _ in range(args.rounds):
            got_mtk, cpu = run_mtk(args.bin, args.threads, runs, [name])
            merge_times(mtk, got_mtk)
            got, torch_version, torch_threads = run_torch(args.threads, runs, [name])
            merge_times(ref, got)
            if name in got_mtk:
                paired.setdefault(name, []).append(got[name]["median_ms"] / got_mtk[name]["median_ms"])
    rows = []
    for name in cases:
        if name not in mtk:
            rows.append({"name": name, "error": "mtk failed (see stderr)"})
            continue
        m, t = mtk[name], ref[name]
        ratio = t["best_ms"] / m["best_ms"]
        pairs = sorted(paired[name])
        paired_ratio = pairs[len(pairs) // 2] if len(pairs) % 2 else (pairs[len(pairs) // 2 - 1] + pairs[len(pairs) // 2]) / 2
        agree = abs(m["checksum"] - t["checksum"]) <= 1e-4 * max(abs(t["checksum"]), 1.0)
        rows.append({"name": name, "shape": SHAPES[name], "mtk_ms": m["best_ms"], "torch_ms": t["best_ms"],
                     "mtk_median_ms": m["median_ms"], "torch_median_ms": t["median_ms"], "ratio": ratio,
                     "paired_ratio": paired_ratio, "round_ratios": paired[name], "target_ratio": TARGETS[name], "met": ratio >= TARGETS[name], "paired_met": paired_ratio >= TARGETS[name],
                     "mtk_checksum": m["checksum"], "torch_checksum": t["checksum"], "checksums_agree": agree})
    wall = time.perf_counter() - t0
    if args.json:
        print(json.dumps({"threads": args.threads, "torch_threads": torch_threads, "runs": args.runs, "cpu": cpu,
                          "torch": torch_version, "wall_s": wall, "cases": rows}))
        return 0
    print("mtk cpu kernels vs torch %s cpu: %d threads each (torch.get_num_threads() = %d), "
          "best of %d rounds x %d runs (matmul, conv2d: x %d), mtk and torch alternating, after a warm-up" % (
              torch_version, args.threads, torch_threads, args.rounds, args.runs, min(args.runs * SHORT_RUN_FACTOR, 50)))
    for line in cpu_lines(cpu):
        print(line)
    print("%-14s %-30s %10s %10s %7s %7s  %-14s %s" % ("op", "shape", "mtk ms", "torch ms", "ratio", "paired",
                                                        "target", "same out"))
    for r in rows:
        if "error" in r:
            print("%-14s %s" % (r["name"], r["error"]))
            continue
        target = (">=%.2f (1.25x)" if r["target_ratio"] < 1 else ">=%.2f (par)") % r["target_ratio"]
        verdict = "met" if r["met"] and r["paired_met"] else "MISSED" if not (r["met"] or r["paired_met"]) else \
            "borderline (best-of met)" if r["met"] else "borderline (paired met)"
        print("%-14s %-30s %10.2f %10.2f %7.2f %7.2f  %-14s %-5s %s" % (
            r["name"], r["shape"], r["mtk_ms"], r["torch_ms"], r["ratio"], r["paired_ratio"], target,
            "yes" if r["checksums_agree"] else "NO", verdict))
    print("ratio = torch ms / mtk ms (> 1: mtk faster), of each side's best time over all rounds; paired = the median\n"
          "over rounds of torch's median / mtk's median in that round (both measured seconds apart); wall %.1f s" % wall)
    return 0


if __name__ == "__main__":
    sys.exit(main())
