"""mtk shard --search: configurations estimated per second.

For each case, `mtk shard MODEL --search --json` runs `--repeat` times; the
search reports how many configurations it estimated (`searched`), its wall
time (`seconds`) and its processor time (`cpu_seconds`), both without the
model's tracing (`analysis_seconds`, once per micro-batch).  The best of
the runs is printed: on a shared machine the wall time waits for the cores,
the processor time does not.

    python3 bench/bench_shard_search.py [--bin build/mtk] [--repeat 5]
"""
import argparse
import json
import os
import subprocess

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# (model, gpus, input, global batch)
CASES = [
    ("llama-3.1-70b", 64, "1x4096", 512),
    ("llama-3.1-70b", 1024, "1x4096", 2048),
    ("mixtral-8x7b", 64, "1x4096", 512),
    ("mixtral-8x7b", 256, "1x4096", 1024),
    ("llama-3.1-8b", 256, "1x8192", 1024),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(REPO, "build", "mtk"))
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    print(f"{'case':44} {'searched':>8} {'feasible':>8} {'wall ms':>8} {'cpu ms':>8} {'cfg/s (cpu)':>12} "
          f"{'trace s':>8}")
    for model, gpus, inp, batch in CASES:
        runs = []
        for _ in range(args.repeat):
            out = subprocess.run([args.bin, "shard", model, "--search", "--gpus", str(gpus), "--gpu", "h100-80gb",
                                  "--input", inp, "--global-batch", str(batch), "--json"],
                                 capture_output=True, text=True, check=True).stdout
            runs.append(json.loads(out))
        wall = min(r["seconds"] for r in runs)
        cpu = min(r["cpu_seconds"] for r in runs)
        r = runs[0]
        case = f"{model} {gpus} GPUs {inp} x {batch}"
        print(f"{case:44} {r['searched']:8d} {r['feasible']:8d} {1e3 * wall:8.1f} {1e3 * cpu:8.1f} "
              f"{r['searched'] / cpu:12.0f} {min(x['analysis_seconds'] for x in runs):8.2f}")


if __name__ == "__main__":
    main()
