"""transformers 5's own expert parallelism on a fake process group: the
oracle of test_shard_ep_oracle.py.

For one (config, E) it builds the model (small, on the cpu: the token
dispatch reads its split sizes back to the host, which fake tensors
cannot), resolves the model's EP plan (DistributedConfig(fsdp_size=E,
ep_size=E): every expert whole on one of E ranks, each rank its own
batch, as mtk's --dp E --ep E) and applies it with
transformers.distributed.expert_parallel.apply_expert_parallelism on an
(ep=E, tp=1) DeviceMesh over torch's fake process group.  It reads each
parameter's DTensor placement and local shape on every EP rank, and with
"forward" runs one forward of (batch, seq) ids under CommDebugMode
(torch_shard.CommBytesMode) and counts the collectives and their bytes.
transformers then takes its AllToAllEP path (the EP group does not share
one batch): per MoE layer an all-to-all of the per-expert token counts
and two of the tokens.  The fake group's all-to-all hands each rank its
own send buffer back, so every rank routes as this one does.

Run as a script: argv[1] is a JSON case {config, eps: [E...], [forward:
[B, S]]}; prints one JSON line {E: {params: {name: {shape, placements,
local: [[shape, offset] per rank]}}, comms, comms_train: {op: [count,
bytes]}}}, the
forward measured at the last E.
"""
import json
import sys

import torch
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor._utils import _compute_local_shape_and_global_offset
from torch.testing._internal.distributed.fake_pg import FakeStore
from transformers.distributed import DistributedConfig
from transformers.distributed.expert_parallel import apply_expert_parallelism

import torch_shard


def measure(case, E):
    dist.init_process_group("fake", rank=0, world_size=E, store=FakeStore())
    mesh = init_device_mesh("cpu", (E, 1), mesh_dim_names=("ep", "tp"))
    torch.manual_seed(0)
    with torch.device("meta"):
        model = torch_shard.build(case["config"], E)
    model = model.to_empty(device="cpu")
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.02)
    _, plan, _ = model._resolve_parallel_plans(DistributedConfig(fsdp_size=E, ep_size=E))
    apply_expert_parallelism(model, mesh["ep"], mesh["tp"], plan)
    params = {}
    for name, p in model.named_parameters():
        placements = list(getattr(p, "placements", []))
        local = []
        for r in range(E):
            if placements:
                shape, offset = _compute_local_shape_and_global_offset(tuple(p.shape), (E,), [r], placements)
            else:
                shape, offset = tuple(p.shape), (0,) * p.ndim
            local.append([list(shape), list(offset)])
        params[name] = {"shape": list(p.shape), "placements": [torch_shard.placement_text(x) for x in placements] or
                        ["Replicate"], "local": local}
    out = {"params": params}
    if case.get("forward"):
        b, s = case["forward"]
        ids = torch.zeros((b, s), dtype=torch.long)
        with torch.no_grad(), torch_shard.CommBytesMode() as cm:
            model(input_ids=ids, use_cache=False)
        out["comms"] = counted(cm)
        # a training step's: the forward, then the backward of its logits' sum
        with torch_shard.CommBytesMode() as cm:
            model(input_ids=ids, use_cache=False).logits.sum().backward()
        out["comms_train"] = counted(cm)
    dist.destroy_process_group()
    return out


def counted(cm):
    """{op: [count, bytes]} of what CommBytesMode saw."""
    return {str(op).split(".")[-1]: [n, cm.comm_bytes[str(op).split(".")[-1]]] for op, n in cm.get_comm_counts().items()}


def measure_all(case):
    out = {}
    for i, E in enumerate(case["eps"]):
        one = dict(case)
        if i != len(case["eps"]) - 1:
            one.pop("forward", None)
        out[str(E)] = measure(one, E)
    return out


if __name__ == "__main__":
    print(json.dumps(measure_all(json.loads(sys.argv[1]))))
