"""torch 2.13's measured memory for one planner configuration (the oracle
of test_memory_oracle.py), as GROUND_TRUTH.md measures it:

- peak: the profiler's `[memory]` events of prof.profiler.kineto_results
  summed in time order, plus the bytes live before (parameters, buffers,
  the input ids, and on the second training step the optimizer states);
- training step: model(input_ids=ids, labels=ids).loss, backward,
  optimizer.step(), optimizer.zero_grad(set_to_none=True); both steps are
  measured, the second is the one the planner reports; with grad_accum K
  the forward and backward run K times before the step;
- saved activations: saved_tensors_hooks over the forward, each storage
  once, parameters left out.

Run as a script it measures one configuration given as JSON on argv[1]
and prints one JSON line (a fresh process: nothing left from a previous
model in the allocator's counts).
"""
import json
import os
import sys
import tempfile

import torch
import transformers
from torch.profiler import ProfilerActivity, profile

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
MOE_FAMILIES = {"mixtral", "qwen2_moe"}


def build(cfg, dtype, attn):
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(cfg, f)
        config = transformers.AutoConfig.from_pretrained(d)
    if cfg["model_type"] in MOE_FAMILIES:
        config._experts_implementation = "batched_mm"
    torch.manual_seed(0)
    cls = getattr(transformers, cfg["architectures"][0])
    model = cls._from_config(config, attn_implementation=attn, dtype=DTYPES[dtype])
    return model


def storage_bytes(tensors):
    seen = {}
    for t in tensors:
        st = t.untyped_storage()
        seen[st.data_ptr()] = st.nbytes()
    return sum(seen.values())


def profiled_peak(fn):
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    events = sorted((e.start_ns(), e.nbytes()) for e in prof.profiler.kineto_results.events()
                    if e.name() == "[memory]")
    cur = peak = 0
    for _, b in events:
        cur += b
        peak = max(peak, cur)
    return peak, cur


def optimizer_bytes(opt):
    tensors = [v for s in opt.state.values() for v in s.values() if torch.is_tensor(v)]
    return storage_bytes(tensors) if tensors else 0


def measure(case):
    model = build(case["config"], case["dtype"], case["attention"])
    b, s = case["batch"], case["seq"]
    ids = torch.randint(0, model.config.vocab_size, (b, s))
    base = storage_bytes(list(model.parameters()) + list(model.buffers())) + ids.untyped_storage().nbytes()
    out = {"parameters": storage_bytes(list(model.parameters()) + list(model.buffers()))}
    if case["mode"] == "inference":
        model.eval()

        def run():
            with torch.no_grad():
                model(ids)
        peak, _ = profiled_peak(run)
        out["peak"] = base + peak
        return out
    model.train()
    if case.get("checkpointing"):
        model.gradient_checkpointing_enable()
    params = [p for p in model.parameters() if p.requires_grad]
    if case["optimizer"] == "adamw":
        opt = torch.optim.AdamW(params, lr=1e-3)
    elif case["optimizer"] == "adam":
        opt = torch.optim.Adam(params, lr=1e-3)
    elif case["optimizer"] == "momentum":
        opt = torch.optim.SGD(params, lr=1e-3, momentum=0.9)
    else:
        opt = torch.optim.SGD(params, lr=1e-3)

    accum = case.get("grad_accum", 1)

    def step():
        for _ in range(accum):  # micro-batches: .grad persists across them
            loss = model(input_ids=ids, labels=ids).loss
            loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    peak1, _ = profiled_peak(step)
    out["peak_first_step"] = base + peak1
    states = optimizer_bytes(opt)
    peak2, _ = profiled_peak(step)
    out["peak"] = base + states + peak2
    out["optimizer_states"] = states
    # what the forward saves for backward
    pids = {p.untyped_storage().data_ptr() for p in model.parameters()}
    saved = {}

    def pack(t):
        st = t.untyped_storage()
        if st.data_ptr() not in pids:
            saved[st.data_ptr()] = st.nbytes()
        return t
    if not case.get("checkpointing"):
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            loss = model(input_ids=ids, labels=ids).loss
        out["saved"] = sum(saved.values())
        del loss
    return out


if __name__ == "__main__":
    torch.set_num_threads(1)
    print(json.dumps(measure(json.loads(sys.argv[1]))))
