"""`mpirun -np N mtk load MODEL --weights PATH --plan PLAN.json`: each rank
materializes only its slices of a parallel plan, reading only their bytes.

The plans (mpi_plans.py) are written in DTensor's terms: Shard(d) splits dim
d as torch.chunk does (chunks of ceil(n / world), the last ones shorter or
empty), Replicate gives every rank the whole tensor, a pipeline gives each
rank whole layers.  Each run is checked three ways: the slices each rank
reports are the plan's, the bytes it read are exactly its slices' bytes
(not the file's), and --verify (rank 0 compares every rank's slices with
a whole load, bit for bit, and counts how often each element is held)
passes."""
import json
import math
import re
import subprocess

import pytest

from mpi_launch import mpirun, sanitized_build
from mpi_plans import DTYPE_SIZE, make_plan, shard, whole


def write_plan(tmp_path, plan, name="plan.json"):
    path = tmp_path / name
    path.write_text(json.dumps(plan))
    return path


def slice_bytes(entry, s):
    return math.prod(s["shape"]) * DTYPE_SIZE[entry["dtype"]]


# ---------------------------------------------------------------- runs

def load_plan(mtk_bin, case_dir, plan_path, world, *extra):
    return mpirun(mtk_bin, world, "load", case_dir, "--weights", case_dir, "--plan", plan_path, "--json", *extra)


def check_run(mtk_bin, checkpoints, tmp_path, case, kind, world):
    case_dir = checkpoints / case
    state_dict = json.loads((case_dir / "state_dict.json").read_text())
    plan = make_plan(state_dict, kind, world)
    result = load_plan(mtk_bin, case_dir, write_plan(tmp_path, plan), world, "--verify")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    doc = json.loads(result.stdout)
    assert doc["world_size"] == world and len(doc["ranks"]) == world
    assert doc["verify"]["ok"], doc["verify"]["problems"]
    assert doc["verify"]["tensors"] == len(state_dict)
    file_bytes = sum(math.prod(e["shape"]) * DTYPE_SIZE[e["dtype"]] for e in state_dict)
    assert doc["checkpoint_bytes"] == file_bytes
    for rank, report in enumerate(doc["ranks"]):
        assert report["rank"] == rank
        want = [(p["name"], s["offset"], s["shape"], slice_bytes(p, s))
                for p in plan["parameters"] for s in p["slices"] if s["rank"] == rank]
        got = [(s["name"], s["offset"], s["shape"], s["bytes"]) for s in report["slices"]]
        assert got == want
        assert report["tensors"] == len(want)
        assert report["bytes"] == sum(w[3] for w in want)  # its slices' bytes, not the file's
    return doc, file_bytes


def runs(all_runs, sanitized_runs):
    """The parameters, those not in sanitized_runs skipped in a sanitizer
    build (mpi_launch.sanitized_build)."""
    skip = pytest.mark.skipif(sanitized_build(), reason="the release run covers it; the sanitizer run keeps one "
                                                        "run per kind of plan")
    return [pytest.param(*p, marks=() if p in sanitized_runs else skip) for p in all_runs]


LLAMA_RUNS = runs([("shard0", 2), ("shard0", 3), ("shard0", 4), ("shard1", 2), ("shard1", 3), ("replicate", 2),
                   ("pipeline", 3), ("pipeline", 4), ("tp", 2), ("tp", 3), ("tp", 4)],
                  [("shard0", 3), ("shard1", 2), ("replicate", 2), ("pipeline", 4), ("tp", 4)])


@pytest.mark.parametrize("kind,world", LLAMA_RUNS)
def test_each_rank_reads_only_its_slices_of_a_sharded_llama(mtk_bin, mpi, checkpoints, tmp_path, kind, world):
    doc, file_bytes = check_run(mtk_bin, checkpoints, tmp_path, "llama_sharded", kind, world)
    total = sum(r["bytes"] for r in doc["ranks"])
    if kind == "replicate":
        assert total == world * file_bytes
    elif kind in ("shard0", "pipeline"):  # every element on exactly one rank
        assert total == file_bytes
        assert all(r["bytes"] < file_bytes for r in doc["ranks"])


@pytest.mark.parametrize("kind,world", runs([("tp", 2), ("tp", 3), ("tp", 4), ("shard1", 3), ("pipeline", 2)],
                                            [("tp", 4)]))
def test_slices_of_fused_experts_are_read_from_per_expert_keys(mtk_bin, mpi, checkpoints, tmp_path, kind, world):
    """Mixtral's file holds each expert's w1/w2/w3; the model fuses them
    (experts.gate_up_proj): a slice is read from the keys it overlaps,
    and 3 experts over 4 ranks leave rank 3 an empty shard."""
    doc, _ = check_run(mtk_bin, checkpoints, tmp_path, "mixtral", kind, world)
    if kind == "tp" and world == 4:
        empty = [s for s in doc["ranks"][3]["slices"] if s["name"].endswith("experts.gate_up_proj")]
        assert empty and all(s["shape"][0] == 0 and s["bytes"] == 0 for s in empty)


@pytest.mark.parametrize("kind,world", runs([("tp", 2), ("shard1", 3), ("shard0", 4)], [("tp", 2)]))
def test_gpt2_slices_match_with_its_prefix_and_tied_head(mtk_bin, mpi, checkpoints, tmp_path, kind, world):
    check_run(mtk_bin, checkpoints, tmp_path, "gpt2", kind, world)


def test_a_split_of_dim_one_reads_the_slice_row_by_row(mtk_bin, mpi, checkpoints, tmp_path):
    """Shard(1) of a (97, 48) embedding over 4 ranks: 12 columns of every
    row each, 97 * 12 * 4 bytes, though the rows span the whole tensor."""
    case_dir = checkpoints / "llama_sharded"
    entry = {"name": "model.embed_tokens.weight", "shape": [97, 48], "dtype": "float32"}
    plan = {"world_size": 4, "parameters": [dict(entry, placement="Shard(1)", slices=shard([97, 48], 1, 4))]}
    result = load_plan(mtk_bin, case_dir, write_plan(tmp_path, plan), 4)
    assert result.returncode == 0, result.stderr[-2000:]
    assert [r["bytes"] for r in json.loads(result.stdout)["ranks"]] == [97 * 12 * 4] * 4


# ------------------------------------------------------------- errors

def llama_plan(checkpoints, kind="shard0", world=2):
    state_dict = json.loads((checkpoints / "llama_sharded" / "state_dict.json").read_text())
    return make_plan(state_dict, kind, world)


def run_text(mtk_bin, checkpoints, plan_path, world):
    case_dir = checkpoints / "llama_sharded"
    return mpirun(mtk_bin, world, "load", case_dir, "--weights", case_dir, "--plan", plan_path)


def corrupt_name(plan):
    plan["parameters"][3]["name"] = "model.layers.0.self_attn.bogus.weight"


def corrupt_bounds(plan):
    plan["parameters"][1]["slices"][1]["offset"][0] = 40


def corrupt_rank(plan):
    plan["parameters"][0]["slices"][0]["rank"] = 7


def corrupt_shape(plan):
    plan["parameters"][0]["shape"] = [96, 48]


CORRUPTIONS = {
    "unknown name": (corrupt_name, r"names 'model\.layers\.0\.self_attn\.bogus\.weight', which LlamaForCausalLM "
                                   r"does not have"),
    "slice out of bounds": (corrupt_bounds, r"the slice of '[^']+' on rank 1 is out of bounds: dim 0 offset 40 \+ "
                                            r"size \d+ > \d+"),
    "rank outside the world": (corrupt_rank, r"a slice of 'model\.embed_tokens\.weight' is on rank 7 of a world of 2"),
    "wrong shape": (corrupt_shape, r"'model\.embed_tokens\.weight' has shape \[96, 48\] in the plan but \[97, 48\]"),
}


@pytest.mark.parametrize("what", runs([(w,) for w in CORRUPTIONS], [("unknown name",), ("slice out of bounds",)]))
def test_a_corrupted_plan_is_a_clear_error_on_every_rank(mtk_bin, mpi, checkpoints, tmp_path, what):
    corrupt, message = CORRUPTIONS[what]
    plan = llama_plan(checkpoints)
    corrupt(plan)
    result = run_text(mtk_bin, checkpoints, write_plan(tmp_path, plan), 2)
    assert result.returncode != 0
    assert len(re.findall("mtk: error: load: plan '[^']+'.*" + message, result.stderr)) == 2, result.stderr
    assert result.stdout == ""  # nothing loaded, nothing reported


def test_a_plan_for_another_world_size_is_refused_on_every_rank(mtk_bin, mpi, checkpoints, tmp_path):
    result = run_text(mtk_bin, checkpoints, write_plan(tmp_path, llama_plan(checkpoints, world=4)), 3)
    assert result.returncode != 0
    assert result.stderr.count("is for a world of 4 ranks, but 3 ranks run (mpirun -np 4)") == 3, result.stderr


@pytest.mark.skipif(sanitized_build(), reason="the release run covers it")
def test_a_plan_that_is_not_json_is_refused(mtk_bin, mpi, checkpoints, tmp_path):
    path = tmp_path / "plan.json"
    path.write_text('{"world_size": 2, "parameters": [')
    result = run_text(mtk_bin, checkpoints, path, 2)
    assert result.returncode != 0 and result.stderr.count("is not JSON") == 2, result.stderr


def test_the_json_error_names_the_rank_that_failed(mtk_bin, mpi, checkpoints, tmp_path):
    plan = llama_plan(checkpoints)
    corrupt_name(plan)
    case_dir = checkpoints / "llama_sharded"
    result = load_plan(mtk_bin, case_dir, write_plan(tmp_path, plan), 2)
    assert result.returncode != 0
    error = json.loads(result.stdout)["error"]
    assert error["code"] == "invalid_argument" and error["rank"] == 0
    assert "bogus" in error["message"]


# ------------------------------------------------------------- verify

def verify_problems(mtk_bin, checkpoints, tmp_path, plan):
    case_dir = checkpoints / "llama_sharded"
    result = load_plan(mtk_bin, case_dir, write_plan(tmp_path, plan), plan["world_size"], "--verify")
    assert result.returncode == 1, result.stderr[-2000:]
    verify = json.loads(result.stdout)["verify"]
    assert verify["ok"] is False
    return verify["problems"]


def test_verify_fails_when_two_ranks_hold_the_same_rows_of_a_shard(mtk_bin, mpi, checkpoints, tmp_path):
    plan = llama_plan(checkpoints)
    p = plan["parameters"][0]
    p["slices"] = whole(p["shape"], [0, 1])  # Shard(0) in name, but both ranks hold everything
    problems = verify_problems(mtk_bin, checkpoints, tmp_path, plan)
    assert problems == [f"'{p['name']}': {97 * 48} of its {97 * 48} elements are held by more than one rank, "
                        "but its placement (Shard(0)) has no Replicate"]


@pytest.mark.skipif(sanitized_build(), reason="the release run covers it")
def test_verify_fails_when_no_rank_holds_some_rows(mtk_bin, mpi, checkpoints, tmp_path):
    plan = llama_plan(checkpoints)
    p = plan["parameters"][0]
    del p["slices"][1]  # rank 1's 48 rows of the embedding
    problems = verify_problems(mtk_bin, checkpoints, tmp_path, plan)
    assert problems == [f"'{p['name']}': {48 * 48} of its {97 * 48} elements are held by no rank"]


@pytest.mark.skipif(sanitized_build(), reason="the release run covers it")
def test_verify_fails_when_a_tensor_is_in_no_rank(mtk_bin, mpi, checkpoints, tmp_path):
    plan = llama_plan(checkpoints)
    gone = plan["parameters"].pop()
    problems = verify_problems(mtk_bin, checkpoints, tmp_path, plan)
    assert problems == [f"'{gone['name']}' is in the checkpoint but no rank holds it"]


# -------------------------------------------------------------- usage

def test_verify_and_output_are_usage_errors_without_a_plan_or_with_one(mtk_bin, tmp_path):
    base = [mtk_bin, "load", "llama", "--weights", str(tmp_path)]
    out = subprocess.run(base + ["--verify"], capture_output=True, text=True)
    assert out.returncode == 2 and "--verify needs --plan" in out.stderr
    out = subprocess.run(base + ["--plan", "p.json", "--output", "x.safetensors"], capture_output=True, text=True)
    assert out.returncode == 2 and "--output cannot be combined with --plan" in out.stderr


# ------------------------------------------------- mtk shard's own plans

@pytest.mark.parametrize("spec", runs([("--tp 2",), ("--tp 2 --pp 2",), ("--tp 2 --dp 2 --fsdp",), ("--dp 2 --ep 2",)],
                                      [("--tp 2",)]))
def test_mtk_shards_plans_load_on_mpi_and_cover_the_checkpoint(mtk_bin, mpi, checkpoints, tmp_path, spec):
    """mtk shard's JSON is the loader's plan as it is: tensor parallel with
    packed gate/up experts (slices in two parts), pipeline stages, FSDP
    shards and expert parallel all load, rank by rank, to the checkpoint's
    bytes."""
    case_dir = checkpoints / "mixtral_tp"
    shard_run = subprocess.run([mtk_bin, "shard", str(case_dir), *spec.split(), "--input", "1x8", "--json"],
                               capture_output=True, text=True, timeout=120)
    assert shard_run.returncode == 0, shard_run.stdout[-2000:] + shard_run.stderr[-2000:]
    plan = json.loads(shard_run.stdout)
    world = plan["world_size"]
    result = load_plan(mtk_bin, case_dir, write_plan(tmp_path, plan), world, "--verify")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    doc = json.loads(result.stdout)
    assert doc["verify"]["ok"], doc["verify"]["problems"]
    state_dict = json.loads((case_dir / "state_dict.json").read_text())
    assert doc["verify"]["tensors"] == len(state_dict)
    for rank, report in enumerate(doc["ranks"]):
        boxes = [(p["name"], part["offset"], part["shape"]) for p in plan["parameters"] for s in p["slices"]
                 if s["rank"] == rank for part in s.get("parts") or [s]]
        assert [(s["name"], s["offset"], s["shape"]) for s in report["slices"]] == boxes
