#!/usr/bin/env python3
"""Streaming under a RAM budget (issue 16): `mtk run --max-ram` and `mtk generate
--max-ram` against the same commands in RAM, the checkpoint in the page cache (one
untimed read first).  Models (random weights, llama-shaped, cached in --dir):
  small  ~400 MB float32, 6 layers of 64 MiB (tests/exec/stream_model.py)
  100m   ~134M parameters: hidden 768, 12 layers, vocab 32000
  1b     ~1.1B parameters: hidden 2048, 22 layers, 4 kv heads (TinyLlama's shape)
each in --dtype float32 or bfloat16 (streaming runs in the checkpoint's dtype).

For each budget (in RAM; two layers, the least that prefetches; half the model;
three quarters): the peak RSS of the process (its ru_maxrss), the prefill's seconds
(`mtk run --json` "seconds", --seq tokens) and the decode tokens/s of `mtk generate`
(--new-tokens), and the ratios to the in-RAM run (target >= 0.8x), in wall time and
in cpu time (user + sys of the phase, which a loaded machine disturbs less).  The stream's own
figures say where the streamed time went: layers brought in, the cpu seconds of
bringing their pages in and of MADV_DONTNEED, the forward's wall seconds waiting.  The cases
run interleaved, --runs rounds; each keeps its fastest round (the machine is shared).

    python3 bench/bench_stream.py [--model small|100m|1b] [--dtype float32|bfloat16]
        [--bin build/mtk] [--threads 1] [--seq 128] [--new-tokens 20] [--runs 3]
        [--dir build] [--fills auto,map,read] [--folios as-is|large|small] [--json]
"""
import argparse
import hashlib
import json
import os
import sys
from pathlib import Path

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests", "exec"))
import stream_model  # noqa: E402

MIB = 2**20
SHAPES = {  # hidden, intermediate, layers, heads, kv heads, vocab
    "100m": (768, 2048, 12, 12, 12, 32000),
    "1b": (2048, 5632, 22, 32, 4, 32000),
}


def sized_llama(root, name, dtype):
    """A random llama of SHAPES[name] in `dtype`, written once under root."""
    import torch
    from safetensors.torch import save_file

    hidden, inter, layers, heads, kv, vocab = SHAPES[name]
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": hidden,
              "intermediate_size": inter, "num_hidden_layers": layers, "num_attention_heads": heads,
              "num_key_value_heads": kv, "vocab_size": vocab, "max_position_embeddings": 512,
              "rms_norm_eps": 1e-6, "tie_word_embeddings": False, "torch_dtype": dtype, "dtype": dtype}
    key = hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()[:16]
    out = Path(root) / "stream_bench" / f"{name}-{dtype}-{key}"
    if (out / "model.safetensors").exists():
        return out
    out.mkdir(parents=True, exist_ok=True)
    head = hidden // heads
    shapes = {"model.embed_tokens.weight": (vocab, hidden), "model.norm.weight": (hidden,),
              "lm_head.weight": (vocab, hidden)}
    for i in range(layers):
        p = f"model.layers.{i}."
        shapes.update({p + "input_layernorm.weight": (hidden,), p + "post_attention_layernorm.weight": (hidden,),
                       p + "self_attn.q_proj.weight": (heads * head, hidden),
                       p + "self_attn.k_proj.weight": (kv * head, hidden),
                       p + "self_attn.v_proj.weight": (kv * head, hidden),
                       p + "self_attn.o_proj.weight": (hidden, heads * head),
                       p + "mlp.gate_proj.weight": (inter, hidden), p + "mlp.up_proj.weight": (inter, hidden),
                       p + "mlp.down_proj.weight": (hidden, inter)})
    g = torch.Generator().manual_seed(0)
    data = {}
    for n, shape in shapes.items():
        t = 1.0 + 0.1 * torch.randn(shape, generator=g) if len(shape) == 1 else \
            torch.randn(shape, generator=g) * (1.0 / shape[1] ** 0.5)
        data[n] = t.to(getattr(torch, dtype))
    (out / "config.json").write_text(json.dumps(config))
    save_file(data, str(out / "tmp.safetensors"), metadata={"format": "pt"})
    (out / "tmp.safetensors").rename(out / "model.safetensors")
    return out


_CHILD = ("import json, resource, subprocess, sys\n"
          "r = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
          "u = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
          "print(json.dumps([r.returncode, r.stdout, r.stderr, u.ru_maxrss * 1024, u.ru_utime + u.ru_stime]))\n")


def once(args, fill=None):
    """(JSON doc, peak RSS bytes, user + sys cpu seconds) of one run, from
    the child's rusage as a fresh interpreter reads it (a child forked from
    this process would count this process's pages in its peak); exits on a
    failure."""
    import subprocess
    env = dict(os.environ)
    env.pop("MTK_STREAM_FILL", None)
    if fill and fill != "auto":
        env["MTK_STREAM_FILL"] = fill
    r = subprocess.run([sys.executable, "-c", _CHILD, *map(str, args)], capture_output=True, text=True,
                       timeout=3600, env=env)
    code, out, err, peak, cpu = json.loads(r.stdout)
    if code != 0:
        sys.exit(f"bench_stream: {' '.join(map(str, args[:3]))}: {out[-400:]}{err}")
    return json.loads(out), peak, cpu


def cache(path, folios):
    """Puts the file in the page cache: as it is (reading whatever is not
    there), or dropped first and read back in large folios (sequential reads,
    readahead) or in 4 KiB ones (4 KiB reads, no readahead: how a page
    cache under memory pressure may hold it, which makes mapping pages in
    and dropping them cost 4-6x more)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        if folios != "as-is":
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        if folios == "small":
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
        step = 4096 if folios == "small" else 64 * MIB
        at, size = 0, os.fstat(fd).st_size
        while at < size:
            at += len(os.pread(fd, step, at))
    finally:
        os.close(fd)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", choices=["small", *SHAPES], default="small")
    ap.add_argument("--dtype", choices=["float32", "bfloat16"], default="float32")
    ap.add_argument("--bin", default=os.path.join(REPO, "build", "mtk"))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--new-tokens", type=int, default=20)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dir", default=os.path.join(REPO, "build"))
    ap.add_argument("--fills", default="auto",
                    help="how streamed layers come in, comma-separated, each a row per budget: auto (what the "
                         "stream measures), map, read (MTK_STREAM_FILL)")
    ap.add_argument("--folios", choices=["as-is", "large", "small"], default="as-is",
                    help="the checkpoint's page-cache folios: as they are, or dropped and read back large / 4 KiB")
    ap.add_argument("--json", action="store_true")
    o = ap.parse_args()
    if o.model == "small":
        if o.dtype != "float32":
            sys.exit("bench_stream: the small model is float32 only")
        model = stream_model.big_llama(o.dir)
    else:
        model = sized_llama(o.dir, o.model, o.dtype)
    size = os.path.getsize(model / "model.safetensors")
    cache(model / "model.safetensors", o.folios)
    ids = ",".join(str(1 + i % 999) for i in range(o.seq))
    run = [o.bin, "run", model, "--weights", model, "--input-ids", ids, "--threads", o.threads, "--top", "0",
           "--json"]
    gen = [o.bin, "generate", model, "--weights", model, "--input-ids", ",".join(map(str, range(1, 17))),
           "--max-new-tokens", o.new_tokens, "--eos-token-id", "none", "--threads", o.threads, "--json"]
    sizes = once([*run[:5], "--input-ids", "1", "--top", "0", "--json", "--max-ram", 4 * size])[0]["stream"]
    fixed, layer, count = sizes["fixed_bytes"], sizes["layer_bytes"], sizes["layer_count"]
    fills = o.fills.split(",")
    budgets = [("in RAM", None, None)]
    for label, budget in (("2 layers", fixed + 2 * layer), ("half", size // 2), ("3/4", size * 3 // 4)):
        budgets += [(label if len(fills) == 1 else f"{label} {fill}", budget, fill) for fill in fills]
    # the cpu seconds of a phase: the command's less the same command with
    # the least work (one token; one new token), which loads alike
    run0 = [*run[:5], "--input-ids", "1", *run[7:]]
    gen0 = [*gen[:8], 1, *gen[9:]]
    found = {label: {k: [] for k in ("run", "run0", "gen", "gen0")} for label, _, _ in budgets}
    for _ in range(o.runs):  # interleaved rounds: the machine's load hits every case alike
        for label, budget, fill in budgets:
            extra = [] if budget is None else ["--max-ram", budget]
            for k, cmd in (("run", run), ("run0", run0), ("gen", gen), ("gen0", gen0)):
                found[label][k].append(once(cmd + extra, fill))
    rows = []
    for label, budget, _ in budgets:
        f = found[label]
        r, r_peak, _ = min(f["run"], key=lambda x: x[0]["seconds"])
        g, g_peak, _ = max(f["gen"], key=lambda x: x[0]["decode_tokens_per_s"])
        s = g["stream"]
        rows.append(dict(case=label, budget=budget, prefill_seconds=r["seconds"], prefill_peak_rss=r_peak,
                         prefill_cpu=min(x[2] for x in f["run"]) - min(x[2] for x in f["run0"]),
                         decode_tokens_per_s=g["decode_tokens_per_s"], decode_peak_rss=g_peak,
                         decode_cpu=min(x[2] for x in f["gen"]) - min(x[2] for x in f["gen0"]),
                         kept_layers=s["kept_layers"] if s else None, fill=s.get("fill") if s else None,
                         brought_in=s["brought_in"] if s else None,
                         bring_in_cpu_seconds=s["bring_in_seconds"] if s else None,
                         release_cpu_seconds=s["release_seconds"] if s else None,
                         wait_seconds=s["wait_seconds"] if s else None))
    ref = rows[0]
    for row in rows:
        row["prefill_speed"] = ref["prefill_seconds"] / row["prefill_seconds"]
        row["prefill_cpu_speed"] = ref["prefill_cpu"] / row["prefill_cpu"]
        row["decode_speed"] = row["decode_tokens_per_s"] / ref["decode_tokens_per_s"]
        row["decode_cpu_speed"] = ref["decode_cpu"] / row["decode_cpu"]
    result = dict(folios=o.folios, model=o.model, dtype=o.dtype, model_bytes=size, fixed_bytes=fixed, layer_bytes=layer,
                  layer_count=count, seq=o.seq, new_tokens=o.new_tokens, threads=o.threads, runs=o.runs, rows=rows)
    if o.json:
        print(json.dumps(result, indent=1))
        return
    print(f"{o.model} {o.dtype}: {size / MIB:.1f} MiB ({count} layers of {layer / MIB:.1f} MiB, "
          f"{fixed / MIB:.1f} MiB outside); prefill {o.seq} tokens, decode {o.new_tokens}, {o.threads} threads, "
          f"best of {o.runs}; {o.folios} folios; load average {os.getloadavg()[0]:.1f}")
    print(f"{'case':<16}{'fill':>5}{'budget':>7}{'kept':>5}{'prefill s':>10}{'x RAM':>7}{'cpu s':>7}{'x RAM':>7}{'peak':>6}"
          f"{'dec t/s':>8}{'x RAM':>7}{'cpu s':>7}{'x RAM':>7}{'peak':>6}{'in':>5}{'pop s':>7}{'drop s':>7}"
          f"{'wait s':>7}")
    for r in rows:
        b = "-" if r["budget"] is None else f"{r['budget'] / MIB:.0f}"
        st = "" if r["brought_in"] is None else (f"{r['brought_in']:>5}{r['bring_in_cpu_seconds']:>7.3f}"
                                                  f"{r['release_cpu_seconds']:>7.3f}{r['wait_seconds']:>7.3f}")
        kept = "-" if r["kept_layers"] is None else str(r["kept_layers"])
        print(f"{r['case']:<16}{r['fill'] or '-':>5}{b:>7}{kept:>5}{r['prefill_seconds']:>10.3f}{r['prefill_speed']:>6.2f}x"
              f"{r['prefill_cpu']:>7.2f}{r['prefill_cpu_speed']:>6.2f}x{r['prefill_peak_rss'] / MIB:>6.0f}"
              f"{r['decode_tokens_per_s']:>8.2f}{r['decode_speed']:>6.2f}x{r['decode_cpu']:>7.2f}"
              f"{r['decode_cpu_speed']:>6.2f}x{r['decode_peak_rss'] / MIB:>6.0f}{st}")
    print("(fill: how streamed layers came in, map or read; budget, peak RSS: MiB; x RAM: in-RAM time / streamed, wall (best round) and cpu (user + sys of the "
          "phase: the command's less its one-token twin's); in: layers brought in during generate; pop/drop: "
          "cpu s of bringing pages in / MADV_DONTNEED; wait: the forward's wall s at layer starts)")

if __name__ == "__main__":
    main()
