"""torch 2.13's measured memory for the MoE families run with transformers'
grouped_mm experts (its default `_experts_implementation`), by the protocol
of torch_memory.py, for the oracle of test_memory_grouped.py.

torch's cpu grouped_mm needs 16-byte aligned strides, so the cases use
hidden and intermediate sizes that are multiples of 16
(memory_cases.grouped_config).  measure() checks that the forward really
ran aten::_grouped_mm (transformers falls back to a loop of mm otherwise).

Run as a script it measures one configuration given as JSON on argv[1]."""
import json
import sys

import torch
from torch.profiler import ProfilerActivity, profile

import torch_memory


def build(cfg, dtype, attn):
    # torch_memory.build forces batched_mm for mixtral and qwen2_moe: the
    # config's own _experts_implementation rules here
    saved = torch_memory.MOE_FAMILIES
    torch_memory.MOE_FAMILIES = set()
    try:
        return _build(cfg, dtype, attn)
    finally:
        torch_memory.MOE_FAMILIES = saved


_build = torch_memory.build


def ran_grouped_mm(case):
    model = build(case["config"], case["dtype"], case["attention"])
    ids = torch.randint(0, model.config.vocab_size, (case["batch"], case["seq"]))
    with profile(activities=[ProfilerActivity.CPU]) as prof, torch.no_grad():
        model(ids)
    return any(e.name() == "aten::_grouped_mm" for e in prof.profiler.kineto_results.events())


def measure(case):
    if not ran_grouped_mm(case):
        raise RuntimeError("%s: transformers did not run aten::_grouped_mm" % case["config"]["model_type"])
    torch_memory.build = build
    try:
        return torch_memory.measure(case)
    finally:
        torch_memory.build = _build


if __name__ == "__main__":
    torch.set_num_threads(1)
    print(json.dumps(measure(json.loads(sys.argv[1]))))
