"""The configurations the parallel-plan oracle checks, and the cache of
transformers' answers for them (keyed by the oracle's source and the
case, so a change to either measures again): small random configs of
several families, their heads, key-value heads and vocabulary divisible
by 8 and an intermediate size (90) that 4 and 8 split unevenly, at T in
{2, 4, 8}, with one forward's collectives at T = 8."""
import hashlib
import json
import os
import random
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "models"))
import random_configs  # noqa: E402

CACHE = os.path.join(HERE, "torch_shard_cache.json")
FAMILIES = {
    "llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM", "qwen3": "Qwen3ForCausalLM",
    "gemma": "GemmaForCausalLM", "olmo2": "Olmo2ForCausalLM", "phi3": "Phi3ForCausalLM",
    "phi": "PhiForCausalLM", "gpt_neox": "GPTNeoXForCausalLM", "mixtral": "MixtralForCausalLM",
}
TPS = [2, 4, 8]
FORWARD = [2, 5]


def config(family):
    cfg = random_configs.GENERATORS[family](random.Random("%s-shard" % family))
    cfg.update(architectures=[FAMILIES[family]], tie_word_embeddings=False, num_attention_heads=8,
               num_key_value_heads=8, head_dim=8, hidden_size=64, vocab_size=136, intermediate_size=90)
    cfg.pop("torch_dtype", None)
    cfg.pop("dtype", None)
    cfg.pop("rope_scaling", None)  # longrope's factors are sized by the head dim
    cfg.pop("rope_parameters", None)
    return cfg


def cases():
    return [(f, dict(config=config(f), tps=TPS, forward=FORWARD)) for f in FAMILIES]


def key(case):
    with open(os.path.join(HERE, "torch_shard.py"), "rb") as f:
        src = f.read()
    return hashlib.sha256(src + json.dumps(case, sort_keys=True).encode()).hexdigest()[:24]


def load_cache():
    try:
        with open(CACHE) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def measured(case, cache):
    """transformers' answer for case, measured now (a fresh process: the
    fake process group is per process) if the cache lacks it."""
    k = key(case)
    if k not in cache:
        r = subprocess.run([sys.executable, os.path.join(HERE, "torch_shard.py"), json.dumps(case)],
                           capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr[-4000:]
        cache[k] = json.loads(r.stdout)
        tmp = CACHE + ".tmp"
        with open(tmp, "w") as f:
            json.dump(cache, f, indent=0, sort_keys=True)
        os.replace(tmp, CACHE)
    return cache[k]


if __name__ == "__main__":
    # fill the cache: python3 tests/plan/shard_cases.py
    cache = load_cache()
    for name, c in cases():
        measured(c, cache)
        print(name, flush=True)
