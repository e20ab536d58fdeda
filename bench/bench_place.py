"""mtk place vs accelerate's infer_auto_device_map, side by side.

For each built-in model and budget (GPUs + cpu, an input and a generation
length), accelerate maps the transformers model (built on meta from the same
config.json, its _no_split_modules kept whole) under the same max_memory, and
`mtk place` searches its own map.  Then `mtk place --map` charges both maps
with mtk's per-module accounting (the traced graph replayed per device:
activations, KV cache, logits, offloaded weights streamed to the first GPU):
how often accelerate's map leaves a device over its budget, counting only
what runs there (--margin 0) and also mtk's default margin (CUDA context,
cuBLAS workspace, 5% fragmentation); mtk's own map never is.  Times: accelerate's
infer_auto_device_map call (model already built) and build + call, mtk place
as a whole process (model build and trace included).

    python3 bench/bench_place.py [--bin build/mtk] [--models a,b] [--quick]
"""
import argparse
import contextlib
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests", "models"))

GiB = 1 << 30
MODELS = ["llama-3.1-8b", "mistral-7b", "qwen2.5-7b", "gemma-2-9b", "phi-3-mini", "mixtral-8x7b", "llama-3.1-70b"]
# (label, max_memory, input, mode, new tokens)
SCENARIOS = [
    ("1x24GiB+cpu inference 1x4096", {0: 24 * GiB, "cpu": 512 * GiB}, "1x4096", "inference", 1),
    ("1x24GiB+cpu generate 8x4096+4096", {0: 24 * GiB, "cpu": 512 * GiB}, "8x4096", "generate", 4096),
    ("2x24GiB+cpu inference 8x4096", {0: 24 * GiB, 1: 24 * GiB, "cpu": 512 * GiB}, "8x4096", "inference", 1),
    ("1x80GiB+cpu inference 8x8192", {0: 80 * GiB, "cpu": 512 * GiB}, "8x8192", "inference", 1),
    ("2x80GiB+cpu generate 32x4096+4096", {0: 80 * GiB, 1: 80 * GiB, "cpu": 512 * GiB}, "32x4096", "generate", 4096),
]


def spec_of(max_memory):
    return ",".join(f"{k}={v}" for k, v in max_memory.items())


def mtk(binary, *args):
    t = time.perf_counter()
    r = subprocess.run([binary, "place", *args, "--json"], capture_output=True, text=True)
    dt = time.perf_counter() - t
    out = json.loads(r.stdout) if r.stdout.strip() else None
    return dt, r.returncode, out, r.stderr


def over(plan):
    """Devices whose peak passes their budget."""
    return [str(d["device"]) for d in plan["devices"]
            if d["budget_bytes"] is not None and d["peak_bytes"] > d["budget_bytes"]]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.environ.get("MTK_BIN", os.path.join(REPO, "build", "mtk")))
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--quick", action="store_true", help="the first two scenarios only")
    args = ap.parse_args()
    import hf_oracle  # torch and transformers: imported once, not timed
    from accelerate import infer_auto_device_map

    scenarios = SCENARIOS[:2] if args.quick else SCENARIOS
    rows, acc_times, acc_build_times, mtk_times = [], [], [], []
    tally = dict(cases=0, acc_over=0, acc_over_margin=0, mtk_over=0, mtk_refused=0, both_ok=0)
    for name in args.models.split(","):
        cfg = json.load(open(os.path.join(REPO, "tests", "models", "corpus", f"{name}.json")))
        t = time.perf_counter()
        with tempfile.TemporaryDirectory() as d:
            model = hf_oracle.hf_model(hf_oracle.hf_config(cfg, d))
        build = time.perf_counter() - t
        no_split = list(model._no_split_modules or [])
        for label, max_memory, shape, mode, new in scenarios:
            common = ["--max-memory", spec_of(max_memory), "--input", shape, "--mode", mode, "--new-tokens", str(new)]
            t = time.perf_counter()
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                amap = infer_auto_device_map(model, max_memory=dict(max_memory), no_split_module_classes=no_split)
            dt = time.perf_counter() - t
            acc_times.append(dt)
            acc_build_times.append(dt + build)
            with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
                json.dump({k: v for k, v in amap.items()}, f)
                path = f.name
            _, rc0, acc_plain, err0 = mtk(args.bin, name, *common, "--margin", "0", "--map", path)
            _, rc1, acc_margin, err1 = mtk(args.bin, name, *common, "--map", path)
            os.unlink(path)
            if rc0 or rc1:
                print(f"{name} {label}: mtk could not charge accelerate's map: {err0 or err1}", file=sys.stderr)
                continue
            dt_m, rc, ours, err = mtk(args.bin, name, *common)
            mtk_times.append(dt_m)
            tally["cases"] += 1
            a_over, a_over_m = over(acc_plain), over(acc_margin)
            tally["acc_over"] += bool(a_over)
            tally["acc_over_margin"] += bool(a_over_m)
            if rc:
                tally["mtk_refused"] += 1
                message = (ours or {}).get("error", {}).get("message", err.strip())
                verdict = "no map fits: " + message.split("needs ")[-1][:60]
            else:
                m_over = over(ours)
                tally["mtk_over"] += bool(m_over)
                tally["both_ok"] += not a_over_m
                verdict = "over on " + ",".join(m_over) if m_over else \
                    "ok, offloaded %.1f GiB" % (ours["offloaded_bytes"] / GiB)
            worst = max(acc_plain["devices"], key=lambda d: (d["peak_bytes"] - (d["budget_bytes"] or 0)))
            rows.append((name, label, "over on " + ",".join(a_over) if a_over else "fits",
                         "%.1f/%.0f GiB" % (worst["peak_bytes"] / GiB, (worst["budget_bytes"] or 0) / GiB),
                         "over" if a_over_m else "fits", verdict, 1e3 * dt, 1e3 * dt_m))
    w = max(len(r[0]) + len(r[1]) for r in rows) + 3
    print("%-*s %-14s %-16s %-10s %-48s %9s %9s" % (w, "model / scenario", "accelerate", "its worst peak",
                                                    "+margin", "mtk place", "acc ms", "mtk ms"))
    for r in rows:
        print("%-*s %-14s %-16s %-10s %-48s %9.1f %9.1f" % (w, r[0] + "  " + r[1], r[2], r[3], r[4], r[5][:48], r[6],
                                                            r[7]))
    n = tally["cases"]
    print()
    print(f"{n} cases: accelerate's map leaves a device over budget in {tally['acc_over']} once activations, "
          f"KV cache and logits count (in {tally['acc_over_margin']} with mtk's default margin too)")
    print(f"mtk place: over budget in {tally['mtk_over']}; refused (no map fits) in {tally['mtk_refused']}")
    print("time: accelerate infer_auto_device_map median %.1f ms (%.0f ms with the meta model's build); "
          "mtk place median %.1f ms (whole process: build, trace, search)"
          % (1e3 * statistics.median(acc_times), 1e3 * statistics.median(acc_build_times),
             1e3 * statistics.median(mtk_times)))


if __name__ == "__main__":
    main()
