#!/usr/bin/env python3
"""The cpu forward of mixture-of-experts models with real routing, mtk
against transformers, one run, same thread count.

For each family a small random-weight model (float32, a few layers, 8..16
experts, top-k 2 or 1) is built by transformers, saved with random token
ids, and run by both: transformers' forward under torch.no_grad (its default
experts implementation, named in the table) and build/bench_moe (mtk, in
C, after the load).  Each side's best of --runs after one warm-up run;
prints ms, the ratio transformers / mtk and how far apart the two sides'
sums of |logits| are (relative).

    python3 bench/bench_moe.py [--bin build/bench_moe] [--threads 2]
        [--runs 5] [--tokens 256] [--json] [FAMILY ...]

Families: mixtral, qwen2_moe, qwen3_moe, deepseek_v3, glm4_moe, gpt_oss,
llama4_text (default: all).  Target (reported, never asserted): parity
(ratio >= 1.0).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

COMMON = {"vocab_size": 4000, "hidden_size": 512, "num_attention_heads": 8, "num_key_value_heads": 4,
          "head_dim": 64, "num_hidden_layers": 4, "max_position_embeddings": 2048, "torch_dtype": "float32"}
CONFIGS = {
    "mixtral": dict(COMMON, model_type="mixtral", architectures=["MixtralForCausalLM"], intermediate_size=1024,
                    num_local_experts=8, num_experts_per_tok=2),
    "qwen2_moe": dict(COMMON, model_type="qwen2_moe", architectures=["Qwen2MoeForCausalLM"],
                      intermediate_size=1024, moe_intermediate_size=512, shared_expert_intermediate_size=1024,
                      num_experts=16, num_experts_per_tok=2, norm_topk_prob=False),
    "qwen3_moe": dict(COMMON, model_type="qwen3_moe", architectures=["Qwen3MoeForCausalLM"],
                      intermediate_size=1024, moe_intermediate_size=512, num_experts=16, num_experts_per_tok=2,
                      norm_topk_prob=True),
    "deepseek_v3": dict(COMMON, model_type="deepseek_v3", architectures=["DeepseekV3ForCausalLM"],
                        num_key_value_heads=8, head_dim=16, intermediate_size=1024, moe_intermediate_size=512,
                        n_routed_experts=16, n_group=4, topk_group=2, num_experts_per_tok=2, n_shared_experts=1,
                        first_k_dense_replace=1, q_lora_rank=128, kv_lora_rank=64, qk_nope_head_dim=32,
                        qk_rope_head_dim=16, v_head_dim=32, routed_scaling_factor=2.5),
    "glm4_moe": dict(COMMON, model_type="glm4_moe", architectures=["Glm4MoeForCausalLM"], intermediate_size=1024,
                     moe_intermediate_size=512, n_routed_experts=16, n_group=2, topk_group=1,
                     num_experts_per_tok=2, n_shared_experts=1, first_k_dense_replace=1),
    "gpt_oss": dict(COMMON, model_type="gpt_oss", architectures=["GptOssForCausalLM"], intermediate_size=512,
                    num_local_experts=16, num_experts_per_tok=2, sliding_window=128),
    "llama4_text": dict(COMMON, model_type="llama4_text", architectures=["Llama4ForCausalLM"],
                        intermediate_size=512, intermediate_size_mlp=1024, num_local_experts=16,
                        num_experts_per_tok=1, attention_chunk_size=8192),
}


def build(family, tokens, directory):
    import torch
    import transformers
    from safetensors.torch import save_file

    cfg = CONFIGS[family]
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump(cfg, f)
    config = transformers.AutoConfig.from_pretrained(directory)
    torch.manual_seed(0)
    model = getattr(transformers, cfg["architectures"][0])._from_config(config, attn_implementation="eager").eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(torch.rand(p.shape) + 0.5 if p.ndim == 1 and "norm" in name else torch.randn(p.shape) * 0.05)
    ids = torch.randint(1, cfg["vocab_size"], (1, tokens), generator=torch.Generator().manual_seed(3))
    tensors = {k: v.detach().clone().contiguous() for k, v in model.state_dict().items()}
    tensors["input_ids"] = ids
    save_file(tensors, os.path.join(directory, "weights.safetensors"))
    return model, ids, getattr(config, "_experts_implementation", None)


def run_torch(model, ids, threads, runs):
    import torch

    torch.set_num_threads(threads)
    times = []
    with torch.no_grad():
        model(input_ids=ids, use_cache=False)  # warm-up
        for _ in range(runs):
            t0 = time.perf_counter()
            out = model(input_ids=ids, use_cache=False)
            times.append((time.perf_counter() - t0) * 1e3)
    return min(times), out.logits


def run_mtk(binary, directory, threads, runs):
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads))
    out = subprocess.run([binary, os.path.join(directory, "config.json"),
                          os.path.join(directory, "weights.safetensors"), str(threads), str(runs + 1)],
                         capture_output=True, text=True, env=env)
    answer = json.loads(out.stdout) if out.stdout.strip() else {"error": out.stderr.strip()}
    if "error" in answer:
        raise RuntimeError("bench_moe: %s" % answer["error"])
    answer["best_ms"] = min(answer["ms"][1:])  # the first run is the warm-up
    return answer


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", default=os.environ.get("MTK_BENCH", os.path.join(REPO, "build", "bench_moe")))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--tokens", type=int, default=256)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("families", nargs="*", default=list(CONFIGS))
    args = ap.parse_args()
    import torch

    rows = []
    for family in args.families:
        with tempfile.TemporaryDirectory() as directory:
            model, ids, impl = build(family, args.tokens, directory)
            torch_ms, want = run_torch(model, ids, args.threads, args.runs)
            mtk = run_mtk(args.bin, directory, args.threads, args.runs)
            got_sum = mtk["checksum"]
            rows.append({"family": family, "experts_implementation": impl, "tokens": args.tokens,
                         "mtk_ms": mtk["best_ms"], "torch_ms": torch_ms, "ratio": torch_ms / mtk["best_ms"],
                         "checksum_mtk": got_sum, "checksum_torch": float(want.double().abs().sum()),
                         "mtk_load_ms": mtk["load_ms"]})
    if args.json:
        json.dump({"threads": args.threads, "runs": args.runs, "torch": torch.__version__, "rows": rows},
                  sys.stdout, indent=1)
        print()
        return
    print("MoE cpu forward, float32, 1x%d tokens, %d threads, best of %d" % (args.tokens, args.threads, args.runs))
    print("%-12s %-14s %10s %10s %7s %s" % ("family", "tf experts", "mtk ms", "tf ms", "ratio", "checksum rel diff"))
    for r in rows:
        rel = abs(r["checksum_mtk"] - r["checksum_torch"]) / max(r["checksum_torch"], 1e-30)
        print("%-12s %-14s %10.2f %10.2f %7.2f %.1e" % (r["family"], r["experts_implementation"], r["mtk_ms"],
                                                        r["torch_ms"], r["ratio"], rel))


if __name__ == "__main__":
    main()
