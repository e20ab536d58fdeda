#!/usr/bin/env python3
"""The parity table of issue 16: `mtk generate` against transformers on the
cpu, one run, same threads, for a ~110M and a ~1B llama (random weights,
transformers' init, saved float32 by save_pretrained into --dir once),
float32 and bfloat16.

Per model and dtype, each side loads the checkpoint (file in the page
cache: one untimed read first) and greedily decodes a 1 x --prompt prompt
for --new tokens:
  - mtk: build/mtk generate --dtype D --threads T --json: its own load,
    prefill and decode figures (load_seconds, prefill/decode tokens/s);
  - transformers: torch.set_num_threads(T); load = from_pretrained(dir,
    dtype=D) timed in this process (after the imports); prefill =
    generate(max_new_tokens=1); decode tokens/s = (new - 1) / (t(new) -
    t(1)).
Each figure is the best of --runs.  Columns "x" are mtk/torch ratios of
tokens/s (>= 1: mtk faster) and torch/mtk of load seconds.  On a shared
machine wall time mostly measures the wait for a core, so the decode is
also given in tokens per cpu-second (user + sys, getrusage: the mtk
child's, this process's for torch; decode = (new - 1) / (cpu(new) -
cpu(1)), mtk running a 1-token generate for cpu(1)); compare these at
--threads 1, where no thread spins waiting for work.

    python3 bench/bench_parity.py [--bin build/mtk] [--threads 2]
        [--models 110m 1b] [--dtypes float32 bfloat16] [--prompt 32]
        [--new 16] [--runs 2] [--dir build/bench_parity]
        [--baseline OLD_MTK [--baseline-models 110m]] [--json]

--baseline runs a second mtk binary (an older build) on the same models
in the same run, as a row "mtk (baseline)" against the same torch figures.
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMMON = dict(max_position_embeddings=2048, bos_token_id=1, eos_token_id=None, pad_token_id=None,
              tie_word_embeddings=False)
MODELS = {
    # ~110M: 12 layers of 768, vocab 16000
    "110m": dict(hidden_size=768, intermediate_size=2048, num_hidden_layers=12, num_attention_heads=12,
                 num_key_value_heads=12, vocab_size=16000, **COMMON),
    # ~1.0B: 20 layers of 2048 (grouped kv 32/8, TinyLlama's widths), vocab 32000
    "1b": dict(hidden_size=2048, intermediate_size=5632, num_hidden_layers=20, num_attention_heads=32,
               num_key_value_heads=8, vocab_size=32000, **COMMON),
}


def model_dir(root, name):
    path = os.path.join(root, "llama-" + name)
    if not os.path.exists(os.path.join(path, "model.safetensors")):
        import torch
        import transformers
        torch.manual_seed(0)
        model = transformers.LlamaForCausalLM(transformers.LlamaConfig(**MODELS[name])).eval()
        with torch.no_grad():  # larger than the init's 0.02: a well separated argmax
            for p in model.parameters():
                if p.ndim > 1:
                    p.mul_(5.0)
        model.save_pretrained(path)
    with open(os.path.join(path, "model.safetensors"), "rb") as f:  # into the page cache
        while f.read(1 << 26):
            pass
    return path


def cpu_seconds(who):
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime


def run_mtk(binary, path, ids, new, threads, dtype, runs):
    def args(n):
        return [binary, "generate", path, "--weights", os.path.join(path, "model.safetensors"), "--input-ids",
                ",".join(map(str, ids)), "--max-new-tokens", str(n), "--threads", str(threads), "--json",
                "--eos-token-id", "none", "--dtype", dtype]

    docs, cpu = [], {1: float("inf"), new: float("inf")}
    for _ in range(runs):
        for n in (1, new):
            c0 = cpu_seconds(resource.RUSAGE_CHILDREN)
            r = subprocess.run(args(n), capture_output=True, text=True, timeout=3600)
            cpu[n] = min(cpu[n], cpu_seconds(resource.RUSAGE_CHILDREN) - c0)
            if r.returncode != 0:
                sys.exit("mtk generate failed: " + r.stdout[-400:] + r.stderr)
            if n == new:
                docs.append(json.loads(r.stdout))
    return dict(load_s=min(d["load_seconds"] for d in docs),
                prefill=max(d["prefill_tokens_per_s"] for d in docs),
                decode=max(d["decode_tokens_per_s"] for d in docs),
                decode_cpu=(new - 1) / max(cpu[new] - cpu[1], 1e-9), sequences=docs[0]["sequences"])


def run_torch(path, ids, new, threads, dtype, runs):
    import torch
    import transformers
    torch.set_num_threads(threads)
    load_s, model = float("inf"), None
    for _ in range(runs):
        model = None
        t0 = time.perf_counter()
        model = transformers.LlamaForCausalLM.from_pretrained(path, dtype=getattr(torch, dtype)).eval()
        load_s = min(load_s, time.perf_counter() - t0)
    x = torch.tensor([ids])

    def timed(n):
        best, best_cpu, out = float("inf"), float("inf"), None
        for _ in range(runs):
            t0, c0 = time.perf_counter(), cpu_seconds(resource.RUSAGE_SELF)
            with torch.no_grad():
                out = model.generate(input_ids=x, attention_mask=torch.ones_like(x), do_sample=False,
                                     max_new_tokens=n, min_new_tokens=n)
            best = min(best, time.perf_counter() - t0)
            best_cpu = min(best_cpu, cpu_seconds(resource.RUSAGE_SELF) - c0)
        return best, best_cpu, out

    t1, c1, _ = timed(1)
    tn, cn, out = timed(new)
    return dict(load_s=load_s, prefill=len(ids) / t1, decode=(new - 1) / (tn - t1),
                decode_cpu=(new - 1) / max(cn - c1, 1e-9), sequences=out.tolist())


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.path.join(REPO, "build", "mtk"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    ap.add_argument("--dtypes", nargs="+", default=["float32", "bfloat16"])
    ap.add_argument("--prompt", type=int, default=32)
    ap.add_argument("--new", type=int, default=16)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--dir", default=os.path.join(REPO, "build", "bench_parity"))
    ap.add_argument("--baseline", help="an older mtk binary to run beside --bin")
    ap.add_argument("--baseline-models", nargs="+", default=None, help="models the baseline runs (default: all)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    rows = []
    for name in a.models:
        path = model_dir(a.dir, name)
        ids = [(7 * i + 3) % MODELS[name]["vocab_size"] for i in range(a.prompt)]
        for dtype in a.dtypes:
            load = os.getloadavg()[0]
            m = run_mtk(a.bin, path, ids, a.new, a.threads, dtype, a.runs)
            old = None
            if a.baseline and (a.baseline_models is None or name in a.baseline_models):
                old = run_mtk(a.baseline, path, ids, a.new, a.threads, dtype, a.runs)
            t = run_torch(path, ids, a.new, a.threads, dtype, a.runs)
            for side, doc in (("mtk", m), ("mtk (baseline)", old)):
                if doc is not None:
                    rows.append(dict(model=name, dtype=dtype, side=side, load_avg=load, mtk=doc, torch=t,
                                     same_ids=doc["sequences"] == t["sequences"]))
    for r in rows:
        r["mtk"] = {k: v for k, v in r["mtk"].items() if k != "sequences"}
        r["torch"] = {k: v for k, v in r["torch"].items() if k != "sequences"}
    if a.json:
        print(json.dumps(dict(threads=a.threads, prompt=a.prompt, new=a.new, runs=a.runs, rows=rows), indent=1))
        return
    print(f"llama, random weights, prompt 1x{a.prompt}, {a.new} new tokens, {a.threads} threads, best of {a.runs}")
    print(f"{'model':5} {'dtype':9} {'mtk side':15}{'prefill tok/s mtk/torch':>24} {'x':>6} {'decode tok/s mtk/torch':>23} {'x':>6} "
          f"{'load s mtk/torch':>17} {'x':>6} {'decode tok/cpu-s mtk/torch':>27} {'x':>6}  ids  loadavg")
    for r in rows:
        m, t = r["mtk"], r["torch"]
        print(f"{r['model']:5} {r['dtype']:9} {r['side']:15}{m['prefill']:11.1f} /{t['prefill']:10.1f} {m['prefill'] / t['prefill']:6.2f} "
              f"{m['decode']:10.2f} /{t['decode']:10.2f} {m['decode'] / t['decode']:6.2f} "
              f"{m['load_s']:8.2f} /{t['load_s']:7.2f} {t['load_s'] / m['load_s']:6.2f} "
              f"{m['decode_cpu']:13.2f} /{t['decode_cpu']:12.2f} {m['decode_cpu'] / t['decode_cpu']:6.2f}  "
              f"{'same' if r['same_ids'] else 'diff'} {r['load_avg']:6.1f}")


if __name__ == "__main__":
    main()
