#!/usr/bin/env python3
"""Load time: `mtk load` against transformers' from_pretrained, side by
side in one run, for a ~110M and a ~1B llama (bench_parity's models:
random weights, saved by save_pretrained under --dir), each saved float32
and bfloat16.

Rows, per model: the file's dtype -> the model's dtype:
  float32 -> float32, bfloat16 -> bfloat16: no conversion (mtk maps the
      file's tensors, zero copy; from_pretrained uses safetensors' mapped
      storage);
  float32 -> bfloat16: converted on load by both;
  float32 -> float32 with `mtk load --copy`: mtk's copying path (every
      tensor read by pread into one slab), against the same torch figure.
The file is in the page cache: it is read whole once before each row, so
this measures the load, not the disk.

Figures, best of --runs each:
  - mtk: the child's wall seconds and cpu seconds (user + sys, from wait4)
    for the whole `mtk load --json` process (start, config, building on
    meta, key matching, load, exit), its own "seconds" (the load alone:
    placing, reading, verifying) and its peak RSS (by /usr/bin/time);
  - torch: from_pretrained(dir, dtype=D) in this process after the
    imports: wall seconds and cpu seconds (getrusage of this process);
    "touch": the cpu seconds of then reading one element per 4 KiB page of
    every parameter, the page faults its first forward pays for mapped
    weights (mtk's load faults them in itself, MADV_POPULATE_READ).
x = torch / mtk (> 1: mtk faster).  On a shared machine wall time is
mostly the wait for a core: compare the cpu columns.

    python3 bench/bench_load.py [--bin build/mtk] [--models 110m 1b]
        [--threads 2] [--runs 3] [--dir build/bench_parity] [--json]
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, REPO)
import bench_parity  # noqa: E402  (the models and where they live)

REPO = os.path.dirname(REPO)


def bf16_dir(root, name, f32_path):
    """The same model saved in bfloat16 (made once from the float32 one)."""
    path = os.path.join(root, "llama-" + name + "-bf16")
    if not os.path.exists(os.path.join(path, "model.safetensors")):
        import torch
        import transformers
        model = transformers.LlamaForCausalLM.from_pretrained(f32_path, dtype=torch.bfloat16)
        model.save_pretrained(path)
    return path


def into_page_cache(path):
    with open(os.path.join(path, "model.safetensors"), "rb") as f:
        while f.read(1 << 26):
            pass


def run_mtk(binary, path, dtype, threads, copy, runs):
    # peak RSS by /usr/bin/time: a child forked from this process starts
    # with its RSS (torch, a model), which wait4's ru_maxrss would count
    rss_file = tempfile.NamedTemporaryFile("r", suffix=".rss")
    timer = ["/usr/bin/time", "-f", "%M", "-o", rss_file.name] if os.path.exists("/usr/bin/time") else []
    args = timer + [binary, "load", path, "--weights", os.path.join(path, "model.safetensors"), "--json",
            "--threads", str(threads)]
    if dtype:
        args += ["--dtype", dtype]
    if copy:
        args.append("--copy")
    best = None
    for _ in range(runs):
        into_page_cache(path)
        with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
            t0 = time.perf_counter()
            p = subprocess.Popen(args, stdout=out, stderr=err)
            _, status, ru = os.wait4(p.pid, 0)  # the child's own rusage
            wall = time.perf_counter() - t0
            p.returncode = os.waitstatus_to_exitcode(status)
            out.seek(0), err.seek(0)
            text = out.read()
            if p.returncode != 0:
                sys.exit("mtk load failed: " + text[-400:] + err.read())
        doc = json.loads(text)
        rss = rss_file.read().strip().splitlines() if timer else []
        rss_file.seek(0)
        row = dict(wall=wall, cpu=ru.ru_utime + ru.ru_stime, rss_mb=int(rss[-1]) / 1024 if rss else float("nan"),
                   load_s=doc["seconds"],
                   mapped=doc.get("mapped", 0), bytes=doc["bytes"])
        if best is None or row["cpu"] < best["cpu"]:
            best = row
    return best


def cpu_seconds():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def run_torch(path, dtype, threads, runs):
    import gc
    import torch
    import transformers
    torch.set_num_threads(threads)
    if not getattr(run_torch, "warm", False):  # the first from_pretrained of a process pays one-time costs
        transformers.LlamaForCausalLM.from_pretrained(path, dtype=getattr(torch, dtype))
        run_torch.warm = True
    best = None
    for _ in range(runs):
        into_page_cache(path)
        gc.collect()
        t0, c0 = time.perf_counter(), cpu_seconds()
        model = transformers.LlamaForCausalLM.from_pretrained(path, dtype=getattr(torch, dtype))
        row = dict(wall=time.perf_counter() - t0, cpu=cpu_seconds() - c0)
        c1 = cpu_seconds()
        with torch.no_grad():
            for p in model.parameters():
                flat = p.reshape(-1)
                flat[::4096 // flat.element_size()].sum()
        row["touch"] = cpu_seconds() - c1
        del model, p, flat
        if best is None or row["cpu"] < best["cpu"]:
            best = row
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.path.join(REPO, "build", "mtk"))
    ap.add_argument("--models", nargs="+", default=list(bench_parity.MODELS), choices=list(bench_parity.MODELS))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dir", default=os.path.join(REPO, "build", "bench_parity"))
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    rows = []
    for name in a.models:
        f32 = bench_parity.model_dir(a.dir, name)
        bf16 = bf16_dir(a.dir, name, f32)
        cases = [("float32", f32, "float32", False), ("bfloat16", bf16, "bfloat16", False),
                 ("float32", f32, "bfloat16", False), ("float32", f32, "float32", True)]
        for file_dtype, path, dtype, copy in cases:
            load = os.getloadavg()[0]
            m = run_mtk(a.bin, path, dtype if dtype != file_dtype else None, a.threads, copy, a.runs)
            t = run_torch(path, dtype, a.threads, a.runs)
            rows.append(dict(model=name, file=file_dtype, dtype=dtype, mtk_copy=copy, load_avg=load, mtk=m, torch=t))
    if a.json:
        print(json.dumps(dict(threads=a.threads, runs=a.runs, rows=rows), indent=1))
        return
    print(f"llama, random weights, file in the page cache, {a.threads} threads, best of {a.runs} (by cpu)")
    print(f"{'model':5} {'file->model':20} {'mtk':6} {'mapped':>6} {'mtk load s':>10} {'wall s mtk/torch':>17} {'x':>6} "
          f"{'cpu s mtk/torch':>16} {'x':>6} {'torch touch':>11} {'mtk RSS MB':>10} loadavg")
    for r in rows:
        m, t = r["mtk"], r["torch"]
        print(f"{r['model']:5} {r['file'] + '->' + r['dtype']:20} {'copy' if r['mtk_copy'] else 'map':6} "
              f"{m['mapped']:6d} {m['load_s']:10.3f} {m['wall']:8.2f} /{t['wall']:6.2f} {t['wall'] / m['wall']:6.2f} "
              f"{m['cpu']:7.2f} /{t['cpu']:6.2f} {t['cpu'] / max(m['cpu'], 1e-3):6.2f} {t['touch']:11.2f} {m['rss_mb']:10.0f} "
              f"{r['load_avg']:6.1f}")


if __name__ == "__main__":
    main()
