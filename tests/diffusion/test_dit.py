"""diffusers' transformer denoisers (SD3Transformer2DModel,
FluxTransformer2DModel, Lumina2Transformer2DModel) against diffusers: each
built under torch.device('meta') from small random configs and from the
published configs of the built-ins, compared key for key (state dict,
parameters, buffers: names, shapes, dtypes, order), count for count, and
by forward output shape (and FLOPs where both run on meta).

mtk's side is tests/models/zoo_probe.c; diffusers' is dit_oracle.py, whose
answers are cached in the build directory keyed by its source, the case
and the library versions (the published FLUX.1-dev takes seconds to build
even on meta)."""
import copy
import hashlib
import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))
from probe_build import build_dir, build_probe  # noqa: E402

CACHE_FILE = "dit_oracle_cache.json"


# ----------------------------------------------------------------- fixtures

@pytest.fixture(scope="session")
def probe(tmp_path_factory):
    """probe([(model, inputs)]) -> zoo_probe's answers; inputs a list of
    {"shape", "dtype"} in the forward's order (or None: no forward)."""
    binary = build_probe(tmp_path_factory, "tests/models/zoo_probe.c", "zoo_probe")

    def run(requests):
        lines = []
        for model, inputs in requests:
            text = "+".join("x".join(map(str, i["shape"])) + ":" + i["dtype"] for i in inputs) if inputs else ""
            lines.append(f"{model} | {text}\n")
        result = subprocess.run([binary], input="".join(lines), capture_output=True, text=True, timeout=600)
        assert result.returncode == 0, result.stderr
        return [json.loads(line) for line in result.stdout.splitlines()]

    return run


@pytest.fixture(scope="session")
def builtins(tmp_path_factory):
    binary = build_probe(tmp_path_factory, "tests/models/zoo_probe.c", "zoo_probe_builtins")
    result = subprocess.run([binary, "--builtins"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return {e["name"]: json.loads(e["config"]) for e in json.loads(result.stdout)}


def _oracle_key(kind, payload):
    from importlib.metadata import version  # not importing torch: a cached run stays fast
    h = hashlib.sha256()
    h.update((HERE / "dit_oracle.py").read_bytes())
    h.update(json.dumps([kind, payload, version("torch"), version("diffusers")], sort_keys=True).encode())
    return h.hexdigest()


@pytest.fixture(scope="session")
def oracle():
    """oracle("describe", cfg) / oracle("forward", [cfg, inputs, device]):
    dit_oracle's answer, from the cache when it has it."""
    path = build_dir() / CACHE_FILE
    cache = json.loads(path.read_text()) if path.exists() else {}

    def get(kind, payload):
        key = _oracle_key(kind, payload)
        if key not in cache:
            import dit_oracle
            if kind == "describe":
                cache[key] = dit_oracle.describe(copy.deepcopy(payload))
            else:
                cfg, inputs, device = payload
                try:
                    cache[key] = dit_oracle.forward(copy.deepcopy(cfg), inputs, device)
                except Exception as e:  # noqa: BLE001 (diffusers' own failure is the answer)
                    cache[key] = {"error": "%s: %s" % (type(e).__name__, e)}
            tmp = path.with_suffix(".tmp")
            tmp.write_text(json.dumps(cache, indent=0, sort_keys=True))
            tmp.replace(path)
        return cache[key]

    return get


# -------------------------------------------------------------- the cases

def f32(*shape):
    return {"shape": list(shape), "dtype": "float32"}


def sd3_inputs(cfg, b=2, size=16, tokens=7):
    return {"hidden_states": f32(b, cfg.get("in_channels", 16), size, size),
            "encoder_hidden_states": f32(b, tokens, cfg.get("joint_attention_dim", 4096)),
            "pooled_projections": f32(b, cfg.get("pooled_projection_dim", 2048)),
            "timestep": f32(b)}


def flux_inputs(cfg, b=2, patches=16, tokens=7):
    inputs = {"hidden_states": f32(b, patches, cfg.get("in_channels", 64)),
              "encoder_hidden_states": f32(b, tokens, cfg.get("joint_attention_dim", 4096)),
              "pooled_projections": f32(b, cfg.get("pooled_projection_dim", 768)),
              "timestep": f32(b), "img_ids": f32(patches, 3), "txt_ids": f32(tokens, 3)}
    if cfg.get("guidance_embeds"):
        inputs["guidance"] = f32(b)
    return inputs


def lumina_inputs(cfg, b=2, size=16, tokens=7):
    return {"hidden_states": f32(b, cfg.get("in_channels", 16), size, size), "timestep": f32(b),
            "encoder_hidden_states": f32(b, tokens, cfg.get("cap_feat_dim", 1024)),
            "encoder_attention_mask": {"shape": [b, tokens], "dtype": "int64", "ones": True}}


INPUTS = {"SD3Transformer2DModel": sd3_inputs, "FluxTransformer2DModel": flux_inputs,
          "Lumina2Transformer2DModel": lumina_inputs}
# diffusers' Lumina2 forward reads the mask with .tolist(): its shapes come from a cpu run
FORWARD_DEVICE = {"Lumina2Transformer2DModel": "cpu"}


def sd3_config(rng):
    heads, head_dim, layers = rng.choice([1, 2, 3]), rng.choice([4, 8]), rng.randint(1, 4)
    cfg = {"_class_name": "SD3Transformer2DModel", "sample_size": 32, "patch_size": rng.choice([1, 2]),
           "in_channels": rng.choice([4, 16]), "num_layers": layers, "attention_head_dim": head_dim,
           "num_attention_heads": heads, "joint_attention_dim": rng.choice([12, 20]),
           "caption_projection_dim": heads * head_dim, "pooled_projection_dim": rng.choice([6, 10]),
           "out_channels": rng.choice([4, 16, None]), "pos_embed_max_size": rng.choice([24, 32]),
           "dual_attention_layers": sorted(rng.sample(range(layers), rng.randint(0, layers))),
           "qk_norm": rng.choice([None, "rms_norm"])}
    if cfg["out_channels"] is None:
        del cfg["out_channels"]  # diffusers' default, 16
    return cfg


def flux_config(rng):
    head_dim = rng.choice([8, 12])
    return {"_class_name": "FluxTransformer2DModel", "patch_size": 1, "in_channels": rng.choice([8, 16]),
            "out_channels": rng.choice([None, 4]), "num_layers": rng.randint(0, 2),
            "num_single_layers": rng.randint(0, 2), "attention_head_dim": head_dim,
            "num_attention_heads": rng.choice([1, 2]), "joint_attention_dim": rng.choice([12, 20]),
            "pooled_projection_dim": rng.choice([6, 10]), "guidance_embeds": rng.choice([True, False]),
            "axes_dims_rope": [2, 2, head_dim - 4]}


def lumina_config(rng):
    heads = rng.choice([2, 4])
    head_dim = 8
    return {"_class_name": "Lumina2Transformer2DModel", "sample_size": 16, "patch_size": rng.choice([1, 2]),
            "in_channels": 4, "out_channels": rng.choice([None, 8]), "hidden_size": heads * head_dim,
            "num_layers": rng.randint(1, 2), "num_refiner_layers": rng.randint(0, 2), "num_attention_heads": heads,
            "num_kv_heads": rng.choice([1, heads // 2, heads]), "multiple_of": rng.choice([8, 32]),
            "ffn_dim_multiplier": rng.choice([None, 1.3]), "norm_eps": 1e-5, "scaling_factor": 1.0,
            "axes_dim_rope": [2, 2, 4], "axes_lens": [16, 20, 20], "cap_feat_dim": rng.choice([12, 24])}


def random_cases():
    out = []
    for name, make in (("sd3", sd3_config), ("flux", flux_config), ("lumina2", lumina_config)):
        for seed in range(4):
            out.append(pytest.param(make(random.Random(seed * 7919 + len(name))), id=f"{name}-{seed}"))
    # pos_embed_max_size null: a table of the sample size (the 16 x 16 latents), not in the state dict
    out.append(pytest.param(dict(sd3_config(random.Random(99)), pos_embed_max_size=None, sample_size=16),
                            id="sd3-no-max-size"))
    return out


# ------------------------------------------------------------- comparisons

def assert_same_model(got, want):
    assert "error" not in got, got.get("error")
    assert got["type"] == want["type"]
    for key in ("state_dict", "params", "buffers"):
        g, w = got[key], want[key]
        for a, b in zip(g, w):
            assert a == b, "%s: mtk %s vs diffusers %s" % (key, a, b)
        assert len(g) == len(w), "%s: mtk has %d, diffusers %d" % (key, len(g), len(w))
    assert got["num_params"] == want["num_params"]


def forward_args(cfg, inputs):
    return [{"shape": i["shape"], "dtype": i["dtype"]} for i in inputs.values()]


@pytest.mark.parametrize("cfg", random_cases())
def test_random_config_matches_diffusers(cfg, probe, oracle, tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    inputs = INPUTS[cfg["_class_name"]](cfg)
    (got,) = probe([(str(path), forward_args(cfg, inputs))])
    assert_same_model(got, oracle("describe", cfg))
    device = FORWARD_DEVICE.get(cfg["_class_name"], "meta")
    want = oracle("forward", [cfg, inputs, device])
    assert "error" not in want, want["error"]
    fwd = got["forwards"][0]
    assert "error" not in fwd, fwd["error"]
    assert fwd["outputs"][0] == [want["shape"], want["dtype"]]
    if device == "meta":  # on cpu torch's FlopCounterMode does not count its flash sdpa kernel
        assert fwd["flops"] == want["flops"]


# the published transformers: name -> the inputs of a small forward
BUILTINS = {
    "sd-3.5-medium-transformer": lambda cfg: sd3_inputs(cfg, b=1, size=32, tokens=16),
    "flux.1-dev-transformer": lambda cfg: flux_inputs(cfg, b=1, patches=64, tokens=16),
    "lumina-image-2.0-transformer": lambda cfg: lumina_inputs(cfg, b=1, size=32, tokens=16),
}


@pytest.mark.parametrize("name", sorted(BUILTINS))
def test_published_transformer_matches_diffusers(name, builtins, probe, oracle):
    cfg = builtins[name]
    inputs = BUILTINS[name](cfg)
    (got,) = probe([(name, forward_args(cfg, inputs))])
    assert_same_model(got, oracle("describe", cfg))
    fwd = got["forwards"][0]
    assert "error" not in fwd, fwd["error"]
    want = oracle("forward", [cfg, inputs, "meta"])
    if cfg["_class_name"] == "Lumina2Transformer2DModel":
        # diffusers cannot run it on meta (.tolist() of the mask); the prediction has the latents' shape
        assert "meta" in want["error"], want
        assert fwd["outputs"][0] == [inputs["hidden_states"]["shape"], "float32"]
        return
    assert fwd["outputs"][0] == [want["shape"], want["dtype"]]
    assert fwd["flops"] == want["flops"]


@pytest.mark.parametrize("name,count", [("flux.1-dev-transformer", 11_901_408_320)])
def test_published_parameter_count(name, count, probe):
    (got,) = probe([(name, None)])
    assert got["num_params"] == count


def test_lumina2_notes_that_the_mask_is_taken_as_all_ones(probe):
    (got,) = probe([("lumina-image-2.0-transformer", None)])
    assert any(".tolist()" in note for note in got["notes"]), got["notes"]


# ------------------------------------------------------------------ errors

def build_error(probe, tmp_path, cfg):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    (got,) = probe([(str(path), None)])
    assert "error" in got, "built: %s" % cfg
    return got["error"]


@pytest.mark.parametrize("make", [sd3_config, flux_config, lumina_config])
def test_an_unknown_option_is_an_error_naming_it(make, probe, tmp_path):
    cfg = dict(make(random.Random(1)), use_pos_embed=False)
    err = build_error(probe, tmp_path, cfg)
    assert "use_pos_embed" in err and cfg["_class_name"] in err, err


def test_an_unsupported_qk_norm_is_an_error_naming_it(probe, tmp_path):
    cfg = dict(sd3_config(random.Random(2)), qk_norm="layer_norm")
    err = build_error(probe, tmp_path, cfg)
    assert "qk_norm" in err and "layer_norm" in err, err


def test_lumina2_rope_axes_must_sum_to_the_head_dim(probe, tmp_path):
    cfg = dict(lumina_config(random.Random(3)), axes_dim_rope=[2, 2, 2])
    err = build_error(probe, tmp_path, cfg)
    assert "axes_dim_rope" in err, err


def test_lumina2_positions_past_axes_lens_are_an_error(probe, tmp_path):
    cfg = dict(lumina_config(random.Random(4)), patch_size=1, axes_lens=[4, 20, 20])
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    (got,) = probe([(str(path), forward_args(cfg, lumina_inputs(cfg, tokens=7)))])
    assert "axes_lens" in got["forwards"][0]["error"]


def test_flux_without_guidance_embeds_takes_six_inputs(probe, tmp_path):
    cfg = dict(flux_config(random.Random(5)), guidance_embeds=False)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    args = forward_args(cfg, flux_inputs(cfg)) + [f32(2)]
    (got,) = probe([(str(path), args)])
    assert "expects 6 inputs" in got["forwards"][0]["error"], got["forwards"][0]


@pytest.mark.parametrize("make,field,value", [
    (flux_config, "num_single_layers", 10 ** 9),
    (lumina_config, "ffn_dim_multiplier", 1e300),
    (lumina_config, "num_kv_heads", 3),
    (sd3_config, "out_channels", 2 ** 40),
])
def test_sizes_past_mtks_limits_are_refused_naming_the_field(make, field, value, probe, tmp_path):
    cfg = dict(make(random.Random(6)), **{field: value})
    err = build_error(probe, tmp_path, cfg)
    assert field in err, err
