"""A random float32 llama large enough for resident memory to tell (about
400 MB: 6 layers of 64 MiB), written with safetensors directly, cached in
the build directory under the hash of this file; and the peak resident
memory of a child process.  Shared by tests/exec/test_stream.py and
bench/bench_stream.py."""
import hashlib
import json
import resource
import os
import subprocess
import sys
from pathlib import Path

HIDDEN, INTERMEDIATE, LAYERS, VOCAB, HEADS = 1024, 4096, 6, 1000, 8
CONFIG = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": HIDDEN,
    "intermediate_size": INTERMEDIATE, "num_hidden_layers": LAYERS, "num_attention_heads": HEADS,
    "num_key_value_heads": HEADS, "vocab_size": VOCAB, "max_position_embeddings": 256, "rms_norm_eps": 1e-6,
    "tie_word_embeddings": False, "torch_dtype": "float32", "dtype": "float32",
}


def tensors():
    """name -> shape of every tensor, as LlamaForCausalLM names them."""
    out = {"model.embed_tokens.weight": (VOCAB, HIDDEN), "model.norm.weight": (HIDDEN,),
           "lm_head.weight": (VOCAB, HIDDEN)}
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        out[p + "input_layernorm.weight"] = (HIDDEN,)
        out[p + "post_attention_layernorm.weight"] = (HIDDEN,)
        for n in ("q", "k", "v", "o"):
            out[p + f"self_attn.{n}_proj.weight"] = (HIDDEN, HIDDEN)
        out[p + "mlp.gate_proj.weight"] = (INTERMEDIATE, HIDDEN)
        out[p + "mlp.up_proj.weight"] = (INTERMEDIATE, HIDDEN)
        out[p + "mlp.down_proj.weight"] = (HIDDEN, INTERMEDIATE)
    return out


def model_bytes():
    total = 0
    for shape in tensors().values():
        n = 4
        for d in shape:
            n *= d
        total += n
    return total


def big_llama(build_dir):
    """The model's directory (config.json, model.safetensors), made once."""
    import torch
    from safetensors.torch import save_file

    key = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]
    root = Path(build_dir) / "stream_fixtures" / key
    if (root / "model.safetensors").exists():
        return root
    root.mkdir(parents=True, exist_ok=True)
    g = torch.Generator().manual_seed(0)
    data = {}
    for name, shape in tensors().items():
        if len(shape) == 1:
            data[name] = 1.0 + 0.1 * torch.randn(shape, generator=g)
        else:
            data[name] = torch.randn(shape, generator=g) * (1.0 / shape[1] ** 0.5)
    (root / "config.json").write_text(json.dumps(CONFIG))
    save_file(data, str(root / "tmp.safetensors"), metadata={"format": "pt"})
    (root / "tmp.safetensors").rename(root / "model.safetensors")
    return root


_PEAK = ("import resource, subprocess, sys\n"
         "r = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
         "sys.stdout.write(r.stdout); sys.stderr.write(r.stderr)\n"
         "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024, file=sys.stderr)\n"
         "sys.exit(r.returncode)\n")


def run_peak(args, timeout=600):
    """Runs args in a child; (CompletedProcess, its peak RSS in bytes).  The
    peak is the child's own ru_maxrss, read by a fresh interpreter that
    runs nothing else.  Under AddressSanitizer (the test-asan stage sets
    ASAN_OPTIONS) the child runs without ASan's quarantine, which otherwise
    keeps up to 256 MiB of freed blocks resident by design: the peak then
    measures what mtk holds, not what the sanitizer holds back."""
    env = dict(os.environ)
    if "ASAN_OPTIONS" in env:
        env["ASAN_OPTIONS"] = env["ASAN_OPTIONS"] + ":quarantine_size_mb=0"
    r = subprocess.run([sys.executable, "-c", _PEAK, *map(str, args)], capture_output=True, text=True,
                       timeout=timeout, env=env)
    lines = r.stderr.rstrip("\n").split("\n")
    peak = int(lines[-1])
    r.stderr = "\n".join(lines[:-1])
    return r, peak


__all__ = ["big_llama", "model_bytes", "run_peak", "resource"]
