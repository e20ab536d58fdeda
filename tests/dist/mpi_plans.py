"""Parallel plans for `mtk load --plan`, written in DTensor's terms:
Shard(d) splits dim d as torch.chunk does (chunks of ceil(n / world), the
last ones shorter or empty), Replicate gives every rank the whole tensor, a
pipeline gives each rank whole layers, and "tp" is a Megatron-style plan
(colwise and rowwise linears, experts split across ranks).  Used by
test_mpi_load.py and bench/bench_mpi_load.py."""
import re

DTYPE_SIZE = {"float32": 4, "bfloat16": 2, "float16": 2}


def chunk(n, world, rank):
    """(start, size) of rank's chunk of n along a dim, as torch.chunk /
    DTensor's Shard split it."""
    size = -(-n // world) if n else 0
    start = min(rank * size, n)
    return start, min(start + size, n) - start


def shard(shape, dim, world):
    slices = []
    for rank in range(world):
        start, size = chunk(shape[dim], world, rank)
        offset, local = [0] * len(shape), list(shape)
        offset[dim], local[dim] = start, size
        slices.append({"rank": rank, "offset": offset, "shape": local})
    return slices


def whole(shape, ranks):
    return [{"rank": r, "offset": [0] * len(shape), "shape": list(shape)} for r in ranks]


def layer_of(name):
    m = re.search(r"\.(?:layers|h)\.(\d+)\.", name)
    return int(m.group(1)) if m else None


# colwise (output features split), rowwise (input features split) and
# expert-parallel weights, as transformers' tp plans name them
COLWISE = ("q_proj", "k_proj", "v_proj", "gate_proj", "up_proj", "embed_tokens", "lm_head", "wte", "c_fc")
ROWWISE = ("o_proj", "down_proj", "c_proj")


def placement_of(kind, entry, world, layers):
    """(placement text, slices) of one state-dict entry under plan `kind`."""
    name, shape = entry["name"], entry["shape"]
    if kind == "shard0":
        return "Shard(0)", shard(shape, 0, world)
    if kind == "shard1":
        return ("Shard(1)", shard(shape, 1, world)) if len(shape) >= 2 else ("Replicate()", whole(shape, range(world)))
    if kind == "replicate":
        return "Replicate()", whole(shape, range(world))
    if kind == "pipeline":
        layer = layer_of(name)
        if layer is not None:
            stage = layer * world // layers
        else:
            stage = 0 if any(k in name for k in ("embed", "wte", "wpe")) else world - 1
        return f"stage {stage}", whole(shape, [stage])
    if kind == "tp":  # megatron-style, experts split across ranks (expert parallel)
        if ".experts." in name:
            return "Shard(0)", shard(shape, 0, world)
        conv1d = ".h." in name  # GPT-2's Conv1D weights are (in, out)
        if len(shape) >= 2 and any(k in name for k in COLWISE):
            dim = 1 if conv1d and "c_fc" in name else 0
            return f"Shard({dim})", shard(shape, dim, world)
        if len(shape) >= 2 and any(k in name for k in ROWWISE):
            dim = 0 if conv1d else 1
            return f"Shard({dim})", shard(shape, dim, world)
        return "Replicate()", whole(shape, range(world))
    raise ValueError(kind)


def make_plan(state_dict, kind, world):
    layers = max((layer_of(e["name"]) for e in state_dict if layer_of(e["name"]) is not None), default=0) + 1
    params = []
    for entry in state_dict:
        placement, slices = placement_of(kind, entry, world, layers)
        params.append(dict(entry, placement=placement, slices=slices))
    return {"world_size": world, "parameters": params}
