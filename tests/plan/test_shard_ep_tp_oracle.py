"""mtk shard --tp T --dp F --ep E against transformers 5's expert
parallelism combined with its tensor parallelism on torch's fake process
group (tests/plan/torch_ep_tp.py, cached in torch_ep_tp_cache.json):
DistributedConfig(tp_size=T, fsdp_size=F, ep_size=E)'s meshes, the tp plan
then the ep plan applied (no FSDP: mtk's dp keeps whole replicas).

For each mesh: every parameter's placement and, on every rank of the
T x F world, its local shape and offset (experts whole on ep rank g % E:
the expert group is E consecutive ranks, spanning the tp ranks); one
inference forward's and one training step's collectives (CommDebugMode's
counts and bytes, per op).  A mesh transformers refuses (E not a multiple
of T) mtk refuses too."""
import json

import pytest

import shard_cases

CASES = shard_cases.ep_tp_cases()
_cache = shard_cases.load_cache(shard_cases.EP_TP_CACHE)
# torch's collective names as mtk's ops (c10d's in-place all-reduce from
# the EP all-reduce and rowwise outputs, alltoall_base_ the counts')
OPS = {"all_reduce": "all_reduce", "allreduce_": "all_reduce", "all_gather_into_tensor": "all_gather",
       "alltoall_base_": "all_to_all", "all_to_all_single": "all_to_all", "reduce_scatter_tensor": "reduce_scatter"}


def mtk_shard(run, tmp_path, cfg, mesh, mode="inference"):
    tp, dp, ep = mesh
    d = tmp_path / "model"
    d.mkdir(exist_ok=True)
    (d / "config.json").write_text(json.dumps(cfg))
    b, s = shard_cases.FORWARD
    return run("shard", str(d), "--tp", str(tp), "--dp", str(dp), "--ep", str(ep), "--input", "%dx%d" % (b, s),
               "--mode", mode, "--dtype", "float32", "--json", timeout=120)


def measured(case, mesh):
    return shard_cases.ep_tp_measured(case, _cache)["%d,%d,%d" % tuple(mesh)]


VALID = [m for m in shard_cases.EP_TP_MESHES if m[2] % m[0] == 0]


@pytest.mark.parametrize("family,case", CASES, ids=[f for f, _ in CASES])
@pytest.mark.parametrize("mesh", VALID, ids=["tp%d-dp%d-ep%d" % tuple(m) for m in VALID])
def test_ep_with_tp_places_every_parameter_as_transformers(run, tmp_path, family, case, mesh):
    want = measured(case, mesh)
    assert "error" not in want, want
    r = mtk_shard(run, tmp_path, case["config"], mesh)
    assert r.returncode == 0, r.stderr
    got = {p["name"]: p for p in json.loads(r.stdout)["parameters"]}
    assert sorted(got) == sorted(want["params"])
    experts = 0
    for name, w in want["params"].items():
        g = got[name]
        assert [g["placement"]] == w["placements"], name
        assert (g["mesh_dim"] if w["placements"] != ["Replicate"] else w["mesh"]) == w["mesh"], name
        # slices: every rank of the tp x dp world, ascending
        assert [[s["shape"], s["offset"]] for s in g["slices"]] == w["local"], name
        experts += w["mesh"] == "ep"
    assert experts > 0


@pytest.mark.parametrize("family,case", CASES, ids=[f for f, _ in CASES])
@pytest.mark.parametrize("mesh", VALID, ids=["tp%d-dp%d-ep%d" % tuple(m) for m in VALID])
@pytest.mark.parametrize("mode", ["inference", "training"])
def test_ep_with_tp_collectives_match_comm_debug_mode(run, tmp_path, family, case, mesh, mode):
    w = measured(case, mesh)["comms" if mode == "inference" else "comms_train"]
    want = {}
    for op, (n, b) in w.items():
        n0, b0 = want.get(OPS[op], (0, 0))
        want[OPS[op]] = (n0 + n, b0 + b)
    r = mtk_shard(run, tmp_path, case["config"], mesh, mode)
    assert r.returncode == 0, r.stderr
    got = {}
    for c in json.loads(r.stdout)["communication"]:
        if c["group"] == "dp":
            continue  # the gradients' all-reduce: no DDP in the oracle
        n, b = got.get(c["op"], (0, 0))
        got[c["op"]] = (n + c["count"], b + c["bytes"])
    assert got == want


@pytest.mark.parametrize("family,case", CASES, ids=[f for f, _ in CASES])
def test_ep_not_a_multiple_of_tp_is_refused_as_transformers_does(run, tmp_path, family, case):
    mesh = [m for m in shard_cases.EP_TP_MESHES if m[2] % m[0]][0]
    assert measured(case, mesh)["error"] == "ValueError: `ep_size` must be a multiple of `tp_size`."
    r = mtk_shard(run, tmp_path, case["config"], mesh)
    assert r.returncode != 0
    assert "--ep %d is not a multiple of --tp %d" % (mesh[2], mesh[0]) in r.stdout + r.stderr
