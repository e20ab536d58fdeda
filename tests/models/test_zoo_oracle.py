"""The zoo oracle: models of every family built by mtk (zoo_probe, on meta)
and by transformers (the class named by architectures[0], under
torch.device('meta'), as from_config builds it), compared on state-dict
keys, shapes and dtypes, parameters (tied ones once, with requires_grad),
buffers (persistent or not), parameter counts, and forward output shapes,
dtypes and FLOPs (torch.utils.flop_counter) for random inputs.

Random small configs cover every class of every family; built-in models
are compared in full when small, and big ones (over BIG_PARAMS) on a
two-layer copy of their config, their full key list and count then
extrapolated layer by layer (transformers on meta takes seconds for a 70B
model: too slow here).  Published parameter counts must come out exactly.
"""
import copy
import json
import random
import re

import pytest

import hf_oracle
import random_configs

BIG_PARAMS = 1_000_000_000


PUBLISHED_COUNTS = {
    "llama-3-8b": 8_030_261_248,
    "llama-3-70b": 70_553_706_496,
    "mistral-7b": 7_241_732_096,
    "mixtral-8x7b": 46_702_792_704,
    "gpt2": 124_439_808,
    "bert-base-uncased": 109_514_298,  # BertForMaskedLM
    "pythia-160m": 162_322_944,        # the Pythia paper's total
    # Qwen3 model cards: 0.6B, 8.2B, 32.8B, 30.5B (3.3B active), 235B (22B active)
    "qwen3-0.6b": 596_049_920,
    "qwen3-8b": 8_190_735_360,
    "qwen3-32b": 32_762_123_264,
    "qwen3-30b-a3b": 30_532_122_624,
    "qwen3-235b-a22b": 235_093_634_560,
    # model cards: 3.8B (longrope), 14.7B, 70B (llama3 rope)
    "phi-3.5-mini": 3_821_079_552,
    "phi-4": 14_659_507_200,
    "llama-3.3-70b": 70_553_706_496,
    # model cards: 7.3B (OLMo 2 7B), 3.08B (SmolLM3, tied embeddings)
    "olmo-2-7b": 7_298_617_344,
    "smollm3-3b": 3_075_098_624,
    "phi-2": 2_779_683_840,  # the model card's 2.7B
    # the masked-LM classes the published configs name (RobertaModel alone: 124,645,632, the
    # "125M" of the model card; XLM-R large "560M"; ModernBERT-base "149M")
    "roberta-base": 124_697_433,
    "xlm-roberta-large": 560_142_482,
    "modernbert-base": 149_655_232,
    "t5-base": 222_903_552,  # T5ForConditionalGeneration, lm_head tied to shared
    # gpt-oss model card: 20.9B and 116.8B (117B); Llama 4 Scout's text model (109B with the vision
    # tower, which mtk does not build)
    "gpt-oss-20b": 20_914_757_184,
    "gpt-oss-120b": 116_829_156_672,
    "llama-4-scout": 107_769_861_120,
}

# Quantized built-ins: the published count is the dense model's; mtk's total (as transformers'
# quantized model's) has the fp8 checkpoints' *_scale_inv tensors more.
# DeepSeek-V3: the paper's 671B (its checkpoint's 685B adds the 14B multi-token-prediction
# layer, model.layers.61, which transformers does not build); Kimi-K2: the Hub's 1.03T
# (the announcement rounds to 1T / 1.04T; the config gives exactly this).
PUBLISHED_DENSE_COUNTS = {
    "deepseek-v3": 671_026_404_352,
    "kimi-k2": 1_026_408_209_408,
}
PUBLISHED_COUNTS.update({
    "gemma-3-1b": 999_885_952,  # google/gemma-3-1b-it's safetensors total
    "gemma-3-27b": 27_432_406_640,  # google/gemma-3-27b-it: text model, SigLIP tower and projector
    # mistralai/Mistral-Small-3.1-24B-Instruct-2503: text model (untied lm_head), Pixtral tower, projector
    "mistral-small-3.1": 24_011_361_280,
})

# Parameters a token reaches in the MoE built-ins (the model cards' "activated").
ACTIVE_COUNTS = {
    "qwen3-30b-a3b": 3_353_032_704,
    "qwen3-235b-a22b": 22_190_763_520,
    # gpt-oss's card says 3.6B and 5.1B: these less the input embedding (579,133,440), a lookup
    "gpt-oss-20b": 4_187_440_704,
    "gpt-oss-120b": 5_711_982_912,
    "llama-4-scout": 17_172_894_720,  # the card's 17B active
    "deepseek-v3": 37_552_282_624,  # the paper's 37B activated
    "kimi-k2": 32_861_477_888,      # the model card's 32B activated
}
# GLM-4.5-Air's card: 106B total, 12B active (13.4B with the embeddings and lm_head counted);
# exactly: 1 dense + 45 MoE layers of 8 of 128 routed experts and 1 shared
ACTIVE_COUNTS.update({"glm-4.5-air": 13_424_123_904})

LAYER_COUNT_KEY = {"gpt2": "n_layer"}


# ------------------------------------------------------------ comparisons

def _named(rows):
    return {r[0]: r[1:] for r in rows}


def assert_same_tensors(got, want, what):
    """Two [[name, shape, dtype, ...]] lists: same names in the same order,
    same shapes, dtypes and flags, with a readable diff."""
    g, w = _named(got), _named(want)
    missing = [n for n in w if n not in g]
    extra = [n for n in g if n not in w]
    assert not missing and not extra, "%s: missing in mtk %s; not in transformers %s" % (what, missing[:20],
                                                                                         extra[:20])
    wrong = ["%s: mtk %s, transformers %s" % (n, g[n], w[n]) for n in w if g[n] != w[n]]
    assert not wrong, "%s differ:\n  %s" % (what, "\n  ".join(wrong[:20]))
    assert [r[0] for r in got] == [r[0] for r in want], "%s: same names, other order" % what


def assert_same_model(got, want):
    assert "error" not in got, got.get("error")
    assert got["type"] == want["type"]
    assert_same_tensors(got["state_dict"], want["state_dict"], "state dict")
    assert_same_tensors(got["params"], want["params"], "parameters")
    assert_same_tensors(got["buffers"], want["buffers"], "buffers")
    assert got["num_params"] == want["num_params"]
    assert got["trainable_params"] == want["trainable_params"]


def assert_same_forward(got, want):
    """Outputs' shapes and dtypes, and FLOPs.  MoE models too: mtk's balanced
    routing (tokens * top_k / experts rows per expert) totals what
    transformers' batched_mm experts compute on meta."""
    assert "error" not in got, got.get("error")
    assert got["outputs"] == want["outputs"]
    assert got["flops"] == want["flops"]


# ----------------------------------------------------- random small configs

RANDOM_CASES = random_configs.cases()


@pytest.fixture(scope="module")
def random_answers(zoo_probe, tmp_path_factory):
    """mtk's answers for every random case, from one zoo_probe run:
    {case id: (config dir, input shapes, answer)}."""
    requests, dirs = [], {}
    for case_id, cfg in RANDOM_CASES:
        directory = tmp_path_factory.mktemp(case_id)
        (directory / "config.json").write_text(json.dumps(cfg))
        shapes = random_configs.input_shapes(cfg, random.Random(case_id))
        dirs[case_id] = (directory, shapes)
        requests.append((str(directory / "config.json"), shapes))
    answers = zoo_probe(requests)
    return {case_id: (*dirs[case_id], answer) for (case_id, _), answer in zip(RANDOM_CASES, answers)}


@pytest.mark.parametrize("case_id,cfg", RANDOM_CASES, ids=[c[0] for c in RANDOM_CASES])
def test_random_config_matches_transformers(case_id, cfg, random_answers):
    directory, shapes, got = random_answers[case_id]
    model = hf_oracle.hf_model(hf_oracle.hf_config(cfg, str(directory)))
    assert_same_model(got, hf_oracle.describe(model))
    assert len(got["forwards"]) == len(shapes)
    for shape, forward in zip(shapes, got["forwards"]):
        assert_same_forward(forward, hf_oracle.forward(model, shape))


# ---------------------------------------------------------- built-in models

def _layer_key(cfg):
    return LAYER_COUNT_KEY.get(cfg["model_type"], "num_hidden_layers")


LAYER_RE = re.compile(r"^((?:.*?\.)?(?:layers|h|layer)\.)(\d+)(\..*)$")  # a base model's keys start at layers.
TEXT_LAYER_RE = re.compile(r"^(.*?language_model\.layers\.)(\d+)(\..*)$")  # a multimodal model's text layers


def expand_layers(rows, layers, first=0, layer_re=LAYER_RE):
    """The [[name, ...]] list of a model of first + 2 layers, extended to
    `layers` layers by repeating its last layer (layers are alike within a
    family past its first `first`: deepseek_v3's and glm4_moe's dense
    layers); `layer_re` finds the layers (a multimodal model's text ones)."""
    prefix, blocks, suffix = [], {}, []
    for row in rows:
        m = layer_re.match(row[0])
        if not m:
            (suffix if blocks else prefix).append(row)
        else:
            assert not suffix, "layer keys after the layers: %s" % row[0]
            blocks.setdefault(int(m.group(2)), []).append(row)

    def renamed(block, i):
        return [[layer_re.sub(r"\g<1>%d\3" % i, r[0]), *r[1:]] for r in block]

    assert renamed(blocks[first + 1], first) == blocks[first], "layers %d and %d differ: cannot extrapolate" % (
        first, first + 1)
    out = list(prefix)
    for i in range(first + 1):
        out += blocks[i]
    for i in range(first + 1, layers):
        out += renamed(blocks[first + 1], i)
    return out + suffix


def _numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def _small_input(entry):
    """The example input with a short sequence (transformers' forward on meta
    stays fast): 1x3x224x224 pixels stay as they are; an encoder-decoder's
    "1x512+1x128" becomes 8 encoder and 5 decoder tokens."""
    if "+" in entry["example_input"]:
        return [[1, 8], [1, 5]]
    shape = [int(d) for d in entry["example_input"].split("x")]
    return shape if len(shape) == 4 else [1, 8]


@pytest.fixture(scope="module")
def builtin_answers(zoo_probe, builtin_models):
    names = sorted(builtin_models)
    answers = zoo_probe([(name, [_small_input(builtin_models[name])]) for name in names])
    return dict(zip(names, answers))


# The built-ins the issue asks for, and the optional ones this suite knows.
REQUIRED_BUILTINS = {
    "llama-2-7b", "llama-2-13b", "llama-2-70b", "llama-3-8b", "llama-3-70b", "llama-3.1-8b", "llama-3.1-70b",
    "llama-3.1-405b", "llama-3.2-1b", "llama-3.2-3b", "mistral-7b", "mixtral-8x7b", "mixtral-8x22b", "qwen2-7b",
    "qwen2.5-7b", "qwen2.5-72b", "gemma-2b", "gemma-7b", "gemma-2-9b", "gemma-2-27b", "phi-3-mini", "gpt2",
    "gpt2-medium", "gpt2-large", "gpt2-xl", "bert-base-uncased", "bert-large-uncased", "vit-base-patch16-224",
    "qwen3-0.6b", "qwen3-8b", "qwen3-32b", "qwen3-30b-a3b", "qwen3-235b-a22b", "phi-3.5-mini", "phi-4",
    "llama-3.3-70b", "olmo-2-7b", "smollm3-3b", "phi-2", "roberta-base", "xlm-roberta-large", "modernbert-base",
    "t5-base", "gpt-oss-20b", "gpt-oss-120b", "llama-4-scout",
}
OPTIONAL_BUILTINS = {"pythia-160m", "flan-t5-base", "glm-4.5-air"}
OPTIONAL_BUILTINS |= {"lumina-image-2.0-text-encoder"}  # issue 17: Gemma2Model as Lumina 2 loads it
REQUIRED_BUILTINS |= {"deepseek-v3", "kimi-k2", "gemma-3-1b", "gemma-3-27b", "mistral-small-3.1"}  # issue 14


def test_builtin_models_cover_the_issue(builtin_models):
    assert REQUIRED_BUILTINS <= set(builtin_models), sorted(REQUIRED_BUILTINS - set(builtin_models))


def test_every_builtin_model_is_checked_here(builtin_models):
    """A new built-in joins OPTIONAL_BUILTINS, so the oracle compares it."""
    unchecked = set(builtin_models) - REQUIRED_BUILTINS - OPTIONAL_BUILTINS
    # diffusers components (a _class_name, no model_type): tests/diffusion checks them against diffusers
    unchecked = {name for name in unchecked if "_class_name" not in builtin_models[name]["config"]}
    assert not unchecked, "add %s to OPTIONAL_BUILTINS" % sorted(unchecked)


@pytest.mark.parametrize("name", sorted(REQUIRED_BUILTINS | OPTIONAL_BUILTINS))
def test_builtin_matches_transformers(name, builtin_models, builtin_answers, zoo_probe, tmp_path):
    if name not in builtin_models:
        pytest.skip("%s is not a built-in of this build" % name)
    entry, got = builtin_models[name], builtin_answers[name]
    cfg = entry["config"]
    assert "error" not in got, got.get("error")
    shape = _small_input(entry)
    if got["num_params"] <= BIG_PARAMS:
        config = hf_oracle.hf_config(cfg, str(tmp_path))
        model = hf_oracle.hf_model(config)
        # quantized: storage as the quantizer makes it (mxfp4: as the checkpoint stores it); forwards on
        # the dense model
        if "quantization_config" in cfg:
            assert_same_model(got, hf_oracle.describe_quantized(config))
        else:
            assert_same_model(got, hf_oracle.describe(model))
        assert_same_forward(got["forwards"][0], hf_oracle.forward(model, shape))
        return
    # big: the same config with first + 2 layers (after deepseek_v3's / glm4_moe's dense ones), compared in
    # full ...
    layer_cfg = cfg.get("text_config", cfg)  # multimodal: the text model's layers
    layers = layer_cfg[_layer_key(layer_cfg)]
    first = layer_cfg.get("first_k_dense_replace", 0) if layer_cfg.get("model_type", cfg["model_type"]) in (
        "deepseek_v3", "kimi_k2", "glm4_moe") else 0
    small = copy.deepcopy(cfg)
    small_layer_cfg = small.get("text_config", small)
    small_layer_cfg[_layer_key(layer_cfg)] = first + 2
    for key, value in layer_cfg.items():  # per-layer lists (layer_types, no_rope_layers) follow
        if isinstance(value, list) and len(value) == layers:
            small_layer_cfg[key] = value[:first + 2]
    (tmp_path / "config.json").write_text(json.dumps(small))
    config = hf_oracle.hf_config(small, str(tmp_path))
    model = hf_oracle.hf_model(config)
    if "quantization_config" in cfg:  # as above
        want = hf_oracle.describe_quantized(config)
    else:
        want = hf_oracle.describe(model)
    got_small = zoo_probe([(str(tmp_path / "config.json"), [shape])])[0]
    assert_same_model(got_small, want)
    assert_same_forward(got_small["forwards"][0], hf_oracle.forward(model, shape))
    # ... then the full model's keys and count, extrapolated layer by layer
    layer_re = TEXT_LAYER_RE if "text_config" in cfg else LAYER_RE
    assert_same_tensors(got["state_dict"], expand_layers(want["state_dict"], layers, first, layer_re), "state dict")
    assert_same_tensors(got["params"], expand_layers(want["params"], layers, first, layer_re), "parameters")
    per_layer = sum(hf_oracle.param_values(r) for r in want["params"] if layer_re.match(r[0])
                    and layer_re.match(r[0]).group(2) == str(first + 1))
    assert got["num_params"] == want["num_params"] + (layers - first - 2) * per_layer
    # output shapes do not depend on the number of layers
    assert got["forwards"][0]["outputs"] == got_small["forwards"][0]["outputs"]


@pytest.mark.parametrize("name,count", sorted(PUBLISHED_COUNTS.items()))
def test_published_parameter_count(name, count, mtk):
    result = mtk("summary", name, "--json", "--depth", "1")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["total_params"] == count


@pytest.mark.parametrize("name,count", sorted(PUBLISHED_DENSE_COUNTS.items()))
def test_published_parameter_count_of_quantized_builtins(name, count, builtin_answers):
    got = builtin_answers[name]
    scales = sum(_numel(r[1]) for r in got["params"] if r[0].endswith("_scale_inv"))
    assert scales > 0
    assert got["num_params"] - scales == count


@pytest.mark.parametrize("name,active", sorted(ACTIVE_COUNTS.items()))
def test_moe_summary_says_active_parameters(name, active, mtk):
    result = mtk("summary", name, "--json", "--depth", "0", "--input", "1x8")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    total = PUBLISHED_DENSE_COUNTS.get(name, summary["total_params"])  # of the dense model
    wanted = "active parameters per token: %d of %d" % (active, total)
    assert any(note.startswith(wanted) for note in summary["notes"]), summary["notes"]


def test_models_list_says_active_parameters_of_moe_builtins(mtk):
    result = mtk("models", "--json")
    assert result.returncode == 0, result.stderr
    rows = {r["name"]: r for r in json.loads(result.stdout)["models"]}
    for name, active in ACTIVE_COUNTS.items():
        assert rows[name]["active_params"] == active
    assert rows["llama-3-8b"]["active_params"] is None
    text = mtk("models").stdout
    assert "37,552,282,624" in text and "Active" in text.splitlines()[0]


def test_models_list_notes_active_parameters_and_image_inputs(mtk):
    """mtk models carries each built-in's notes (the balanced-routing one
    aside): what a MoE model's token reaches, what a multimodal one leaves
    out; the text listing prints them below the table."""
    result = mtk("models", "--json")
    assert result.returncode == 0, result.stderr
    rows = {row["name"]: row for row in json.loads(result.stdout)["models"]}
    for name, active in ACTIVE_COUNTS.items():
        total = PUBLISHED_DENSE_COUNTS.get(name, rows[name]["params"])  # fp8: of the dense model
        wanted = "active parameters per token: %d of %d" % (active, total)
        assert [n for n in rows[name]["notes"] if n.startswith(wanted)], rows[name]["notes"]
    for name in ("gemma-3-27b", "mistral-small-3.1"):
        assert [n for n in rows[name]["notes"] if n.startswith("image inputs are not modelled")], rows[name]["notes"]
    assert rows["llama-3-8b"]["notes"] == []
    assert not [n for row in rows.values() for n in row["notes"] if n.startswith("MoE routing depends")]
    text = mtk("models")
    assert text.returncode == 0, text.stderr
    assert "\nNotes:\n  qwen3-30b-a3b: active parameters per token: %d" % ACTIVE_COUNTS["qwen3-30b-a3b"] in text.stdout
