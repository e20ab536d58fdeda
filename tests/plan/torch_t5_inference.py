"""torch's side of the encoder-decoder inference oracle: what transformers
5 allocates on the cpu for `model(input_ids=ids, decoder_input_ids=dec)`
of a T5ForConditionalGeneration under torch.no_grad(), measured with
torch 2.13's profiler memory events (GROUND_TRUTH.md: the peak of the
running sum plus what was live before: parameters, buffers, both ids).
The forward builds its EncoderDecoderCache (use_cache defaults to True).
Small random configs; the numbers do not depend on the weights.

measure_all(cases) -> [dict], cached in t5_inference_torch_cache.json
keyed by this file's source and the case."""
import hashlib
import json
import sys
import tempfile
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "models"))
sys.path.insert(0, str(HERE))
CACHE = HERE / "t5_inference_torch_cache.json"


def _source_key():
    return hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]


def case_key(case):
    return _source_key() + ":" + json.dumps(case, sort_keys=True)


def _run(case):
    import torch
    import transformers
    import hf_oracle
    from torch_memory import profiled_peak, storage_bytes
    warnings.filterwarnings("ignore")
    transformers.logging.set_verbosity_error()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    config = hf_oracle.hf_config(case["config"], tempfile.mkdtemp())
    config._attn_implementation = case["attention"]
    model = transformers.T5ForConditionalGeneration._from_config(config, dtype=getattr(torch, case["dtype"])).eval()
    b, s, t = case["batch"], case["seq"], case["decoder_seq"]
    torch.manual_seed(1)
    ids = torch.randint(0, case["config"]["vocab_size"], (b, s))
    dec = torch.randint(0, case["config"]["vocab_size"], (b, t))
    state = list(model.parameters()) + list(model.buffers())
    before = storage_bytes(state) + ids.untyped_storage().nbytes() + dec.untyped_storage().nbytes()

    def forward():
        with torch.no_grad():
            model(input_ids=ids, decoder_input_ids=dec)
    peak, _ = profiled_peak(forward)
    return {"state_bytes": storage_bytes(state), "live_before": before, "peak": before + peak}


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
