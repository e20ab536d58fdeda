"""mtk load --plan under mpirun vs a whole `mtk load`: bytes read and time
per rank.

A Llama of ~125M parameters (float32, 499 MB, in 100 MB shards with an index)
is written with random values, then loaded whole by `mtk load` and by 2
and 4 ranks under three plans (mpi_plans.py of tests/dist): Shard(0) of every
tensor, a Megatron-style tp plan (colwise / rowwise linears, replicated
norms) and a pipeline split.  Each rank's bytes read and read time come
from its own report (--json); the wall time is the whole mpirun.  The
page cache is warm (the whole load runs first), so times are copy
speed, not disk speed.

    python3 bench/bench_mpi_load.py [--bin build/mtk] [--runs 3] [--dir DIR]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "dist"))
from mpi_launch import mpi_env, mpirun_path  # noqa: E402
from mpi_plans import make_plan  # noqa: E402

CONFIG = dict(architectures=["LlamaForCausalLM"], model_type="llama", vocab_size=32000, hidden_size=768,
              intermediate_size=2048, num_hidden_layers=12, num_attention_heads=12, num_key_value_heads=4,
              max_position_embeddings=2048, rms_norm_eps=1e-5, tie_word_embeddings=False, torch_dtype="float32")


def write_checkpoint(root):
    """config.json, the safetensors in shards of 100 MB with an index,
    state_dict.json (names, shapes, dtypes) under root."""
    import torch
    import transformers

    (root / "config.json").write_text(json.dumps(CONFIG))
    config = transformers.LlamaConfig(**{k: v for k, v in CONFIG.items() if k not in ("architectures",
                                                                                    "model_type")})
    with torch.device("meta"):
        model = transformers.LlamaForCausalLM(config)
    gen = torch.Generator().manual_seed(0)
    model = model.to_empty(device="cpu")
    with torch.no_grad():
        for _, p in model.named_parameters():
            p.copy_(torch.randn(p.shape, generator=gen))
    model.save_pretrained(root, max_shard_size="100MB")
    sd = [{"name": k, "shape": list(v.shape), "dtype": "float32"} for k, v in model.state_dict().items()]
    (root / "state_dict.json").write_text(json.dumps(sd))


def timed(cmd, env=None):
    start = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    if out.returncode != 0:
        sys.exit(f"failed: {' '.join(map(str, cmd))}\n{out.stderr[-2000:]}")
    return json.loads(out.stdout), wall


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=str(REPO / "build" / "mtk"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dir", help="where to write the checkpoint (default: a temporary directory)")
    args = ap.parse_args()
    if not mpirun_path():
        sys.exit("mpirun not found: scripts/install-deps.sh installs openmpi-bin")
    tmp = None if args.dir else tempfile.TemporaryDirectory()
    root = Path(args.dir or tmp.name)
    root.mkdir(parents=True, exist_ok=True)
    if not (root / "state_dict.json").exists():
        write_checkpoint(root)
    state_dict = json.loads((root / "state_dict.json").read_text())

    full = []
    for _ in range(args.runs + 1):  # the first one warms the page cache
        doc, wall = timed([args.bin, "load", root, "--weights", root, "--json", "--threads", "1"])
        full.append((doc["seconds"], wall))
    full = full[1:]
    total = doc["bytes"]
    print(f"checkpoint: {total:,} bytes in {len(list(root.glob('*.safetensors')))} shards, "
          f"{doc['parameters']:,} parameters")
    full_read = statistics.median(f[0] for f in full)
    print(f"whole load (mtk load, 1 thread): read {total:,} bytes in {full_read:.3f} s "
          f"(wall {statistics.median(f[1] for f in full):.3f} s)")
    print(f"{'plan':<10} {'ranks':>5} {'rank':>4} {'bytes read':>14} {'of file':>8} {'read s':>8} "
          f"{'vs whole':>8} {'wall s':>7}")
    env = mpi_env()
    for kind in ("shard0", "tp", "pipeline"):
        for world in (2, 4):
            plan = root / f"plan-{kind}-{world}.json"
            plan.write_text(json.dumps(make_plan(state_dict, kind, world)))
            cmd = [mpirun_path(), "--oversubscribe", "--bind-to", "none", "-np", str(world), args.bin, "load", root,
                   "--weights", root, "--plan", plan, "--json"]
            runs = [timed(cmd, env) for _ in range(args.runs)]
            walls = statistics.median(r[1] for r in runs)
            for rank in range(world):
                nbytes = runs[0][0]["ranks"][rank]["bytes"]
                secs = statistics.median(r[0]["ranks"][rank]["seconds"] for r in runs)
                print(f"{kind:<10} {world:>5} {rank:>4} {nbytes:>14,} {100 * nbytes / total:>7.1f}% {secs:>8.3f} "
                      f"{secs / full_read:>7.2f}x {f'{walls:.3f}' if rank == 0 else '':>7}")
    if tmp:
        tmp.cleanup()


if __name__ == "__main__":
    main()
