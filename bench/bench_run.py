#!/usr/bin/env python3
"""Prefill speed of `mtk run` against transformers 5 on the cpu, one run,
same threads (issue 16): a ~100M llama-shaped model with random weights
(transformers' init, saved by save_pretrained into --dir), float32 and
bfloat16, on a (batch, sequence) of random ids.

mtk's time is the forward alone as `mtk run --json` reports it ("seconds":
after the load, before the outputs are written); transformers' is
model(input_ids) under no_grad after torch.set_num_threads, in this
process.  Each side runs --runs times (after one warm-up), best time kept;
the table prints tokens/s of each and the ratio mtk/torch (>= 1: mtk
faster).  Also checks the two logits agree (max abs diff).

    python3 bench/bench_run.py [--bin build/mtk] [--threads 2] [--batch 1]
        [--seq 256] [--runs 3] [--dir /tmp/mtk_bench_run] [--json]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# ~110M parameters: 12 layers of 768, vocab 32000, tied embeddings
CONFIG = dict(hidden_size=768, intermediate_size=2048, num_hidden_layers=12, num_attention_heads=12,
              num_key_value_heads=12, vocab_size=32000, max_position_embeddings=2048, tie_word_embeddings=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.path.join(REPO, "build", "mtk"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dir", default=os.path.join(tempfile.gettempdir(), "mtk_bench_run"))
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    import torch
    import transformers
    from safetensors.torch import load_file, save_file
    torch.set_num_threads(a.threads)
    model_dir = os.path.join(a.dir, "llama-110m")
    if not os.path.exists(os.path.join(model_dir, "config.json")):
        torch.manual_seed(0)
        transformers.LlamaForCausalLM(transformers.LlamaConfig(**CONFIG)).save_pretrained(model_dir)
    model = transformers.LlamaForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    params = sum(p.numel() for p in model.parameters())
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, CONFIG["vocab_size"], (a.batch, a.seq), generator=g)
    ids_file = os.path.join(a.dir, "ids.safetensors")
    save_file({"input_ids": ids}, ids_file)
    tokens = a.batch * a.seq
    rows = []
    for dtype_name, dtype in (("float32", torch.float32), ("bfloat16", torch.bfloat16)):
        m = model.to(dtype)
        with torch.no_grad():
            want = m(ids).logits
            best_torch = float("inf")
            for _ in range(a.runs):
                t0 = time.perf_counter()
                m(ids)
                best_torch = min(best_torch, time.perf_counter() - t0)
        out = os.path.join(a.dir, f"out_{dtype_name}.safetensors")
        best_mtk = float("inf")
        for i in range(a.runs + 1):
            r = subprocess.run([a.bin, "run", model_dir, "--weights", model_dir, "--input-ids", ids_file,
                                "--dtype", dtype_name, "--threads", str(a.threads), "--output", out, "--json"],
                               capture_output=True, text=True)
            if r.returncode != 0:
                sys.exit(f"mtk run failed: {r.stdout}{r.stderr}")
            if i > 0:  # the first run warms the page cache
                best_mtk = min(best_mtk, json.loads(r.stdout)["seconds"])
        got = load_file(out)["logits"]
        diff = (got.float() - want.float()).abs().max().item()
        rows.append(dict(dtype=dtype_name, mtk_tokens_per_s=tokens / best_mtk, torch_tokens_per_s=tokens / best_torch,
                         ratio=best_torch / best_mtk, mtk_s=best_mtk, torch_s=best_torch, max_abs_diff=diff))
    if a.json:
        print(json.dumps(dict(parameters=params, threads=a.threads, batch=a.batch, seq=a.seq, rows=rows)))
        return
    print(f"llama-shaped model, {params / 1e6:.1f}M parameters, {a.batch} x {a.seq} tokens, {a.threads} threads")
    print(f"{'dtype':10} {'mtk tok/s':>10} {'torch tok/s':>12} {'mtk/torch':>10} {'max |diff|':>11}")
    for r in rows:
        print(f"{r['dtype']:10} {r['mtk_tokens_per_s']:10.1f} {r['torch_tokens_per_s']:12.1f} {r['ratio']:10.2f} "
              f"{r['max_abs_diff']:11.2e}")


if __name__ == "__main__":
    main()
