"""mtk shard against transformers 5's own tensor parallelism on torch's
fake process group (tests/plan/torch_shard.py, cached in
torch_shard_cache.json): for every family with a plan at T in {2, 4, 8}, every
parameter's DTensor placement, its local shape on every rank (uneven
splits included) and its offset (mtk's slices); the collectives of one
forward (CommDebugMode's counts, their tensors' bytes) at T = 8.  A
family whose TP forward transformers cannot run is a strict xfail naming
transformers' error (KNOWN_FORWARD_ERRORS)."""
import json

import pytest

import shard_cases

CASES = shard_cases.cases()
_cache = shard_cases.load_cache()

# Known differences: families whose plan transformers applies but whose
# TP forward transformers itself cannot run (their collectives are then
# compared with the same forward under torch.no_grad(), mtk's inference)
KNOWN_FORWARD_ERRORS = {
    "llama4_text": "transformers 5.24's Llama4TextMoe adds the routed experts' output in place (out.add_) into "
                   "the shared expert's rowwise output, a view DTensor's to_local returns from a custom Function: "
                   "RuntimeError: Output 0 of _ToTorchTensor is a view and is being modified inplace",
}


def forward_cases():
    return [pytest.param(f, c, id=f, marks=pytest.mark.xfail(strict=True, reason=KNOWN_FORWARD_ERRORS[f]))
            if f in KNOWN_FORWARD_ERRORS else pytest.param(f, c, id=f) for f, c in CASES]


def mtk_shard(run, tmp_path, cfg, tp):
    d = tmp_path / "model"
    d.mkdir(exist_ok=True)
    (d / "config.json").write_text(json.dumps(cfg))
    b, s = shard_cases.FORWARD
    r = run("shard", str(d), "--tp", str(tp), "--input", "%dx%d" % (b, s), "--mode", "inference", "--dtype",
            "float32", "--json", timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.mark.parametrize("family,case", CASES, ids=[f for f, _ in CASES])
@pytest.mark.parametrize("tp", shard_cases.TPS)
def test_placements_local_shapes_and_slices_match_dtensor(run, tmp_path, family, case, tp):
    want = shard_cases.measured(case, _cache)[str(tp)]["params"]
    got = {p["name"]: p for p in mtk_shard(run, tmp_path, case["config"], tp)["parameters"]}
    assert sorted(got) == sorted(want)
    for name, w in want.items():
        g = got[name]
        assert g["shape"] == w["shape"], name
        assert [g["placement"]] == w["placements"], name
        local = g["local_shapes"] if len(g["local_shapes"]) == tp else g["local_shapes"] * tp
        assert local == [shape for shape, _ in w["local"]], name
        assert [s["rank"] for s in g["slices"]] == list(range(tp)), name
        for s, (shape, offset) in zip(g["slices"], w["local"]):
            assert s["shape"] == shape, name
            assert s["offset"] == offset, name


@pytest.mark.parametrize("family,case", forward_cases())
def test_transformers_runs_its_own_tp_forward(family, case):
    got = shard_cases.measured(case, _cache)[str(shard_cases.TPS[-1])]
    assert "forward_error" not in got, got.get("forward_error")


@pytest.mark.parametrize("family,case", CASES, ids=[f for f, _ in CASES])
def test_forward_collectives_match_comm_debug_mode(run, tmp_path, family, case):
    tp = shard_cases.TPS[-1]
    measured = shard_cases.measured(case, _cache)[str(tp)]
    want = measured["comms"] if "comms" in measured else measured["comms_no_grad"]
    plan = mtk_shard(run, tmp_path, case["config"], tp)
    got = {}
    for c in plan["communication"]:
        assert c["group"] == "tp"
        n, b = got.get(c["op"], (0, 0))
        got[c["op"]] = (n + c["count"], b + c["bytes"])
    # torch names: functional all_reduce and c10d's in-place allreduce_
    # (transformers' MoE all-reduce) are both all-reduces
    reduce_n = sum(want[k][0] for k in ("all_reduce", "allreduce_") if k in want)
    reduce_b = sum(want[k][1] for k in ("all_reduce", "allreduce_") if k in want)
    gather = want.get("all_gather_into_tensor", [0, 0])
    assert got.get("all_reduce", (0, 0)) == (reduce_n, reduce_b)
    assert got.get("all_gather", (0, 0)) == tuple(gather)
    assert set(got) <= {"all_reduce", "all_gather"}
