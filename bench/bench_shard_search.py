"""mtk shard --search: configurations estimated per second, whole process.

For each case, `mtk shard MODEL --search --json` runs `--repeat` times; the
search reports how many configurations it estimated (`searched`), its wall
time (`seconds`) and its processor time (`cpu_seconds`), both without the
model's analyses (`analysis_seconds`: traced at micro-batches 1, 2 and 4,
the larger ones scaled from two traced ones where that is exact; `scaled`
says how many).  The whole process is measured too: its wall time and its
processor time (user + sys of the child).  The best of the runs is
printed: on a shared machine the wall time waits for the cores, the
processor time does not.

    python3 bench/bench_shard_search.py [--bin build/mtk] [--repeat 5]
"""
import argparse
import json
import os
import resource
import subprocess
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# (model, gpus, input, global batch, largest micro-batch)
CASES = [
    ("llama-3.1-70b", 64, "1x4096", 512, 8),
    ("llama-3.1-70b", 1024, "1x4096", 2048, 8),
    ("mixtral-8x7b", 64, "1x4096", 512, 8),
    ("mixtral-8x7b", 256, "1x4096", 1024, 8),
    ("llama-3.1-8b", 256, "1x8192", 1024, 8),
    # dense models over 10,000 configurations
    ("llama-3.1-70b", 480, "1x4096", 7680, 256),
    ("qwen3-32b", 480, "1x4096", 7680, 256),
    ("llama-3-8b", 480, "1x4096", 7680, 256),
    # a mixture of experts over 10,000 configurations (ep up to 256)
    ("deepseek-v3", 512, "1x4096", 4096, 4),
]


def run_once(cmd):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return json.loads(out), wall, cpu


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(REPO, "build", "mtk"))
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    print(f"{'case':46} {'searched':>8} {'feasible':>8} {'search wall ms':>14} {'search cpu ms':>13} "
          f"{'cfg/s (cpu)':>11} {'analyses ms':>11} {'scaled':>6} {'process wall ms':>15} {'process cpu ms':>14}")
    for model, gpus, inp, batch, micro in CASES:
        runs = [run_once([args.bin, "shard", model, "--search", "--gpus", str(gpus), "--gpu", "h100-80gb",
                          "--input", inp, "--global-batch", str(batch), "--max-micro-batch", str(micro), "--json"])
                for _ in range(args.repeat)]
        r = runs[0][0]
        wall = min(x["seconds"] for x, _, _ in runs)
        cpu = min(x["cpu_seconds"] for x, _, _ in runs)
        analyses = min(x["analysis_seconds"] for x, _, _ in runs)
        case = f"{model} {gpus} GPUs {inp} x {batch} mb<={micro}"
        print(f"{case:46} {r['searched']:8d} {r['feasible']:8d} {1e3 * wall:14.1f} {1e3 * cpu:13.1f} "
              f"{r['searched'] / max(cpu, 1e-9):11.0f} {1e3 * analyses:11.1f} {r.get('scaled', 0):6d} "
              f"{1e3 * min(w for _, w, _ in runs):15.1f} {1e3 * min(c for _, _, c in runs):14.1f}")


if __name__ == "__main__":
    main()
