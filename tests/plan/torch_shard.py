"""transformers 5's own tensor parallelism on a fake process group: the
oracle of test_shard_oracle.py.

For one (config, T) it builds the model on meta, resolves the model's TP
plan (`_resolve_parallel_plans` with DistributedConfig(tp_size=T): the
config's base_model_tp_plan, the class's _tp_plan, the input embeddings
made vocab-parallel), applies it with
transformers.distributed.tensor_parallel.apply_tensor_parallelism on a
1-D DeviceMesh over torch's fake process group, and reads each
parameter's DTensor placements and, for every TP rank, the local shape
and global offset DTensor computes for it.  With "forward" it also runs
one forward of (batch, seq) ids under CommDebugMode in fake tensor mode
and counts the collectives and their bytes.

Run as a script: argv[1] is a JSON case {config, tps: [T...], [forward:
[B, S]]}; prints one JSON line {T: {params: {name: {shape, placements,
local: [[shape, offset] per rank]}}, comms: {op: [count, bytes]}}}, the
forward measured at the last T.  Where transformers' forward raises, the
entry has forward_error (the exception's first line) and comms_no_grad
(the same forward under torch.no_grad()) instead of comms.
"""
import json
import os
import sys
import tempfile
from collections import defaultdict

import torch
import torch.distributed as dist
import transformers
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor.debug import CommDebugMode
from torch.distributed.tensor._utils import _compute_local_shape_and_global_offset
from torch.testing._internal.distributed.fake_pg import FakeStore
from transformers.distributed import DistributedConfig
from transformers.distributed import tensor_parallel as tp_impl

MOE_FAMILIES = {"mixtral", "qwen2_moe", "qwen3_moe", "glm4_moe", "deepseek_v3", "kimi_k2", "gpt_oss", "llama4_text"}


def measure_all(case):
    """measure() for each T of case["tps"] (the forward at the last)."""
    out = {}
    for i, T in enumerate(case["tps"]):
        one = dict(case, tp=T)
        if i != len(case["tps"]) - 1:
            one.pop("forward", None)
        out[str(T)] = measure(one)
    return out


def placement_text(p):
    name = type(p).__name__
    if name == "Shard":
        return "Shard(%d)" % p.dim
    if name == "_StridedShard":
        return "_StridedShard(%d,%d)" % (p.dim, p.split_factor)
    return name


def build(cfg, T):
    family = cfg["model_type"]
    if family == "kimi_k2":
        cfg = dict(cfg, model_type="deepseek_v3")  # Kimi-K2's remote code is DeepseekV3's
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(cfg, f)
        config = transformers.AutoConfig.from_pretrained(d)
    if family in MOE_FAMILIES:
        config._experts_implementation = "batched_mm"
    cls = getattr(transformers, cfg["architectures"][0])
    with torch.device("meta"):
        model = cls._from_config(config, dtype=torch.float32)
    return model


class CommBytesMode(CommDebugMode):
    """CommDebugMode that also adds up each collective's tensor bytes: the
    input of an all-reduce or reduce-scatter, the gathered output of an
    all-gather.  Its per-module tracker is left off (its forward hooks
    fail on phi's model in torch 2.13; the counts do not use it)."""

    def __init__(self):
        super().__init__()
        self.comm_bytes = defaultdict(int)
        self.advanced_module_tracker.__enter__ = lambda *a: None
        self.advanced_module_tracker.__exit__ = lambda *a: None
        self.advanced_module_tracker.name = "Global"
        self.advanced_module_tracker.module_parents_dict = {"Global": ["Global"]}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        before = sum(self.comm_counts.values())
        out = super().__torch_dispatch__(func, types, args, kwargs)
        if out is not NotImplemented and sum(self.comm_counts.values()) > before:
            name = str(func._overloadpacket).split(".")[-1]
            flat = [x for a in args for x in (a if isinstance(a, (list, tuple)) else [a])]
            first = next((a for a in flat if isinstance(a, torch.Tensor)), None)
            t = out if "gather" in name and isinstance(out, torch.Tensor) else first
            self.comm_bytes[name] += t.numel() * t.element_size() if t is not None else 0
        return out


def measure(case):
    T = case["tp"]
    dist.init_process_group("fake", rank=0, world_size=T, store=FakeStore())
    mesh = init_device_mesh("cpu", (T,))
    model = build(case["config"], T)
    plan, _, _ = model._resolve_parallel_plans(DistributedConfig(tp_size=T))
    tp_impl.apply_tensor_parallelism(model, mesh, plan)
    params = {}
    for name, p in model.named_parameters():
        placements = list(getattr(p, "placements", []))
        local = []
        for r in range(T):
            if placements:
                shape, offset = _compute_local_shape_and_global_offset(tuple(p.shape), (T,), [r], placements)
            else:
                shape, offset = tuple(p.shape), (0,) * p.ndim
            local.append([list(shape), list(offset)])
        params[name] = {"shape": list(p.shape), "placements": [placement_text(x) for x in placements] or
                        ["Replicate"], "local": local}
    out = {"params": params}
    if case.get("forward"):
        with FakeTensorMode(allow_non_fake_inputs=True):
            model = model.to_empty(device="cpu")
            try:
                out["comms"] = forward_comms(model, case["forward"])
            except RuntimeError as e:
                # what transformers' own forward raises, then the same
                # forward without autograd (mtk's inference mode)
                out["forward_error"] = "%s: %s" % (type(e).__name__, str(e).splitlines()[0])
                with torch.no_grad():
                    out["comms_no_grad"] = forward_comms(model, case["forward"])
    dist.destroy_process_group()
    return out


def forward_comms(model, forward):
    """{op: [count, bytes]} of one forward of (batch, seq) zero ids."""
    b, s = forward
    ids = torch.zeros((b, s), dtype=torch.long)
    with CommBytesMode() as cm:
        model(input_ids=ids, use_cache=False)
    return {str(op).split(".")[-1]: [n, cm.comm_bytes[str(op).split(".")[-1]]]
            for op, n in cm.get_comm_counts().items()}


if __name__ == "__main__":
    print(json.dumps(measure_all(json.loads(sys.argv[1]))))
