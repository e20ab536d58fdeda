#!/usr/bin/env python3
"""Streaming under a RAM budget (issue 16): `mtk run --max-ram` against the
in-RAM `mtk run` on a ~400 MB random float32 llama (6 layers of 64 MiB,
tests/exec/stream_model.py, cached in --dir), the checkpoint in the page
cache (one untimed read first).  For each budget: the peak RSS of the
process (its ru_maxrss), the forward's seconds as `mtk run --json` reports
them, the load's, and the ratios to the in-RAM run (speed >= 0.8x is the
target).  Also `mtk generate` decode tokens/s, streamed vs in RAM (every
step streams every layer).  Each row is the best of --runs.

    python3 bench/bench_stream.py [--bin build/mtk] [--threads 2] [--seq 128]
        [--new-tokens 8] [--runs 3] [--dir build] [--json]
"""
import argparse
import json
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests", "exec"))
import stream_model  # noqa: E402

MIB = 2**20


def best(args, runs):
    """(doc of the fastest run by its own seconds, max peak RSS of all)."""
    docs, peaks = [], []
    for _ in range(runs):
        r, peak = stream_model.run_peak(args)
        if r.returncode != 0:
            sys.exit(f"bench_stream: {' '.join(map(str, args[:3]))}: {r.stdout[-400:]}{r.stderr}")
        docs.append(json.loads(r.stdout))
        peaks.append(peak)
    key = "seconds" if "seconds" in docs[0] else "decode_seconds"
    return min(docs, key=lambda d: d[key]), max(peaks)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.path.join(REPO, "build", "mtk"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--new-tokens", type=int, default=8)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dir", default=os.path.join(REPO, "build"))
    ap.add_argument("--json", action="store_true")
    o = ap.parse_args()
    model = stream_model.big_llama(o.dir)
    with open(model / "model.safetensors", "rb") as f:  # into the page cache
        while f.read(64 * MIB):
            pass
    size = stream_model.model_bytes()
    ids = ",".join(str(1 + i % 999) for i in range(o.seq))
    base = [o.bin, "run", model, "--weights", model, "--input-ids", ids, "--threads", o.threads, "--top", "0",
            "--json"]
    sizes, _ = best(base + ["--max-ram", 2 * size], 1)  # the stream's own sizes
    fixed, layer = sizes["stream"]["fixed_bytes"], sizes["stream"]["layer_bytes"]
    budgets = [("in RAM", None), ("1 layer", fixed + layer), ("2 layers (prefetch)", fixed + 2 * layer),
               ("half the model", size // 2)]
    # the cases interleaved, --runs rounds, so that the machine's load
    # changes hit every case alike; each case keeps its fastest round
    found = {label: [] for label, _ in budgets}
    for _ in range(o.runs):
        for label, budget in budgets:
            found[label].append(best(base + ([] if budget is None else ["--max-ram", budget]), 1))
    rows = []
    ref = None
    for label, budget in budgets:
        doc = min((d for d, _ in found[label]), key=lambda d: d["seconds"])
        peak = max(p for _, p in found[label])
        if ref is None:
            ref = doc
        rows.append(dict(case=label, budget=budget, peak_rss=peak, seconds=doc["seconds"],
                         load_seconds=doc["load_seconds"], speed_vs_in_ram=ref["seconds"] / doc["seconds"],
                         total_vs_in_ram=(ref["seconds"] + ref["load_seconds"]) / (doc["seconds"] + doc["load_seconds"]),
                         prefetched=doc["stream"]["prefetched"] if doc["stream"] else None,
                         wait_seconds=doc["stream"]["wait_seconds"] if doc["stream"] else None))
    gen = [o.bin, "generate", model, "--weights", model, "--input-ids", ",".join(map(str, range(1, 17))),
           "--max-new-tokens", o.new_tokens, "--eos-token-id", "none", "--threads", o.threads, "--json"]
    g = {False: [], True: []}
    for _ in range(o.runs):
        for streamed in (False, True):
            g[streamed].append(best(gen + (["--max-ram", fixed + 2 * layer] if streamed else []), 1))
    g_ram, g_ram_peak = max(g[False], key=lambda x: x[0]["decode_tokens_per_s"])
    g_st, g_st_peak = max(g[True], key=lambda x: x[0]["decode_tokens_per_s"])
    result = dict(model_bytes=size, seq=o.seq, threads=o.threads, run=rows,
                  generate=dict(in_ram_decode_tokens_per_s=g_ram["decode_tokens_per_s"], in_ram_peak_rss=g_ram_peak,
                                streamed_decode_tokens_per_s=g_st["decode_tokens_per_s"], streamed_peak_rss=g_st_peak,
                                budget=fixed + 2 * layer))
    if o.json:
        print(json.dumps(result, indent=1))
        return
    floor = stream_model.run_peak([o.bin, "--help"])[1]
    print(f"process floor (mtk --help): peak RSS {floor / MIB:.1f} MiB")
    print(f"model {size / MIB:.1f} MiB (6 layers of {layer / MIB:.1f} MiB, {fixed / MIB:.1f} MiB outside), "
          f"prefill of {o.seq} tokens, {o.threads} threads, best of {o.runs}")
    print(f"{'case':<22}{'budget MiB':>11}{'peak RSS MiB':>14}{'forward s':>11}{'load s':>8}"
          f"{'fwd speed':>11}{'total speed':>13}{'prefetched':>11}")
    for r in rows:
        b = "-" if r["budget"] is None else f"{r['budget'] / MIB:.1f}"
        p = "-" if r["prefetched"] is None else str(r["prefetched"])
        print(f"{r['case']:<22}{b:>11}{r['peak_rss'] / MIB:>14.1f}{r['seconds']:>11.3f}{r['load_seconds']:>8.3f}"
              f"{r['speed_vs_in_ram']:>10.2f}x{r['total_vs_in_ram']:>12.2f}x{p:>11}")
    g = result["generate"]
    print(f"generate {o.new_tokens} tokens: decode {g['in_ram_decode_tokens_per_s']:.1f} tok/s in RAM "
          f"(peak {g['in_ram_peak_rss'] / MIB:.0f} MiB), {g['streamed_decode_tokens_per_s']:.1f} tok/s streamed "
          f"under {g['budget'] / MIB:.0f} MiB (peak {g['streamed_peak_rss'] / MIB:.0f} MiB): "
          f"{g['streamed_decode_tokens_per_s'] / g['in_ram_decode_tokens_per_s']:.2f}x")


if __name__ == "__main__":
    main()
