"""mtk memory's command line: help, usage errors, the JSON document's keys,
the breakdown summing to the peak, --fit's answer and the constants table."""
import json

import pytest


def memory(run, *args):
    r = run("memory", *args)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_help_lists_every_option(run):
    out = memory(run, "--help")
    for opt in ("--input", "--mode", "--optimizer", "--dtype", "--mixed-precision", "--checkpointing",
                "--attention", "--experts", "--device-kind", "--new-tokens", "--grad-accum", "--fit", "--fit-context",
                "--json", "--set", "--constants"):
        assert opt in out


@pytest.mark.parametrize("args,words", [
    ((["llama-3-8b"]), "--input BxS is required"),
    ((["llama-3-8b", "--input", "0x5"]), "bad --input"),
    ((["llama-3-8b", "--input", "1x5", "--mode", "fly"]), "bad value 'fly' for --mode"),
    ((["llama-3-8b", "--input", "1x5", "--optimizer", "lion"]), "bad value 'lion'"),
    ((["llama-3-8b", "--input", "1x5", "--fit", "lots"]), "bad value 'lots'"),
    ((["llama-3-8b", "--input", "1x5", "--fit-context"]), "--fit-context goes with --fit"),
    ((["llama-3-8b", "--input", "1x5", "--set", "nope=1"]), "unknown constant 'nope'"),
    ((["mixtral-8x7b", "--input", "1x5", "--experts", "loop"]), "bad value 'loop' for --experts"),
    ((["--input", "1x5"]), "missing MODEL"),
])
def test_usage_errors_name_the_problem(run, args, words):
    r = run("memory", *args)
    assert r.returncode == 2
    assert words in r.stderr
    assert r.stderr.startswith("mtk: error:")


def test_an_unknown_model_is_an_error(run):
    r = run("memory", "no-such-model", "--input", "1x4")
    assert r.returncode == 1 and "no-such-model" in r.stderr


def test_json_has_the_keys_and_the_breakdown_sums_to_the_peak(run):
    for mode in ("inference", "training"):
        d = json.loads(memory(run, "llama-3.2-1b", "--input", "1x64", "--mode", mode, "--json"))
        for key in ("peak_bytes", "breakdown", "peak_at", "timeline", "modules", "first_step", "notes"):
            assert key in d
        assert set(d["breakdown"]) == {"parameters", "gradients", "optimizer_states", "activations_saved",
                                       "kv_cache", "transient_at_peak"}
        assert sum(d["breakdown"].values()) == d["peak_bytes"]
        assert {"op", "module", "phase"} <= set(d["peak_at"])
        assert max(p["live_bytes"] for p in d["timeline"]) <= d["peak_bytes"]
        assert d["modules"][0]["name"] == "" and d["modules"][0]["parameters"] == d["parameter_bytes"]
        if mode == "training":
            phases = {p["phase"] for p in d["timeline"]}
            assert {"forward", "backward", "optimizer", "zero_grad"} <= phases
            assert d["breakdown"]["optimizer_states"] > 0


def test_checkpointing_saves_less_and_recomputes(run):
    plain = json.loads(memory(run, "llama-3.2-1b", "--input", "2x256", "--mode", "training", "--json"))
    ck = json.loads(memory(run, "llama-3.2-1b", "--input", "2x256", "--mode", "training", "--checkpointing",
                           "--json"))
    assert ck["activations_saved_forward"] < plain["activations_saved_forward"] / 3
    assert "recompute" in {p["phase"] for p in ck["timeline"]}


def test_fit_answers_the_largest_batch_and_one_more_does_not_fit(run):
    one = json.loads(memory(run, "llama-3.2-1b", "--input", "3x128", "--mode", "training", "--json"))
    four = json.loads(memory(run, "llama-3.2-1b", "--input", "4x128", "--mode", "training", "--json"))
    budget = (one["peak_bytes"] + four["peak_bytes"]) // 2
    d = json.loads(memory(run, "llama-3.2-1b", "--input", "1x128", "--mode", "training", "--fit", str(budget),
                          "--json"))
    assert d["fit"]["max_batch"] == 3
    assert d["fit"]["peak_bytes"] == one["peak_bytes"] and d["fit"]["peak_bytes_next"] == four["peak_bytes"]
    assert d["peak_bytes"] == one["peak_bytes"]  # the document is the plan at the answer


def test_fit_context_and_budget_units(run):
    d = json.loads(memory(run, "llama-3.2-1b", "--input", "1x1", "--fit", "4GiB", "--fit-context", "--json"))
    n = d["fit"]["max_context"]
    assert n > 1 and d["fit"]["peak_bytes"] <= 4 * 2**30 < d["fit"]["peak_bytes_next"]
    assert d["fit"]["budget_bytes"] == 4 * 2**30
    assert json.loads(memory(run, "llama-3.2-1b", "--input", "1x1", "--fit", "4GB", "--json"))["fit"]["budget_bytes"] \
        == 4 * 10**9


def test_cuda_rounds_blocks_and_adds_the_context_as_overhead(run):
    cpu = json.loads(memory(run, "llama-3.2-1b", "--input", "1x7", "--json"))
    cuda = json.loads(memory(run, "llama-3.2-1b", "--input", "1x7", "--device-kind", "cuda", "--json",
                             "--set", "cuda_context_bytes=1000"))
    assert cuda["overhead_bytes"] == 1000 and cpu["overhead_bytes"] == 0
    assert cuda["peak_bytes"] > cpu["peak_bytes"]
    assert cuda["peak_bytes"] % 512 == 0


def test_constants_are_listed_with_sources(run):
    out = memory(run, "--constants")
    assert "cuda_block_bytes" in out and "512" in out and "CUDACachingAllocator" in out


def test_text_names_where_the_peak_is(run):
    out = memory(run, "llama-3.2-1b", "--input", "1x64", "--mode", "training")
    assert "peak at: " in out and "first step: peak" in out and "optimizer_states" in out
    assert "layers.0-15 (16 x)" in memory(run, "llama-3.2-1b", "--input", "1x64", "--depth", "3")


def test_inference_counts_the_dynamic_cache_model_builds(run):
    # model(input_ids) under no_grad builds a DynamicCache (use_cache):
    # llama-3.2-1b keeps keys and values of 16 layers x 8 kv heads x 64 dims
    # of bfloat16 for every position at the peak
    d = json.loads(memory(run, "llama-3.2-1b", "--input", "2x5", "--json"))
    assert d["breakdown"]["kv_cache"] == 2 * 16 * 2 * 8 * 5 * 64 * 2
    gpt2 = json.loads(memory(run, "gpt2", "--input", "2x5", "--json"))
    assert gpt2["breakdown"]["kv_cache"] == 0  # no cache modelled for gpt2: the plain forward


def test_sizes_parse_and_print_as_the_other_commands_do(run):
    # the parser of convert --max-shard-size (units case-insensitive) and
    # text_bytes' "4.0 GiB", with the exact byte counts beside
    out = memory(run, "llama-3.2-1b", "--input", "1x1", "--fit", "4gib", "--fit-context")
    assert "fits in 4.0 GiB at batch 1" in out
    d = json.loads(memory(run, "llama-3.2-1b", "--input", "1x1", "--fit", "4GiB", "--fit-context", "--json"))
    assert d["fit"]["budget_bytes"] == 4 << 30
    assert "(%d bytes)" % d["fit"]["peak_bytes"] in out
    zero = json.loads(memory(run, "llama-3.2-1b", "--input", "1x4", "--device-kind", "cuda",
                             "--set", "cuda_context_bytes=0", "--json"))
    assert zero["overhead_bytes"] == 0


@pytest.mark.parametrize("model", ["bert-base-uncased", "roberta-base", "xlm-roberta-large", "modernbert-base"])
def test_masked_lm_builtins_plan_inference_and_training(run, model):
    """Masked LMs train on transformers' masked-LM loss (labels=input_ids): a
    cross_entropy in the backward, and checkpointing recomputes their layers."""
    for mode in ("inference", "training"):
        d = json.loads(memory(run, model, "--input", "2x128", "--mode", mode, "--json"))
        assert sum(d["breakdown"].values()) == d["peak_bytes"] > d["parameter_bytes"]
    ck = json.loads(memory(run, model, "--input", "2x128", "--mode", "training", "--checkpointing", "--json"))
    assert "recompute" in {p["phase"] for p in ck["timeline"]}
    assert ck["activations_saved_forward"] < d["activations_saved_forward"]


def test_an_encoder_decoder_takes_the_encoder_and_the_decoder_inputs(run):
    # t5: --input twice (encoder ids, then decoder ids); the plan traces
    # both stacks, and a longer decoder costs more at the same encoder length
    short = json.loads(memory(run, "t5-base", "--input", "2x64", "--input", "2x8", "--json"))
    long = json.loads(memory(run, "t5-base", "--input", "2x64", "--input", "2x32", "--json"))
    assert short["options"]["decoder_seq"] == 8 and short["options"]["seq"] == 64
    assert long["peak_bytes"] > short["peak_bytes"]
    assert {m["name"] for m in short["modules"]} >= {"encoder", "decoder", "lm_head"}
    assert sum(short["breakdown"].values()) == short["peak_bytes"]
    train = json.loads(memory(run, "t5-base", "--input", "2x64", "--input", "2x8", "--mode", "training", "--json"))
    assert train["breakdown"]["gradients"] > 0 and train["activations_saved_forward"] > 0
    out = memory(run, "t5-base", "--input", "2x64", "--input", "2x8")
    assert "input 2x64, decoder input 2x8" in out


@pytest.mark.parametrize("args,status,words", [
    (["t5-base", "--input", "1x64"], 1, "is an encoder-decoder: give the decoder's length too"),
    (["t5-base", "--input", "1x64", "--input", "2x8"], 2, "has another batch than the encoder's (1)"),
    (["t5-base", "--input", "1x64", "--input", "1x8", "--input", "1x8"], 2, "at most two --input"),
])
def test_encoder_decoder_input_errors_say_what_to_give(run, args, status, words):
    r = run("memory", *args)
    assert r.returncode == status
    assert words in r.stderr


MIXTRAL = {"model_type": "mixtral", "architectures": ["MixtralForCausalLM"], "vocab_size": 101, "hidden_size": 32,
           "intermediate_size": 45, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
           "num_local_experts": 4, "num_experts_per_tok": 2}


@pytest.mark.parametrize("mode", ["inference", "training", "generate"])
def test_experts_option_is_the_configs_experts_implementation(run, tmp_path, mode):
    """--experts batched_mm plans what a config with _experts_implementation
    batched_mm plans (each (token, slot) pair gathers its expert's weights:
    the peak is at a gather), --experts grouped_mm overrides the config's."""
    plain, keyed = tmp_path / "plain", tmp_path / "keyed"
    plain.mkdir(), keyed.mkdir()
    (plain / "config.json").write_text(json.dumps(MIXTRAL))
    (keyed / "config.json").write_text(json.dumps(dict(MIXTRAL, _experts_implementation="batched_mm")))

    def plan(d, *extra):
        return json.loads(memory(run, str(d), "--input", "3x16", "--mode", mode, "--json", *extra))
    batched = plan(keyed)
    assert plan(plain, "--experts", "batched_mm")["peak_bytes"] == batched["peak_bytes"]
    assert plan(keyed, "--experts", "config")["peak_bytes"] == batched["peak_bytes"]
    grouped = plan(keyed, "--experts", "grouped_mm")
    assert grouped["peak_bytes"] == plan(plain)["peak_bytes"] < batched["peak_bytes"]
    if mode == "inference":  # the gate_up gather (48, 90, 32) float32 held while down's is made
        assert batched["peak_at"]["op"] == "index_select" and batched["peak_at"]["module"].endswith("mlp.experts")
