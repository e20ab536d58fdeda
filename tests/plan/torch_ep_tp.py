"""transformers 5's expert parallelism combined with its tensor parallelism
on a fake process group: the oracle of test_shard_ep_tp_oracle.py.

For one (config, [tp, fsdp, ep]) it builds transformers' own meshes
(DistributedConfig(tp_size, fsdp_size, ep_size) and
initialize_distributed_mesh: the dense (fsdp, tp) mesh and the expert
(efsdp, ep) mesh over the same ranks), then does what
maybe_distribute_model does before FSDP: apply_tensor_parallelism on the
tp mesh with the resolved tp plan, then apply_expert_parallelism on the ep
mesh with the ep plan (the ep rules take the experts).  FSDP is not
applied: mtk's --dp keeps whole replicas (DDP), so the comparison is of
what tp and ep alone do.  The model is small and on the cpu (the token
dispatch reads its split sizes back to the host).

It reads each parameter's placement and, for every global rank g of the
tp x fsdp world, its local shape and offset (a dense parameter's on tp
coordinate g % tp, an expert's on ep coordinate g % ep, as the meshes lay
ranks out), and with "forward" counts one inference forward's and one
training step's (forward, backward of the logits' sum) collectives and
their bytes under CommDebugMode (torch_shard.CommBytesMode), at the last
mesh.  transformers' AllToAllEP slices the batch the tp ranks share
(Replicate -> Shard(0), whose backward all-gathers the row gradients),
all-to-alls the counts and the tokens of its slice, and all-gathers the
combined rows over tp; at inference with ep == tp (the ep group is the tp
group) AutoEP takes AllReduceEP instead: every rank runs its experts on
the whole batch and the outputs are all-reduced.

Run as a script: argv[1] is a JSON case {config, meshes: [[tp, fsdp, ep]
...], [forward: [B, S]]}; prints one JSON line {"tp,fsdp,ep": {params:
{name: {shape, placements, mesh, local: [[shape, offset] per rank]}},
comms, comms_train: {op: [count, bytes]}}}."""
import json
import sys

import torch
import torch.distributed as dist
from torch.distributed.tensor._utils import _compute_local_shape_and_global_offset
from torch.testing._internal.distributed.fake_pg import FakeStore
from transformers.distributed import DistributedConfig
from transformers.distributed import tensor_parallel as tp_impl
from transformers.distributed.expert_parallel import apply_expert_parallelism
from transformers.distributed.utils import initialize_distributed_mesh

import torch_ep
import torch_shard


def measure(case, T, F, E):
    world = T * F
    dist.init_process_group("fake", rank=0, world_size=world, store=FakeStore())
    dc = DistributedConfig(tp_size=T, fsdp_size=F, ep_size=E)
    _, meshes = initialize_distributed_mesh(dc)
    tp_mesh, ep_mesh = meshes.get_mesh("tp"), meshes.get_mesh("ep")
    torch.manual_seed(0)
    model = torch_shard.build(case["config"], T).to_empty(device="cpu")
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0.0, 0.02)
    tp_plan, ep_plan, _ = model._resolve_parallel_plans(dc)
    if T > 1:
        tp_impl.apply_tensor_parallelism(model, tp_mesh, tp_plan)
    apply_expert_parallelism(model, ep_mesh, tp_mesh, ep_plan)
    params = {}
    for name, p in model.named_parameters():
        placements = list(getattr(p, "placements", []))
        expert = placements and p.device_mesh.mesh_dim_names == ("ep",)
        local = []
        for g in range(world):
            if placements:
                size, coord = (E, g % E) if expert else (T, g % T)
                shape, offset = _compute_local_shape_and_global_offset(tuple(p.shape), (size,), [coord], placements)
            else:
                shape, offset = tuple(p.shape), (0,) * p.ndim
            local.append([list(shape), list(offset)])
        params[name] = {"shape": list(p.shape), "mesh": "ep" if expert else "tp",
                        "placements": [torch_shard.placement_text(x) for x in placements] or ["Replicate"],
                        "local": local}
    out = {"params": params}
    if case.get("forward"):
        b, s = case["forward"]
        ids = torch.zeros((b, s), dtype=torch.long)
        with torch.no_grad(), torch_shard.CommBytesMode() as cm:
            model(input_ids=ids, use_cache=False)
        out["comms"] = torch_ep.counted(cm)
        with torch_shard.CommBytesMode() as cm:
            model(input_ids=ids, use_cache=False).logits.sum().backward()
        out["comms_train"] = torch_ep.counted(cm)
    dist.destroy_process_group()
    return out


def measure_all(case):
    out = {}
    for T, F, E in case["meshes"]:
        try:
            out["%d,%d,%d" % (T, F, E)] = measure(case, T, F, E)
        except Exception as e:  # noqa: BLE001 (the refusal is the answer)
            if dist.is_initialized():
                dist.destroy_process_group()
            out["%d,%d,%d" % (T, F, E)] = {"error": "%s: %s" % (type(e).__name__, e)}
    return out


if __name__ == "__main__":
    print(json.dumps(measure_all(json.loads(sys.argv[1]))))
