"""mtk shard --dp E --ep E against transformers 5's own expert parallelism
on torch's fake process group (tests/plan/torch_ep.py, cached in
torch_ep_cache.json): for every family with a base_model_ep_plan at E in
{2, 4, 8}, every parameter's placement over the expert group, its local
shape and offset on every EP rank; the all-to-alls of one inference
forward and of one training step's forward and backward (CommDebugMode's
counts, their tensors' bytes) at E = 8."""
import json

import pytest

import shard_cases

CASES = shard_cases.ep_cases()
_cache = shard_cases.load_cache(shard_cases.EP_CACHE)


def mtk_shard(run, tmp_path, cfg, ep, mode="inference"):
    d = tmp_path / "model"
    d.mkdir(exist_ok=True)
    (d / "config.json").write_text(json.dumps(cfg))
    b, s = shard_cases.FORWARD
    r = run("shard", str(d), "--dp", str(ep), "--ep", str(ep), "--input", "%dx%d" % (b, s), "--mode", mode,
            "--dtype", "float32", "--json", timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.mark.parametrize("family,case", CASES, ids=[f for f, _ in CASES])
@pytest.mark.parametrize("ep", shard_cases.EPS)
def test_expert_placements_and_local_shapes_match_dtensor(run, tmp_path, family, case, ep):
    want = shard_cases.ep_measured(case, _cache)[str(ep)]["params"]
    got = {p["name"]: p for p in mtk_shard(run, tmp_path, case["config"], ep)["parameters"]}
    assert sorted(got) == sorted(want)
    experts = 0
    for name, w in want.items():
        g = got[name]
        assert g["shape"] == w["shape"], name
        assert [g["placement"]] == w["placements"], name
        local = g["local_shapes"] if len(g["local_shapes"]) == ep else g["local_shapes"] * ep
        assert local == [shape for shape, _ in w["local"]], name
        # data-parallel rank d holds expert-group index d % ep
        assert [s["offset"] for s in g["slices"]] == [offset for _, offset in w["local"]], name
        experts += w["placements"] != ["Replicate"]
    assert experts > 0


@pytest.mark.parametrize("family,case", CASES, ids=[f for f, _ in CASES])
@pytest.mark.parametrize("mode", ["inference", "training"])
def test_expert_all_to_alls_match_comm_debug_mode(run, tmp_path, family, case, mode):
    ep = shard_cases.EPS[-1]
    measured = shard_cases.ep_measured(case, _cache)[str(ep)]
    want = measured["comms" if mode == "inference" else "comms_train"]
    plan = mtk_shard(run, tmp_path, case["config"], ep, mode)
    got = {}
    for c in plan["communication"]:
        if c["group"] == "dp":
            continue  # the gradients' all-reduce: no DDP in the oracle
        n, b = got.get((c["op"], c["group"]), (0, 0))
        got[(c["op"], c["group"])] = (n + c["count"], b + c["bytes"])
    # c10d's alltoall_base_ (the per-expert counts) and the functional
    # all_to_all_single (the tokens out and back, in the backward their
    # gradients) are all-to-alls
    assert set(want) <= {"alltoall_base_", "all_to_all_single"}
    n = sum(want[k][0] for k in want)
    b = sum(want[k][1] for k in want)
    assert got == {("all_to_all", "ep"): (n, b)}
