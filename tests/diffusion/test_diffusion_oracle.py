"""diffusers components and pipelines on meta against diffusers (and
transformers for the CLIP text encoders) on the same configs: state-dict
keys, shapes, dtypes and parameter counts identical; each call the
pipeline makes, at an image size, gives the same output shapes and the
same FLOPs (FlopCounterMode) as diffusers' forward on meta."""
import json
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CONFIGS_C = REPO / "src" / "models" / "pipeline_configs_sd.c"


def embedded(name):
    """The config text compiled into mtk as `pipeline_<name>` (a C string)."""
    source = CONFIGS_C.read_text()
    m = re.search(r"const char pipeline_%s\[\] =\n(.*?);\n" % re.escape(name), source, re.S)
    assert m, name
    parts = re.findall(r'"((?:[^"\\]|\\.)*)"', m.group(1))
    return json.loads("".join(parts).encode().decode("unicode_escape"))


BUILTINS = {
    "sd-1.5": ("sd15", ["text_encoder", "unet", "vae"]),
    "sdxl-base": ("sdxl", ["text_encoder", "text_encoder_2", "unet", "vae"]),
}


def write_pipeline(root, index, components):
    root.mkdir(parents=True, exist_ok=True)
    (root / "model_index.json").write_text(json.dumps(index))
    for name, cfg in components.items():
        (root / name).mkdir(exist_ok=True)
        (root / name / "config.json").write_text(json.dumps(cfg))
    return root


def check_pipeline(mtk, zoo_probe, diffusers_side, pipeline, configs, image, extra=()):
    """mtk's summary of `pipeline` against diffusers on `configs` {name: cfg}."""
    summary = json.loads(mtk("summary", str(pipeline), "--image", image, "--json", *extra).stdout)
    by_name = {c["name"]: c for c in summary["components"]}
    assert sorted(by_name) == sorted(configs)
    probe_dir = Path(str(pipeline)) if Path(str(pipeline)).is_dir() else None
    for name, cfg in configs.items():
        comp = by_name[name]
        calls = [{"method": c["method"], "inputs": c["inputs"]} for c in comp["calls"]]
        theirs = diffusers_side(cfg, calls)
        assert comp["params"] == theirs["num_params"], name
        for call, their in zip(comp["calls"], theirs["calls"]):
            mine = [[o["shape"], o["dtype"]] for o in call["outputs"]]
            assert mine == their["outputs"], (name, call["method"])
            assert call["flops"] == their["flops"], (name, call["method"])
        if probe_dir:
            (ours,) = zoo_probe([probe_dir / name / "config.json"])
            assert "error" not in ours, ours
            assert ours["state_dict"] == theirs["state_dict"], name
    return summary


@pytest.mark.parametrize("name", sorted(BUILTINS))
def test_builtin_pipeline_matches_diffusers_key_for_key(name, tmp_path, mtk, zoo_probe, diffusers_side):
    prefix, components = BUILTINS[name]
    configs = {c: embedded(f"{prefix}_{c}") for c in components}
    directory = write_pipeline(tmp_path / name, embedded(f"{prefix}_model_index"), configs)
    check_pipeline(mtk, zoo_probe, diffusers_side, directory, configs, "512x512", ("--guidance",))
    # the built-in is the same pipeline as the directory of its configs
    builtin = json.loads(mtk("summary", name, "--image", "512x512", "--guidance", "--json").stdout)
    local = json.loads(mtk("summary", str(directory), "--image", "512x512", "--guidance", "--json").stdout)
    for key in ("pipeline", "source", "hf_id"):
        builtin.pop(key, None), local.pop(key, None)
    assert builtin == local


def test_sd15_components_have_the_published_counts(mtk):
    summary = json.loads(mtk("summary", "sd-1.5", "--json").stdout)
    counts = {c["name"]: c["params"] for c in summary["components"]}
    assert counts == {"text_encoder": 123_060_480, "unet": 859_520_964, "vae": 83_653_863}
    assert summary["height"] == summary["width"] == 512  # sample_size 64 x the VAE's 8


def test_guidance_doubles_the_unet_batch_and_steps_multiply_its_flops(mtk):
    plain = json.loads(mtk("summary", "sd-1.5", "--image", "512x768", "--steps", "20", "--json").stdout)
    cfg = json.loads(mtk("summary", "sd-1.5", "--image", "512x768", "--steps", "20", "--guidance", "--json").stdout)
    unet = {s["guidance"]: next(c for c in s["components"] if c["name"] == "unet") for s in (plain, cfg)}
    assert unet[False]["calls"][0]["inputs"]["sample"]["shape"] == [1, 4, 64, 96]
    assert unet[True]["calls"][0]["inputs"]["sample"]["shape"] == [2, 4, 64, 96]
    assert unet[True]["flops_per_image"] == 20 * unet[True]["calls"][0]["flops"]
    # the negative prompt is encoded too; SDXL's force_zeros_for_empty_prompt spares it
    text = next(c for c in cfg["components"] if c["name"] == "text_encoder")
    assert text["calls"][0]["per_image"] == 2
    xl = json.loads(mtk("summary", "sdxl-base", "--guidance", "--json").stdout)
    assert all(c["calls"][0]["per_image"] == 1 for c in xl["components"] if c["role"] == "text_encoder")
    assert any("force_zeros_for_empty_prompt" in n for n in xl["notes"])
    unet_xl = next(c for c in xl["components"] if c["name"] == "unet")
    assert unet_xl["calls"][0]["inputs"]["text_embeds"]["shape"] == [2, 1280]
    assert unet_xl["calls"][0]["inputs"]["time_ids"]["shape"] == [2, 6]


# small random-shaped components: conv projections, a list of transformer
# layers, SDXL's added conditions, latents that do not halve evenly
TINY_UNET = {
    "_class_name": "UNet2DConditionModel", "block_out_channels": [32, 64, 64], "layers_per_block": [1, 2, 1],
    "down_block_types": ["CrossAttnDownBlock2D", "CrossAttnDownBlock2D", "DownBlock2D"],
    "up_block_types": ["UpBlock2D", "CrossAttnUpBlock2D", "CrossAttnUpBlock2D"],
    "attention_head_dim": [2, 4, 4], "cross_attention_dim": 24, "norm_num_groups": 8, "sample_size": 8,
    "in_channels": 4, "out_channels": 4, "transformer_layers_per_block": [1, 2, 1],
}
TINY_XL_UNET = {
    "_class_name": "UNet2DConditionModel", "block_out_channels": [32, 64], "layers_per_block": 1,
    "down_block_types": ["DownBlock2D", "CrossAttnDownBlock2D"],
    "up_block_types": ["CrossAttnUpBlock2D", "UpBlock2D"], "attention_head_dim": [2, 4],
    "cross_attention_dim": 40, "norm_num_groups": 8, "sample_size": 8, "use_linear_projection": True,
    "addition_embed_type": "text_time", "addition_time_embed_dim": 8, "projection_class_embeddings_input_dim": 64,
    "transformer_layers_per_block": [1, 2], "in_channels": 4, "out_channels": 4,
}
TINY_VAE = {
    "_class_name": "AutoencoderKL", "block_out_channels": [16, 32, 32], "layers_per_block": 1,
    "down_block_types": ["DownEncoderBlock2D"] * 3, "up_block_types": ["UpDecoderBlock2D"] * 3,
    "norm_num_groups": 8, "latent_channels": 4, "sample_size": 32,
}
TINY_CLIP = {
    "architectures": ["CLIPTextModel"], "model_type": "clip_text_model", "hidden_size": 24,
    "intermediate_size": 40, "num_attention_heads": 3, "num_hidden_layers": 2, "max_position_embeddings": 16,
    "vocab_size": 100, "projection_dim": 12, "hidden_act": "quick_gelu", "eos_token_id": 7, "torch_dtype": "float32",
}
TINY_CLIP_PROJ = dict(TINY_CLIP, architectures=["CLIPTextModelWithProjection"], hidden_size=16, hidden_act="gelu",
                      intermediate_size=32, num_attention_heads=2, eos_token_id=2)


@pytest.mark.parametrize("image", ["64x64", "72x40"])
def test_tiny_sd_pipeline_matches_diffusers(image, tmp_path, mtk, zoo_probe, diffusers_side):
    configs = {"text_encoder": dict(TINY_CLIP, max_position_embeddings=8), "unet": dict(TINY_UNET, cross_attention_dim=24),
               "vae": TINY_VAE}
    index = {"_class_name": "TinyPipeline", "text_encoder": ["transformers", "CLIPTextModel"],
             "tokenizer": ["transformers", "CLIPTokenizer"], "scheduler": ["diffusers", "PNDMScheduler"],
             "unet": ["diffusers", "UNet2DConditionModel"], "vae": ["diffusers", "AutoencoderKL"]}
    directory = write_pipeline(tmp_path / "tiny", index, configs)
    summary = check_pipeline(mtk, zoo_probe, diffusers_side, directory, configs, image, ("--guidance", "--batch", "2"))
    assert summary["vae_scale_factor"] == 4


def test_tiny_sdxl_pipeline_matches_diffusers(tmp_path, mtk, zoo_probe, diffusers_side):
    configs = {"text_encoder": TINY_CLIP, "text_encoder_2": TINY_CLIP_PROJ, "unet": TINY_XL_UNET, "vae": TINY_VAE}
    index = {"_class_name": "StableDiffusionXLPipeline", "force_zeros_for_empty_prompt": False,
             "text_encoder": ["transformers", "CLIPTextModel"],
             "text_encoder_2": ["transformers", "CLIPTextModelWithProjection"],
             "unet": ["diffusers", "UNet2DConditionModel"], "vae": ["diffusers", "AutoencoderKL"]}
    directory = write_pipeline(tmp_path / "tinyxl", index, configs)
    # StableDiffusionXLPipeline's row pads prompts to 77 tokens: more than
    # the tiny encoders' 16 positions, so the error names the limit
    result = mtk("summary", str(directory), "--image", "32x32", check=False)
    assert result.returncode == 1 and "16 positions" in result.stderr, result.stderr
    index["_class_name"] = "TinyXLPipeline"
    directory = write_pipeline(tmp_path / "tinyxl2", index, configs)
    check_pipeline(mtk, zoo_probe, diffusers_side, directory, configs, "32x32", ("--guidance",))


def test_one_component_is_called_at_an_image_size(tmp_path, mtk, diffusers_side):
    path = tmp_path / "unet" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(TINY_XL_UNET))
    summary = json.loads(mtk("summary", str(path.parent), "--image", "48x32", "--guidance", "--json").stdout)
    (unet,) = summary["components"]
    call = unet["calls"][0]
    assert call["inputs"]["sample"]["shape"] == [2, 4, 6, 4]  # the factor 8 of a pipeline without a VAE
    assert call["inputs"]["encoder_hidden_states"]["shape"] == [2, 77, 40]
    theirs = diffusers_side(TINY_XL_UNET, [{"method": call["method"], "inputs": call["inputs"]}])
    assert [[o["shape"], o["dtype"]] for o in call["outputs"]] == theirs["calls"][0]["outputs"]
    assert call["flops"] == theirs["calls"][0]["flops"]


def test_a_missing_component_folder_is_named(tmp_path, mtk):
    index = {"_class_name": "X", "unet": ["diffusers", "UNet2DConditionModel"], "vae": ["diffusers", "AutoencoderKL"]}
    directory = write_pipeline(tmp_path / "p", index, {"unet": TINY_UNET})
    result = mtk("summary", str(directory), check=False)
    assert result.returncode == 1
    assert "component 'vae' (AutoencoderKL)" in result.stderr and str(directory / "vae") in result.stderr


def test_an_unknown_class_name_lists_the_supported_ones(tmp_path, mtk):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"_class_name": "UNet3DConditionModel"}))
    result = mtk("summary", str(path), check=False)
    assert result.returncode == 1
    assert "unknown _class_name 'UNet3DConditionModel'" in result.stderr
    assert "UNet2DConditionModel" in result.stderr and "AutoencoderKL" in result.stderr


def test_an_unknown_pipeline_lists_the_built_in_ones(mtk):
    result = mtk("summary", "sd-9", "--image", "512x512", check=False)
    assert result.returncode == 1 and "sd-1.5, sdxl-base" in result.stderr


def test_an_empty_unet_config_builds_diffusers_defaults(tmp_path, mtk, zoo_probe, diffusers_side):
    path = tmp_path / "config.json"
    cfg = {"_class_name": "UNet2DConditionModel"}
    path.write_text(json.dumps(cfg))
    (ours,) = zoo_probe([path])
    theirs = diffusers_side(cfg, [])
    assert ours["num_params"] == theirs["num_params"] == 872_300_484
    assert ours["state_dict"] == theirs["state_dict"]


@pytest.mark.parametrize("cfg,message", [
    ({"_class_name": "UNet2DConditionModel", "transformer_layers_per_block": 99999},
     "2399976 transformer blocks in all, more than mtk's limit"),
    ({"_class_name": "UNet2DConditionModel", "block_out_channels": [320, 99999999]},
     "99999999 is over mtk's limit"),
    ({"_class_name": "UNet2DConditionModel", "layers_per_block": 9}, "at most 3 layers per block"),
    ({"_class_name": "UNet2DConditionModel", "class_embed_type": "timestep"}, "class_embed_type': not modelled"),
    ({"_class_name": "AutoencoderKL", "layers_per_block": 99999}, "more than mtk models"),
])
def test_hostile_or_unmodelled_configs_are_refused_naming_the_field(cfg, message, tmp_path, mtk):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    result = mtk("summary", str(path), check=False)
    assert result.returncode == 1 and message in result.stderr, result.stderr


def test_flops_per_image_past_int64_are_an_error_not_a_wrap(mtk):
    result = mtk("summary", "sd-1.5", "--image", "8192x8192", "--batch", "1000", "--steps", "100000", "--guidance",
                 check=False)
    assert result.returncode == 1 and "FLOPs per image pass 2^63" in result.stderr, result.stderr
    result = mtk("summary", "sd-1.5", "--image", "500x512", check=False)
    assert result.returncode == 1 and "not a multiple of 8 pixels" in result.stderr, result.stderr


@pytest.mark.parametrize("cfg", [
    {"_class_name": "UNet2DConditionModel", "block_out_channels": [32], "down_block_types": ["CrossAttnDownBlock2D"],
     "up_block_types": ["CrossAttnUpBlock2D"], "mid_block_type": None, "layers_per_block": 3,
     "attention_head_dim": 4, "cross_attention_dim": 8, "norm_num_groups": 8, "time_embedding_dim": 48},
    {"_class_name": "AutoencoderKL", "block_out_channels": [8], "norm_num_groups": 4, "latent_channels": 2,
     "use_quant_conv": False, "layers_per_block": 2},
], ids=["unet-one-block-no-mid", "vae-one-block-no-quant"])
def test_edge_shaped_components_match_diffusers(cfg, tmp_path, mtk, zoo_probe, diffusers_side):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    summary = json.loads(mtk("summary", str(path), "--image", "24x16", "--json").stdout)
    (comp,) = summary["components"]
    calls = [{"method": c["method"], "inputs": c["inputs"]} for c in comp["calls"]]
    theirs = diffusers_side(cfg, calls)
    (ours,) = zoo_probe([path])
    assert ours["state_dict"] == theirs["state_dict"]
    assert comp["params"] == theirs["num_params"]
    for call, their in zip(comp["calls"], theirs["calls"]):
        assert [[o["shape"], o["dtype"]] for o in call["outputs"]] == their["outputs"]
        assert call["flops"] == their["flops"]
