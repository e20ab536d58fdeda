"""`mtk run` of diffusers components and their CLIP text encoders on the
cpu, on weights saved by diffusers' / transformers' save_pretrained, against
diffusers' forward on the same inputs: float32 outputs within 1e-4 (max
abs).  The components, inputs and expected outputs are made by
component_oracle.py once per (oracle source, case, library versions) and cached
in the build directory."""
import hashlib
import json
import shutil
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from probe_build import build_dir  # noqa: E402

TOLERANCE = 1e-4

# SD 1.5-like: three blocks (CrossAttnDownBlock2D x2, DownBlock2D; UpBlock2D,
# CrossAttnUpBlock2D x2), odd widths, head dim 7, two transformer layers in
# one block, latents that do not halve evenly (the upsamplers' sizes)
UNET_SD = {
    "_class_name": "UNet2DConditionModel", "block_out_channels": [12, 20, 28], "layers_per_block": [1, 2, 1],
    "down_block_types": ["CrossAttnDownBlock2D", "CrossAttnDownBlock2D", "DownBlock2D"],
    "up_block_types": ["UpBlock2D", "CrossAttnUpBlock2D", "CrossAttnUpBlock2D"],
    "attention_head_dim": [2, 4, 4], "cross_attention_dim": 19, "norm_num_groups": 4, "sample_size": 8,
    "in_channels": 3, "out_channels": 5, "transformer_layers_per_block": [1, 2, 1],
}
# SDXL-like: linear projections, text_time added conditions (pooled
# embeddings of 13 + 6 time ids x 8), a (B,) integer timestep
UNET_XL = {
    "_class_name": "UNet2DConditionModel", "block_out_channels": [16, 24], "layers_per_block": 2,
    "down_block_types": ["DownBlock2D", "CrossAttnDownBlock2D"],
    "up_block_types": ["CrossAttnUpBlock2D", "UpBlock2D"], "attention_head_dim": [2, 3],
    "cross_attention_dim": 20, "norm_num_groups": 8, "sample_size": 8, "use_linear_projection": True,
    "addition_embed_type": "text_time", "addition_time_embed_dim": 8, "projection_class_embeddings_input_dim": 61,
    "transformer_layers_per_block": [1, 2], "in_channels": 4, "out_channels": 4,
}
VAE_3 = {
    "_class_name": "AutoencoderKL", "block_out_channels": [8, 16, 24], "layers_per_block": 2,
    "down_block_types": ["DownEncoderBlock2D"] * 3, "up_block_types": ["UpDecoderBlock2D"] * 3,
    "norm_num_groups": 4, "latent_channels": 3, "sample_size": 16,
}
VAE_4 = {
    "_class_name": "AutoencoderKL", "block_out_channels": [8, 16, 16, 32], "layers_per_block": 1,
    "down_block_types": ["DownEncoderBlock2D"] * 4, "up_block_types": ["UpDecoderBlock2D"] * 4,
    "norm_num_groups": 8, "latent_channels": 4, "in_channels": 1, "out_channels": 2, "sample_size": 32,
}
CLIP = {
    "architectures": ["CLIPTextModel"], "hidden_size": 24, "intermediate_size": 40, "num_attention_heads": 3,
    "num_hidden_layers": 2, "max_position_embeddings": 16, "vocab_size": 100, "projection_dim": 12,
    "hidden_act": "quick_gelu", "eos_token_id": 7, "bos_token_id": 0, "pad_token_id": 1,
}
CLIP_PROJ = dict(CLIP, architectures=["CLIPTextModelWithProjection"], hidden_size=16, hidden_act="gelu",
                 intermediate_size=32, num_attention_heads=2, eos_token_id=2)

CASES = {
    "unet_sd": {"kind": "unet", "config": UNET_SD, "seed": 0,
                "inputs": {"sample": [2, 3, 10, 6], "timestep": 37.5, "encoder_hidden_states": [2, 5, 19]}},
    "unet_sd_t999": {"kind": "unet", "config": UNET_SD, "seed": 0,
                     "inputs": {"sample": [1, 3, 8, 8], "timestep": 999, "encoder_hidden_states": [1, 4, 19]}},
    "unet_sdxl": {"kind": "unet", "config": UNET_XL, "seed": 1,
                  "inputs": {"sample": [2, 4, 8, 8], "timestep": [2], "encoder_hidden_states": [2, 7, 20],
                             "text_embeds": [2, 13], "time_ids": [2, 6]}},
    "vae3_encode": {"kind": "vae", "config": VAE_3, "seed": 2, "method": "encode", "inputs": {"x": [2, 3, 20, 12]}},
    "vae3_decode": {"kind": "vae", "config": VAE_3, "seed": 2, "method": "decode", "inputs": {"z": [1, 3, 5, 3]}},
    "vae4_forward": {"kind": "vae", "config": VAE_4, "seed": 3, "method": "forward",
                     "inputs": {"sample": [1, 1, 16, 24]}},
    "clip": {"kind": "clip", "config": CLIP, "seed": 4, "inputs": {"input_ids": [2, 9]}},
    "clip_projection": {"kind": "clip", "config": CLIP_PROJ, "seed": 5, "inputs": {"input_ids": [3, 6]}},
}


def case_dir(name):
    """The case's directory (model/, inputs, expected), made once."""
    import diffusers
    import torch
    import transformers
    case = CASES[name]
    h = hashlib.sha256((HERE / "component_oracle.py").read_bytes())
    h.update(json.dumps([case, torch.__version__, diffusers.__version__, transformers.__version__],
                        sort_keys=True).encode())
    root = build_dir() / "diffusers_run_oracle"
    final = root / f"{name}-{h.hexdigest()[:16]}"
    if not (final / "expected.safetensors").exists():
        import component_oracle
        tmp = root / f".{final.name}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        component_oracle.make(case, str(tmp))
        shutil.rmtree(final, ignore_errors=True)
        tmp.rename(final)
    return final


def max_error(mine, theirs):
    assert set(mine) == set(theirs), (sorted(mine), sorted(theirs))
    errors = {}
    for k in theirs:
        assert mine[k].shape == theirs[k].shape, k
        assert mine[k].dtype == theirs[k].dtype, k
        errors[k] = (mine[k].double() - theirs[k].double()).abs().max().item()
    return errors


@pytest.mark.parametrize("name", sorted(CASES))
def test_component_matches_diffusers_on_saved_weights(name, tmp_path, mtk):
    from safetensors.torch import load_file
    d = case_dir(name)
    case = CASES[name]
    out = tmp_path / "out.safetensors"
    if case["kind"] == "clip":
        ids = load_file(str(d / "inputs.safetensors"))["input_ids"]
        text = ";".join(",".join(str(int(v)) for v in row) for row in ids)
        mtk("run", str(d / "model"), "--weights", str(d / "model"), "--input-ids", text, "--output", str(out))
    else:
        mtk("run", str(d / "model"), "--weights", str(d / "model"), "--method", case.get("method", "forward"),
            "--input", str(d / "inputs.safetensors"), "--output", str(out))
    errors = max_error(load_file(str(out)), load_file(str(d / "expected.safetensors")))
    assert all(e <= TOLERANCE for e in errors.values()), errors


def test_inputs_come_by_name_from_npy_files_and_numbers(tmp_path, mtk):
    """sample from a .npy, timestep as a number (999 as the schedulers give
    it), the prompt from a one-tensor .safetensors: diffusers' output."""
    import numpy as np
    from safetensors.torch import load_file, save_file
    d = case_dir("unet_sd_t999")
    args = load_file(str(d / "inputs.safetensors"))
    np.save(tmp_path / "sample.npy", args["sample"].numpy())
    save_file({"prompt": args["encoder_hidden_states"]}, str(tmp_path / "prompt.safetensors"))
    out = tmp_path / "out.safetensors"
    mtk("run", str(d / "model"), "--weights", str(d / "model"), "--input", f"sample={tmp_path / 'sample.npy'}",
        "--input", "timestep=999", "--input", f"encoder_hidden_states={tmp_path / 'prompt.safetensors'}",
        "--output", str(out))
    errors = max_error(load_file(str(out)), load_file(str(d / "expected.safetensors")))
    assert errors["sample"] <= TOLERANCE


def test_random_inputs_are_seeded(tmp_path, mtk):
    d = case_dir("vae3_decode")
    outs = []
    for seed in ("0", "0", "1"):
        r = mtk("run", str(d / "model"), "--weights", str(d / "model"), "--method", "decode", "--input",
                "z=randn:1x3x4x4", "--seed", seed, "--json")
        doc = json.loads(r.stdout)
        assert doc["inputs"] == [{"name": "z", "dtype": "float32", "shape": [1, 3, 4, 4]}]
        assert doc["outputs"][0]["name"] == "sample" and doc["outputs"][0]["shape"] == [1, 3, 16, 16]
        out = tmp_path / f"{len(outs)}.safetensors"
        mtk("run", str(d / "model"), "--weights", str(d / "model"), "--method", "decode", "--input",
            "z=randn:1x3x4x4", "--seed", seed, "--output", str(out))
        outs.append(out.read_bytes())
    assert outs[0] == outs[1] and outs[0] != outs[2]


def test_missing_and_unknown_arguments_are_named(mtk):
    d = case_dir("unet_sdxl")
    model = str(d / "model")
    r = mtk("run", model, "--weights", model, "--input", "sample=randn:1x4x8x8", "--input", "timestep=1",
            "--input", "encoder_hidden_states=randn:1x7x20", check=False)
    assert r.returncode == 1 and "needs the argument 'text_embeds'" in r.stderr and "added conditions" in r.stderr
    r = mtk("run", model, "--weights", model, "--input", "latents=randn:1x4x8x8", check=False)
    assert r.returncode == 1 and "expected NAME=VALUE with NAME one of sample, timestep" in r.stderr
    r = mtk("run", model, "--weights", model, "--method", "decode", "--input", "z=randn:1x4x8x8", check=False)
    assert r.returncode == 1 and "has no method 'decode' (it has forward)" in r.stderr
    r = mtk("run", model, "--weights", model, "--input", "sample=randn:1x0x8", check=False)
    assert r.returncode == 1 and "randn:1x0x8" in r.stderr
    r = mtk("run", model, "--weights", model, "--input", "sample=randn:1x4x8x8", "--input-ids", "1,2", check=False)
    assert r.returncode == 2
    r = mtk("run", model, "--weights", model, "--input-ids", "1,2", check=False)
    assert r.returncode == 1 and "is a diffusers component: it takes sample, ..., not token ids" in r.stderr


def test_a_language_model_refuses_component_inputs(mtk, tmp_path):
    d = case_dir("clip")
    model = str(d / "model")
    r = mtk("run", model, "--weights", model, "--input", "sample=randn:1x4", check=False)
    assert r.returncode == 1 and "not a diffusers component" in r.stderr


def test_help_shows_the_component_form(mtk):
    out = mtk("run", "--help").stdout
    assert "mtk run COMPONENT --weights PATH --input NAME=VALUE" in out
    assert "randn:SHAPE" in out and "--method M" in out and "latent_dist.mean" in out


def test_npy_inputs_of_any_rank_and_bad_headers(tmp_path, mtk):
    import numpy as np
    d = case_dir("vae3_decode")
    model = str(d / "model")
    np.save(tmp_path / "z.npy", np.zeros((1, 3, 2, 2), np.float64))
    r = mtk("run", model, "--weights", model, "--method", "decode", "--input", f"z={tmp_path / 'z.npy'}", "--json")
    doc = json.loads(r.stdout)  # the input as given, run in the model's dtype
    assert doc["inputs"][0] == {"name": "z", "dtype": "float64", "shape": [1, 3, 2, 2]}
    assert doc["outputs"][0]["dtype"] == "float32"
    raw = (tmp_path / "z.npy").read_bytes().replace(b"(1, 3, 2, 2)", b"(1, -3, 2, 2)")
    (tmp_path / "bad.npy").write_bytes(raw)
    r = mtk("run", model, "--weights", model, "--method", "decode", "--input", f"z={tmp_path / 'bad.npy'}", check=False)
    assert r.returncode == 1 and "shape is not a tuple of sizes" in r.stderr
