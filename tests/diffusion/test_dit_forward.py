"""The cpu forward of diffusers' transformer denoiser (`mtk run`):
SD3Transformer2DModel, FluxTransformer2DModel and Lumina2Transformer2DModel
from small random configs, with random weights saved by diffusers' own
save_pretrained, run by mtk on the inputs their pipelines build (latents,
timestep, prompt embeddings, pooled projections, FLUX's guidance and
img / txt ids, Lumina's mask) and compared with diffusers' float32 output
within 1e-4.

diffusers' side (dit_forward_oracle.py) is cached in the build directory,
one folder per case keyed by the oracle's source, the config and the
library versions: importing torch and diffusers is the slow part."""
import hashlib
import json
import random
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))
from probe_build import build_dir  # noqa: E402
from test_dit import flux_config, lumina_config, sd3_config  # noqa: E402

TOLERANCE = 1e-4


def _key(cfg, seed):
    from importlib.metadata import version  # not importing torch: a cached run stays fast
    h = hashlib.sha256()
    h.update((HERE / "dit_forward_oracle.py").read_bytes())
    h.update(json.dumps([cfg, seed, version("torch"), version("diffusers")], sort_keys=True).encode())
    return h.hexdigest()[:24]


@pytest.fixture(scope="session")
def case_dir():
    """case_dir(cfg, seed) -> the folder with diffusers' checkpoint, inputs,
    expected output and argument order for that case."""
    root = build_dir() / "dit_forward_oracle"

    def get(cfg, seed):
        path = root / _key(cfg, seed)
        if not (path / "arguments.json").exists():
            import dit_forward_oracle
            tmp = path.with_suffix(".tmp")
            shutil.rmtree(tmp, ignore_errors=True)
            dit_forward_oracle.make(cfg, seed, tmp)
            shutil.rmtree(path, ignore_errors=True)
            tmp.replace(path)
        return path

    return get


def run(mtk, directory, *extra, inputs=None, check=True):
    args = ["run", str(directory), "--weights", str(directory / "diffusion_pytorch_model.safetensors"),
            "--input", str(inputs or directory / "inputs.safetensors"), *extra]
    return mtk(*args, check=check)


def cases():
    out = []
    for name, make in (("sd3", sd3_config), ("flux", flux_config), ("lumina2", lumina_config)):
        for seed in range(4):
            out.append(pytest.param(make(random.Random(seed * 104729 + len(name))), seed, id=f"{name}-{seed}"))
    return out


@pytest.mark.parametrize("cfg,seed", cases())
def test_cpu_forward_matches_diffusers(cfg, seed, case_dir, mtk, tmp_path):
    d = case_dir(cfg, seed)
    out = tmp_path / "sample.safetensors"
    report = json.loads(run(mtk, d, "--output", str(out), "--json").stdout)
    got, want = load_file(str(out))["sample"], load_file(str(d / "expected.safetensors"))["sample"]
    assert report["architecture"] == cfg["_class_name"]
    assert report["outputs"] == [{"name": "sample", "dtype": "float32", "shape": list(want.shape)}]
    assert got.dtype == want.dtype == np.float32
    err = float(np.abs(got - want).max())
    assert err <= TOLERANCE, "max |mtk - diffusers| = %g" % err


@pytest.mark.parametrize("make", [sd3_config, flux_config, lumina_config])
def test_list_inputs_follows_the_forward_signature(make, case_dir, mtk):
    cfg = dict(make(random.Random(11)), **({"guidance_embeds": True} if make is flux_config else {}))
    d = case_dir(cfg, 0)
    got = json.loads(mtk("run", str(d), "--list-inputs", "--json").stdout)
    assert got["arguments"] == json.loads((d / "arguments.json").read_text())
    assert got["required"] == len(got["arguments"]) and got["architecture"] == cfg["_class_name"]
    text = mtk("run", str(d), "--list-inputs").stdout.split()
    assert text == got["arguments"]


def test_inputs_come_as_npy_and_one_tensor_files(case_dir, mtk, tmp_path):
    """The NAME=VALUE forms of `mtk run` reach a DiT as they reach the UNet:
    the latents from a .npy, SD3's timestep from a float64 .npy (cast to
    float32 as the scheduler gives it), the rest from one-tensor files of
    another name: diffusers' output."""
    d = case_dir(sd3_config(random.Random(0)), 0)
    tensors = load_file(str(d / "inputs.safetensors"))
    np.save(tmp_path / "latents.npy", tensors["hidden_states"])
    np.save(tmp_path / "t.npy", tensors["timestep"].astype(np.float64))
    args = ["--input", f"hidden_states={tmp_path / 'latents.npy'}", "--input", f"timestep={tmp_path / 't.npy'}"]
    for name in ("encoder_hidden_states", "pooled_projections"):
        save_file({"x": tensors[name]}, str(tmp_path / f"{name}.safetensors"))
        args += ["--input", f"{name}={tmp_path / (name + '.safetensors')}"]
    out = tmp_path / "sample.safetensors"
    mtk("run", str(d), "--weights", str(d / "diffusion_pytorch_model.safetensors"), *args, "--output", str(out))
    got, want = load_file(str(out))["sample"], load_file(str(d / "expected.safetensors"))["sample"]
    assert float(np.abs(got - want).max()) <= TOLERANCE


def rewrite_inputs(d, tmp_path, change):
    tensors = load_file(str(d / "inputs.safetensors"))
    change(tensors)
    path = tmp_path / "inputs.safetensors"
    save_file(tensors, str(path))
    return path


def test_a_missing_argument_is_an_error_naming_it(case_dir, mtk, tmp_path):
    d = case_dir(sd3_config(random.Random(0)), 0)
    path = rewrite_inputs(d, tmp_path, lambda t: t.pop("pooled_projections"))
    r = run(mtk, d, inputs=path, check=False)
    assert r.returncode == 1 and "needs the argument 'pooled_projections'" in r.stderr, r.stderr


def test_an_unknown_argument_is_an_error_naming_it(case_dir, mtk, tmp_path):
    d = case_dir(flux_config(random.Random(0)), 0)
    path = rewrite_inputs(d, tmp_path, lambda t: t.update(noise_level=np.zeros(2, np.float32)))
    r = run(mtk, d, inputs=path, check=False)
    assert r.returncode == 1 and "'noise_level' is not an argument" in r.stderr and "img_ids" in r.stderr, r.stderr


def test_a_padded_caption_mask_is_refused_not_ignored(case_dir, mtk, tmp_path):
    d = case_dir(lumina_config(random.Random(0)), 0)

    def pad(t):
        t["encoder_attention_mask"][1, -1] = 0
    r = run(mtk, d, inputs=rewrite_inputs(d, tmp_path, pad), check=False)
    assert r.returncode == 1 and "encoder_attention_mask" in r.stderr and "row 1" in r.stderr, r.stderr


def test_a_language_model_is_no_component_and_the_error_lists_them(mtk, tmp_path):
    r = mtk("run", "gpt2", "--list-inputs", check=False)
    assert r.returncode == 1 and "not a diffusers component" in r.stderr, r.stderr
    for cls in ("UNet2DConditionModel", "AutoencoderKL", "SD3Transformer2DModel", "FluxTransformer2DModel",
                "Lumina2Transformer2DModel"):
        assert cls in r.stderr, r.stderr


def test_the_denoise_command_is_gone(mtk):
    r = mtk("denoise", "--help", check=False)
    assert r.returncode == 2, r.stdout
