"""torch's side of the encoder-decoder generation oracle: what
transformers 5 allocates on the cpu for `model.generate(input_ids,
max_new_tokens=N, do_sample=False)` of a T5ForConditionalGeneration,
measured with torch 2.13's profiler memory events (GROUND_TRUTH.md: the
peak of the running sum plus what was live before: parameters, buffers,
the input ids), and the EncoderDecoderCache generate ends with (its
self-attention and cross-attention tensors' bytes).  Small random
configs on the cpu; the numbers do not depend on the weights (no eos or
pad token: every generation makes N tokens).

measure_all(cases) -> [dict], cached in generate_t5_torch_cache.json keyed
by this file's source and the case."""
import hashlib
import json
import sys
import tempfile
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "models"))
sys.path.insert(0, str(HERE))
CACHE = HERE / "generate_t5_torch_cache.json"


def _source_key():
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]


def case_key(case):
    return _source_key() + ":" + json.dumps(case, sort_keys=True)


def _run(case):
    import torch
    import transformers
    import hf_oracle
    from torch_generate import _peak, _storages
    warnings.filterwarnings("ignore")
    transformers.logging.set_verbosity_error()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    config = hf_oracle.hf_config(case["config"], tempfile.mkdtemp())
    config._attn_implementation = case["attention"]
    model = transformers.T5ForConditionalGeneration._from_config(config, dtype=getattr(torch, case["dtype"])).eval()
    model.generation_config.pad_token_id = model.generation_config.eos_token_id = None
    b, s, n = case["batch"], case["seq"], case["new_tokens"]
    torch.manual_seed(1)
    ids = torch.randint(0, case["config"]["vocab_size"], (b, s))
    state = list(model.parameters()) + list(model.buffers())
    before = _storages(state) + ids.nbytes
    with torch.no_grad():
        _, peak, end, decode = _peak(lambda: model.generate(ids, max_new_tokens=n, do_sample=False),
                                     split="aten::argmax")
        out = model.generate(ids, max_new_tokens=n, do_sample=False, return_dict_in_generate=True)
    cache = out.past_key_values

    def layers(c):
        return [t for layer in c.layers for t in (layer.keys, layer.values) if t is not None and t.numel() > 0]
    self_kv, cross_kv = layers(cache.self_attention_cache), layers(cache.cross_attention_cache)
    return {"state_bytes": _storages(state), "live_before": before, "peak": before + peak, "end": before + end,
            "decode_peak": before + decode if decode is not None else None,
            "self_cache_bytes": _storages(self_kv), "cross_cache_bytes": _storages(cross_kv),
            "self_cache_shapes": [list(t.shape) for t in self_kv]}


def load_cache():
    return json.loads(CACHE.read_text()) if CACHE.exists() else {}


def measure_all(cases):
    """Measures every case not yet in the cache (in one process)."""
    cache = load_cache()
    live = {case_key(c) for c in cases}
    for c in cases:
        if case_key(c) not in cache:
            cache[case_key(c)] = _run(c)
            kept = {k: v for k, v in cache.items() if k in live}
            CACHE.write_text(json.dumps(kept, indent=0, sort_keys=True) + "\n")
    return [cache[case_key(c)] for c in cases]


if __name__ == "__main__":
    print(json.dumps(_run(json.loads(sys.argv[1])), indent=1))
