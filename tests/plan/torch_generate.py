"""torch's side of the generation oracle: what transformers 5 allocates on
the cpu for a prefill (`model(input_ids)` under no_grad, the DynamicCache
built) and for `model.generate(input_ids, max_new_tokens=N,
do_sample=False)`, measured with torch 2.13's profiler memory events
(GROUND_TRUTH.md): every allocation and free in time order, the peak of
the running sum plus what was live before (parameters, buffers, the input
ids).  Models are small random configs built on the cpu with random
weights; the numbers do not depend on the weights except through MoE
routing.

measure(case) -> dict, cached in generate_torch_cache.json keyed by this
file's source and the case, so the test runs torch only for new cases."""
import hashlib
import json
import os
import sys
import tempfile
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "models"))
CACHE = HERE / "generate_torch_cache.json"


def _source_key():
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]


def case_key(case):
    return _source_key() + ":" + json.dumps(case, sort_keys=True)


def _storages(tensors):
    """Bytes of the distinct storages behind `tensors` (views counted once)."""
    seen = {}
    for t in tensors:
        st = t.untyped_storage()
        seen[st.data_ptr()] = st.nbytes()
    return sum(seen.values())


def _peak(fn, split=None):
    """fn's result, the peak of the running sum of its allocations, the sum
    at the end, and with `split` (an op name) the peak after the first
    call of that op ends (generate's first argmax: the decode steps)."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        out = fn()
    events = list(prof.profiler.kineto_results.events())
    mem = sorted((e.start_ns(), e.nbytes()) for e in events if e.name() == "[memory]")
    at = min((e.start_ns() + e.duration_ns() for e in events if e.name() == split), default=None)
    cur = peak = 0
    later = None
    for t, b in mem:
        cur += b
        peak = max(peak, cur)
        if at is not None and t > at:
            later = cur if later is None else max(later, cur)
    return (out, peak, cur, later) if split else (out, peak, cur)


def _cache_tensors(cache):
    ts = []
    for layer in cache.layers:
        for t in (layer.keys, layer.values):
            if t is not None and t.numel() > 0:
                ts.append(t)
    return ts


def _model(case):
    import torch
    import transformers
    import hf_oracle
    warnings.filterwarnings("ignore")
    transformers.logging.set_verbosity_error()
    config = hf_oracle.hf_config(case["config"], tempfile.mkdtemp())
    config._attn_implementation = case["attention"]
    arch = (config.architectures or [hf_oracle.BASE_CLASS[config.model_type]])[0]
    if not arch.endswith("ForCausalLM"):
        arch = arch.replace("Model", "ForCausalLM")
    cls = getattr(transformers, arch)
    torch.manual_seed(0)
    dtype = getattr(torch, case["dtype"])
    model = cls._from_config(config, dtype=dtype).eval()
    model.generation_config.pad_token_id = model.generation_config.eos_token_id = None
    return model


def _run(case):
    import torch
    # one thread, as the planner models the cpu flash sdpa's per-thread
    # buffers (and as torch_memory.py measures)
    torch.set_num_threads(1)
    torch.manual_seed(1)
    model = _model(case)
    b, s = case["batch"], case["seq"]
    ids = torch.randint(0, case["config"]["vocab_size"], (b, s))
    state = list(model.parameters()) + list(model.buffers())
    before = _storages(state) + ids.nbytes
    with torch.no_grad():
        out, peak, end = _peak(lambda: model(ids))
    cache = out.past_key_values
    kv = _cache_tensors(cache)
    result = {
        "state_bytes": _storages(state),
        "prefill": {
            "live_before": before, "peak": before + peak, "end": before + end,
            "kv_cache_storage": _storages(kv), "kv_cache_nbytes": sum(t.nbytes for t in kv),
            "layer_types": [type(layer).__name__ for layer in cache.layers],
            "logits_bytes": out.logits.nbytes,
        },
    }
    del out, cache, kv
    if case.get("new_tokens"):
        out, peak, end, decode = _peak(lambda: model.generate(ids, max_new_tokens=case["new_tokens"],
                                                              do_sample=False), split="aten::argmax")
        result["generate"] = {"live_before": before, "peak": before + peak, "end": before + end,
                              "output_bytes": out.nbytes,
                              "decode_peak": before + decode if decode is not None else None}
        # generate returns only the ids: the final cache is read from the
        # same prefill and decode steps run by hand
        result["generate"].update(_final_cache(model, ids, case["new_tokens"]))
    return result


def _final_cache(model, ids, n):
    import torch
    with torch.no_grad():
        out = model(ids, logits_to_keep=1)
        cache = out.past_key_values
        nxt = out.logits[:, -1].argmax(-1, keepdim=True)
        for _ in range(n - 1):
            out = model(nxt, past_key_values=cache, logits_to_keep=1)
            cache = out.past_key_values
            nxt = out.logits[:, -1].argmax(-1, keepdim=True)
    kv = _cache_tensors(cache)
    return {"kv_cache_storage": _storages(kv), "kv_cache_nbytes": sum(t.nbytes for t in kv),
            "kv_cache_shapes": [list(t.shape) for t in kv]}


def load_cache():
    if CACHE.exists():
        return json.loads(CACHE.read_text())
    return {}


def measure_all(cases, cache=None, save=True):
    """Measures every case not yet in the cache (in one process)."""
    cache = load_cache() if cache is None else cache
    todo = [c for c in cases if case_key(c) not in cache]
    live = {case_key(c) for c in cases}
    for c in todo:
        cache[case_key(c)] = _run(c)
        if save:  # after each case: a long run keeps what it measured
            kept = {k: v for k, v in cache.items() if k in live}
            CACHE.write_text(json.dumps(kept, indent=0, sort_keys=True) + "\n")
    return [cache[case_key(c)] for c in cases]


if __name__ == "__main__":
    case = json.loads(sys.argv[1])
    print(json.dumps(_run(case), indent=1))
