#!/usr/bin/env python3
"""Greedy decoding speed: `mtk generate` against transformers'
generate(do_sample=False) on the cpu, one run, same threads (issue 16).

A ~110M-parameter Llama (hidden 768, 12 layers, 12 heads, intermediate
2048, vocab 16000, random weights) is initialised by transformers and saved
with save_pretrained once (cached under build/bench_generate/).  Both sides
decode the same prompt (1 x --prompt tokens) for --new tokens, best of
--runs:
  - mtk: build/mtk generate ... --threads T --json, its own prefill and
    decode timings (the load is not counted);
  - transformers: torch.set_num_threads(T); the prefill is generate() with
    max_new_tokens=1, decode tokens/s = (new - 1) / (t(new) - t(1)).
Both must produce the same ids in float32 (printed: "same ids").  With
--dtype bfloat16 both run in bfloat16 (mtk converts the checkpoint on load,
transformers runs model.to(bfloat16)); their ids may then differ, as bf16
rounding differs.

    python3 bench/bench_generate.py [--bin build/mtk] [--threads 2]
        [--prompt 32] [--new 64] [--runs 3] [--dtype float32 bfloat16]
"""

import argparse
import json
import os
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIG = dict(hidden_size=768, intermediate_size=2048, num_hidden_layers=12, num_attention_heads=12,
              num_key_value_heads=12, vocab_size=16000, max_position_embeddings=2048, tie_word_embeddings=False,
              bos_token_id=1, eos_token_id=None, pad_token_id=None)


def model_dir():
    path = os.path.join(REPO, "build", "bench_generate", "llama-110m")
    if not os.path.exists(os.path.join(path, "model.safetensors")):
        import torch
        import transformers
        torch.manual_seed(0)
        model = transformers.LlamaForCausalLM(transformers.LlamaConfig(**CONFIG)).eval()
        with torch.no_grad():  # larger than the init's 0.02, so the argmax is well separated
            for name, p in model.named_parameters():
                if p.ndim > 1:
                    p.mul_(5.0)
        model.save_pretrained(path)
    return path


def run_mtk(binary, path, ids, new, threads, dtype):
    args = [binary, "generate", path, "--weights", os.path.join(path, "model.safetensors"), "--input-ids",
            ",".join(map(str, ids)), "--max-new-tokens", str(new), "--threads", str(threads), "--json",
            "--eos-token-id", "none"]
    if dtype != "float32":
        args += ["--dtype", dtype]
    result = subprocess.run(args, capture_output=True, text=True, timeout=1800)
    if result.returncode != 0:
        sys.exit("mtk generate failed: " + result.stdout + result.stderr)
    return json.loads(result.stdout)


def run_torch(path, ids, new, threads, dtype, runs):
    import torch
    import transformers
    torch.set_num_threads(threads)
    model = transformers.LlamaForCausalLM.from_pretrained(path, dtype=getattr(torch, dtype)).eval()
    x = torch.tensor([ids])

    def timed(n):
        best, out = float("inf"), None
        for _ in range(runs):
            t0 = time.perf_counter()
            with torch.no_grad():
                out = model.generate(input_ids=x, attention_mask=torch.ones_like(x), do_sample=False,
                                     max_new_tokens=n, min_new_tokens=n)
            best = min(best, time.perf_counter() - t0)
        return best, out

    t1, _ = timed(1)
    tn, out = timed(new)
    return {"prefill_seconds": t1, "decode_seconds": tn - t1, "sequences": out.tolist()}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.path.join(REPO, "build", "mtk"))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--prompt", type=int, default=32)
    ap.add_argument("--new", type=int, default=64)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dtype", nargs="+", default=["float32", "bfloat16"])
    a = ap.parse_args()
    path = model_dir()
    ids = [(7 * i + 3) % CONFIG["vocab_size"] for i in range(a.prompt)]
    print(f"llama ~110M (hidden 768, 12 layers, vocab 16000), prompt 1x{a.prompt}, {a.new} new tokens, "
          f"{a.threads} threads, best of {a.runs}")
    print(f"{'dtype':9} {'side':13} {'prefill tok/s':>14} {'decode tok/s':>13}  decode mtk/torch")
    for dtype in a.dtype:
        best = None
        for _ in range(a.runs):
            doc = run_mtk(a.bin, path, ids, a.new, a.threads, dtype)
            if best is None or doc["decode_tokens_per_s"] > best["decode_tokens_per_s"]:
                best = doc
        t = run_torch(path, ids, a.new, a.threads, dtype, a.runs)
        torch_prefill = a.prompt / t["prefill_seconds"]
        torch_decode = (a.new - 1) / t["decode_seconds"]
        same = "same ids" if best["sequences"] == t["sequences"] else "ids differ"
        print(f"{dtype:9} {'mtk':13} {best['prefill_tokens_per_s']:14.1f} {best['decode_tokens_per_s']:13.1f}  "
              f"{best['decode_tokens_per_s'] / torch_decode:.2f}x ({same})")
        print(f"{dtype:9} {'transformers':13} {torch_prefill:14.1f} {torch_decode:13.1f}")


if __name__ == "__main__":
    main()
