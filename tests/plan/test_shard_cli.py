"""mtk shard: ZeRO's model states against DeepSpeed's published
multipliers, the slices contract the MPI loader reads, pipeline stages and
bubble, and the errors that name why a plan cannot work."""
import json

import pytest

LLAMA3_8B_PARAMS = 8030261248  # Meta-Llama-3-8B, as the model card and transformers count them


def shard(run, *args):
    r = run("shard", *args, "--json", timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


@pytest.mark.parametrize("zero", [0, 1, 2, 3])
def test_zero_model_states_follow_deepspeed_multipliers(run, zero):
    # ZeRO paper, Figure 1: mixed-precision Adam keeps 2 + 2 + 12 bytes a
    # parameter; stage 1 divides the 12 over the N ranks, stage 2 also the
    # gradients' 2, stage 3 the parameters' 2 too
    n, psi = 8, LLAMA3_8B_PARAMS
    plan = shard(run, "llama-3-8b", "--dp", str(n), "--zero", str(zero), "--input", "1x16", "--dtype", "bfloat16")
    want = {0: (2 * psi, 2 * psi, 12 * psi), 1: (2 * psi, 2 * psi, 12 * psi // n),
            2: (2 * psi, 2 * psi // n, 12 * psi // n), 3: (2 * psi // n, 2 * psi // n, 12 * psi // n)}[zero]
    assert len(plan["ranks"]) == n
    for r in plan["ranks"]:
        m = r["memory"]
        assert (m["parameters"], m["gradients"], m["optimizer_states"]) == want
        assert r["peak_bytes"] == sum(r["at_peak"].values())


def test_fsdp_shards_model_states_like_zero3(run):
    z3 = shard(run, "llama-3-8b", "--dp", "8", "--zero", "3", "--input", "1x16")
    fsdp = shard(run, "llama-3-8b", "--dp", "8", "--fsdp", "--input", "1x16")
    total = sum(r["memory"]["parameters"] for r in fsdp["ranks"])
    # FSDP2's mixed precision: float32 shards (every element on exactly one
    # rank) with float32 .grad and AdamW's moments, the 16-bit copies only
    # gathered: the 4 + 8 bytes a parameter of ZeRO-3's 12 (master and moments)
    assert total == 4 * LLAMA3_8B_PARAMS
    m, z = fsdp["ranks"][0]["memory"], z3["ranks"][0]["memory"]
    assert m["gradients"] == m["parameters"]
    assert m["parameters"] + m["optimizer_states"] == z["optimizer_states"]


@pytest.mark.parametrize("extra", [[], ["--fsdp"]], ids=["replicated-dp", "fsdp"])
def test_slices_tile_each_parameter_once_per_replica(run, extra):
    tp, pp, dp = 2, 2, 2
    plan = shard(run, "llama-3.2-1b", "--tp", str(tp), "--pp", str(pp), "--dp", str(dp), "--input", "1x8",
                 "--global-batch", "4", *extra)
    assert plan["world_size"] == tp * pp * dp and plan["mesh"] == {"tp": tp, "pp": pp, "dp": dp, "ep": 1}
    for p in plan["parameters"]:
        ranks = [s["rank"] for s in p["slices"]]
        assert ranks == sorted(set(ranks)), p["name"]
        # the ranks holding any part of it: every rank of its stage; the
        # embedding lm_head is tied to also every rank of the last stage
        stages = [p["stage"], pp - 1] if p["name"] == "model.embed_tokens.weight" else [p["stage"]]
        assert ranks == [s * tp * dp + k for s in stages for k in range(tp * dp)], p["name"]
        covered = sum(numel(s["shape"]) for s in p["slices"])
        replicas = len(stages)
        if p["placement"] == "Replicate":
            replicas *= tp
        if p["dp_placement"] == "Replicate":
            replicas *= dp
        assert covered == replicas * numel(p["shape"]), p["name"]
        for s in p["slices"]:
            assert all(0 <= o and o + n <= full for o, n, full in zip(s["offset"], s["shape"], p["shape"]))


def test_pipeline_stages_cover_the_layers_and_bubble_is_1f1b(run):
    plan = shard(run, "llama-3.2-1b", "--pp", "4", "--dp", "2", "--input", "1x8", "--global-batch", "32")
    assert plan["micro_batches"] == 16
    assert plan["bubble"] == pytest.approx(3 / (16 + 3))
    layers = [s["layers"] for s in plan["stages"]]
    assert layers[0][0] == 0 and layers[-1][1] == 16
    assert all(a[1] == b[0] and a[0] < a[1] for a, b in zip(layers, layers[1:]))
    # 1F1B: stage s keeps pp - s micro-batches' activations
    assert [r["in_flight"] for r in plan["ranks"][::2]] == [4, 3, 2, 1]
    pp = {(c["stage"], c["op"]) for c in plan["communication"] if c["group"] == "pp"}
    # llama-3.2-1b ties lm_head to the embeddings: the two stages all-reduce its gradient
    assert {x for x in pp if x[1] == "all_reduce"} == {(0, "all_reduce"), (3, "all_reduce")}
    sends = {x for x in pp if x[1] != "all_reduce"}
    assert sends == {(0, "send"), (0, "recv"), (1, "send"), (1, "recv"), (2, "send"), (2, "recv"), (3, "send"),
                     (3, "recv")}


def test_tensor_parallel_divides_activations(run):
    one = shard(run, "llama-3.2-1b", "--input", "2x64")["ranks"][0]["memory"]["activations_saved"]
    four = shard(run, "llama-3.2-1b", "--tp", "4", "--input", "2x64")["ranks"][0]["memory"]["activations_saved"]
    sp = shard(run, "llama-3.2-1b", "--tp", "4", "--sp", "--input", "2x64")["ranks"][0]["memory"]["activations_saved"]
    assert sp < four < one


def test_rank_keeps_only_that_ranks_slices(run):
    plan = shard(run, "llama-3.2-1b", "--tp", "2", "--pp", "2", "--input", "1x8", "--rank", "3")
    assert [r["rank"] for r in plan["ranks"]] == [3]
    assert plan["parameters"] and all(p["stage"] == 1 or p["name"] == "model.embed_tokens.weight"
                                      for p in plan["parameters"])
    assert all([s["rank"] for s in p["slices"]] == [3] for p in plan["parameters"])


def test_expert_parallel_splits_experts_over_ep(run):
    plan = shard(run, "mixtral-8x7b", "--dp", "4", "--ep", "4", "--input", "1x16")
    experts = [p for p in plan["parameters"] if ".experts." in p["name"]]
    assert experts and all(p["mesh_dim"] == "ep" and p["placement"] == "Shard(0)" for p in experts)
    assert all(p["local_shapes"][0][0] == 2 for p in experts)  # 8 experts over 4
    assert any(c["op"] == "all_to_all" and c["group"] == "ep" for c in plan["communication"])


@pytest.mark.parametrize("args,message", [
    (["llama-3-8b", "--tp", "3"], "num_attention_heads=32 is not divisible by --tp 3"),
    (["llama-3-8b", "--tp", "16"], "num_key_value_heads=8 is not divisible by --tp 16"),
    (["llama-3-8b", "--pp", "33"], "32 layers cannot fill --pp 33 stages"),
    (["llama-3-8b", "--dp", "4", "--global-batch", "6"],
     "--global-batch 6 is not a multiple of --micro-batch 1 x --dp 4 = 4"),
    (["llama-3-8b", "--dp", "2", "--fsdp", "--zero", "2"], "--fsdp and --zero 2"),
    (["gpt2", "--tp", "2"], "gpt2 models have no tensor-parallel plan"),
    (["llama-3-8b", "--dp", "4", "--ep", "2"], "--ep 2 needs a mixture-of-experts model"),
    (["mixtral-8x7b", "--dp", "6", "--ep", "3"], "8 experts are not divisible by --ep 3"),
    (["llama-3-8b", "--dp", "65536"], "parameters on 65536 ranks a stage make"),
])
def test_impossible_plans_fail_naming_the_numbers(run, args, message):
    r = run("shard", *args, "--input", "1x8", timeout=120)
    assert r.returncode == 1
    assert message in r.stderr


def test_vocabulary_not_divisible_by_tp_fails(run, tmp_path):
    cfg = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 64, "intermediate_size": 90,
           "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 4, "vocab_size": 130}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    r = run("shard", str(tmp_path), "--tp", "4", "--input", "1x8", timeout=60)
    assert r.returncode == 1
    assert "vocab_size=130 is not divisible by --tp 4" in r.stderr


def test_one_rank_saves_what_mtk_memory_saves(run):
    # the same graph: with nothing split, a rank keeps what `mtk memory`
    # counts at the end of the forward (which rounds each storage up to
    # CUDA's 512-byte blocks: within 0.1%)
    r = run("memory", "llama-3.2-1b", "--input", "2x64", "--mode", "training", "--device-kind", "cuda", "--json",
            timeout=120)
    assert r.returncode == 0, r.stderr
    want = json.loads(r.stdout)["activations_saved_forward"]
    got = shard(run, "llama-3.2-1b", "--input", "2x64")["ranks"][0]["memory"]["activations_saved"]
    assert got <= want and want - got < want / 1000


@pytest.mark.parametrize("args", [["--pp", "2", "--dp", "2", "--global-batch", "8"], ["--tp", "2", "--sp", "--dp", "2"],
                                  ["--dp", "4", "--zero", "2"]], ids=["pp", "tp-sp", "zero2"])
def test_replayed_peak_holds_no_more_than_the_rank_owns(run, args):
    # the replay is of the whole model on one device: a stage's peak holds
    # its own gradients only, the optimizer's temporaries follow the rank's
    # share, and no moment holds more than the sum of each part's maximum
    plan = shard(run, "llama-3.2-1b", *args, "--input", "2x256")
    for r in plan["ranks"]:
        m, p = r["memory"], r["at_peak"]
        assert p["gradients"] <= m["gradients"]
        assert p["parameters"] == m["parameters"] and p["optimizer_states"] == m["optimizer_states"]
        assert r["peak_bytes"] == sum(p.values()) <= sum(m.values())
