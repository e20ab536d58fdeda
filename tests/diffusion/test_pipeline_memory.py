"""mtk memory PIPELINE --image HxW: memory per stage and offload plans.

Each stage's activation peak is the inference plan of its component alone
at the same inputs; the weights are the summary's; sequential offload's GPU
peak is at most model offload's, which is at most no offload's; the bytes
moved per image are what each mode moves (model: accelerate's hook chain,
each component once per image unless encode_prompt returns to one;
sequential: each called module's own parameters per call); a decoder text
encoder's KV cache is transformers' DynamicCache as its forward builds it;
and one small component's forward peak is torch's, measured with the
profiler on the cpu (cached, keyed by the oracle's source)."""
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from probe_build import build_dir

HERE = Path(__file__).resolve().parent
PIPELINES = HERE / "pipelines"
BUILTINS = ["sd-1.5", "sdxl-base", "sd-3.5-medium", "flux.1-dev", "lumina-image-2.0"]
CACHE_FILE = "pipeline_memory_oracle_cache.json"


def memory(mtk, *args):
    return json.loads(mtk("memory", *args, "--json").stdout)


def summary(mtk, *args):
    return json.loads(mtk("summary", *args, "--json").stdout)


def _inputs(component):
    return [call["inputs"] for call in component["calls"] if call["per_image"] > 0]


@pytest.mark.parametrize("pipeline", sorted(p.name for p in PIPELINES.iterdir() if (p / "model_index.json").exists()))
def test_each_stage_peak_is_its_component_planned_alone(mtk, pipeline):
    """A stage's activation peak is `mtk memory COMPONENT` at the same inputs
    (the components whose lone call gets the pipeline's inputs)."""
    args = ["--image", "256x256", "--steps", "2", "--device-kind", "cpu"]
    whole = memory(mtk, str(PIPELINES / pipeline), *args)
    calls = {c["name"]: _inputs(c) for c in summary(mtk, str(PIPELINES / pipeline), "--image", "256x256")["components"]}
    compared = set()
    for stage in whole["stages"]:
        folder = PIPELINES / pipeline / stage["component"]
        alone_calls = _inputs(summary(mtk, str(folder), "--image", "256x256")["components"][0])
        if alone_calls != calls[stage["component"]]:
            continue  # called with other token lengths or batch alone
        alone = memory(mtk, str(folder), *args)
        assert len(alone["stages"]) == 1
        assert stage["activation_peak_bytes"] == alone["stages"][0]["activation_peak_bytes"], stage
        assert stage["activation_peak_bytes"] > 0
        compared.add(stage["stage"])
    # Lumina's Gemma-2 alone reads max_position_embeddings (8192) tokens, not the pipeline's 256
    assert ({"denoise_step", "vae_decode"} if pipeline == "lumina-image-2.0" else {"encode_prompt", "vae_decode"}) <= compared


def test_each_stage_carries_its_plans_timeline(mtk):
    """Per node, the activation bytes live after it: the peak's node is in
    it, and no point is above the stage's peak (which adds the peak op's
    workspace)."""
    whole = memory(mtk, "sd-1.5", "--image", "256x256", "--device-kind", "cpu")
    for stage in whole["stages"]:
        timeline = stage["timeline"]
        assert len(timeline) > 10
        assert max(p["activation_bytes"] for p in timeline) <= stage["activation_peak_bytes"]
        assert {"op": stage["peak_at"]["op"], "module": stage["peak_at"]["module"]} in [
            {"op": p["op"], "module": p["module"]} for p in timeline]


@pytest.mark.parametrize("pipeline", BUILTINS)
def test_weights_are_the_summary_parameters_and_buffers(mtk, pipeline):
    whole = memory(mtk, pipeline, "--image", "512x512", "--steps", "3", "--offload", "model")
    comps = {c["name"]: c for c in summary(mtk, pipeline, "--image", "512x512")["components"]}
    total = sum(c["param_bytes"] + c["buffer_bytes"] for c in comps.values())
    assert whole["weights_bytes"] == total
    for stage in whole["stages"]:  # no guidance: one component on the GPU at a time
        c = comps[stage["component"]]
        assert stage["weights_bytes"] == c["param_bytes"] + c["buffer_bytes"]
        assert stage["resident"] == stage["component"]
        assert stage["peak_bytes"] == stage["weights_bytes"] + stage["activation_peak_bytes"] + stage["cache_bytes"]
    none = memory(mtk, pipeline, "--image", "512x512", "--steps", "3")
    assert all(s["weights_bytes"] == total for s in none["stages"])


@pytest.mark.parametrize("pipeline", BUILTINS)
@pytest.mark.parametrize("guidance", [False, True])
def test_offload_modes_order_their_gpu_peaks(mtk, pipeline, guidance):
    args = ["--image", "1024x1024", "--steps", "4"] + (["--guidance"] if guidance else [])
    modes = {m["mode"]: m for m in memory(mtk, pipeline, *args)["offload_modes"]}
    assert modes["sequential"]["gpu_peak_bytes"] <= modes["model"]["gpu_peak_bytes"] <= modes["none"]["gpu_peak_bytes"]
    assert modes["sequential"]["gpu_peak_bytes"] < modes["none"]["gpu_peak_bytes"]


@pytest.mark.parametrize("pipeline", BUILTINS)
def test_bytes_moved_per_image_are_what_each_mode_moves(mtk, pipeline):
    steps = 5
    whole = memory(mtk, pipeline, "--image", "512x512", "--steps", str(steps), "--guidance")
    comps = {c["name"]: c for c in summary(mtk, pipeline, "--image", "512x512", "--steps", str(steps),
                                           "--guidance")["components"]}
    modes = {m["mode"]: m for m in whole["offload_modes"]}
    assert modes["none"]["bytes_moved_per_image"] == 0
    called = {s["component"] for s in whole["stages"]}
    weights = {n: c["param_bytes"] + c["buffer_bytes"] for n, c in comps.items()}
    # encode_prompt runs the text encoders in turn for the prompt, then again
    # for the negative one; the first encoder's hook has no previous
    # component to move out, so the last encoder stays on the GPU through
    # the second pass: the others are moved twice.  One text encoder, or
    # SDXL's zeroed negative prompt: each component once.
    twice = {"sd-3.5-medium": ["text_encoder", "text_encoder_2"], "flux.1-dev": ["text_encoder"]}.get(pipeline, [])
    expected = sum(weights[n] for n in called) + sum(weights[n] for n in twice)
    assert modes["model"]["bytes_moved_per_image"] == expected
    assert modes["model"]["bytes_to_host_per_image"] == expected
    single = memory(mtk, pipeline, "--image", "512x512", "--steps", str(steps))
    assert {m["mode"]: m for m in single["offload_modes"]}["model"]["bytes_moved_per_image"] == sum(
        weights[s["component"]] for s in single["stages"])
    assert modes["sequential"]["bytes_moved_per_image"] == sum(
        s["sequential_moved_per_call"] * s["calls_per_image"] for s in whole["stages"])
    for s in whole["stages"]:
        if s["stage"] in ("encode_prompt", "denoise_step"):  # every module runs once per call
            assert s["sequential_moved_per_call"] == comps[s["component"]]["param_bytes"], s
        if s["stage"] == "denoise_step":
            assert s["calls_per_image"] % steps == 0


def test_max_memory_says_which_modes_fit(mtk):
    modes = {m["mode"]: m for m in memory(mtk, "sd-1.5", "--image", "512x512", "--guidance",
                                          "--max-memory", "0=4500MiB,cpu=32GiB")["offload_modes"]}
    assert not modes["none"]["fits"] and modes["model"]["fits"] and modes["sequential"]["fits"]
    for m in modes.values():
        assert m["fits"] == (m["gpu_peak_bytes"] <= 4500 << 20)
    small_host = memory(mtk, "sd-1.5", "--image", "512x512", "--max-memory", "0=80GiB,cpu=1GiB")["offload_modes"]
    assert [m["fits"] for m in small_host] == [True, False, False]


def test_bad_offload_and_max_memory_are_usage_errors(mtk):
    r = mtk("memory", "sd-1.5", "--image", "512x512", "--offload", "disk", check=False)
    assert r.returncode == 2 and "--offload" in r.stderr
    r = mtk("memory", "sd-1.5", "--image", "512x512", "--max-memory", "gpu=8GiB", check=False)
    assert r.returncode == 2 and "--max-memory" in r.stderr


# ------------------------------------------------------------ ground truth

def _cached(kind, payload, compute):
    path = build_dir() / CACHE_FILE
    cache = json.loads(path.read_text()) if path.exists() else {}
    import torch
    import transformers
    h = hashlib.sha256(Path(__file__).read_bytes())
    h.update(json.dumps([kind, payload, torch.__version__, transformers.__version__], sort_keys=True).encode())
    key = h.hexdigest()
    if key not in cache:
        cache[key] = compute()
        path.write_text(json.dumps(cache, sort_keys=True))
    return cache[key]


GEMMA2 = {"architectures": ["Gemma2Model"], "model_type": "gemma2", "hidden_size": 64, "intermediate_size": 96,
          "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
          "vocab_size": 128, "max_position_embeddings": 24, "sliding_window": 8, "torch_dtype": "float32",
          "layer_types": ["sliding_attention", "full_attention", "sliding_attention", "full_attention"]}


def _gemma2_cache_bytes(cfg):
    import torch
    from transformers import Gemma2Config, Gemma2Model
    torch.manual_seed(0)
    model = Gemma2Model(Gemma2Config(**{k: v for k, v in cfg.items() if k not in ("architectures", "torch_dtype")}))
    ids = torch.zeros(1, cfg["max_position_embeddings"], dtype=torch.long)
    with torch.no_grad():  # as Lumina2Pipeline calls its text encoder
        out = model(ids, attention_mask=torch.ones_like(ids), output_hidden_states=True)
    storages = {}
    for layer in out.past_key_values.layers:
        for t in (layer.keys, layer.values):
            storages[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
    return sum(storages.values())


def test_text_encoder_cache_is_the_dynamic_cache_transformers_builds(mtk, tmp_path):
    """Lumina 2's Gemma-2: full and sliding-window layers; sized from the
    config (never from data), it holds what transformers' forward keeps."""
    (tmp_path / "config.json").write_text(json.dumps(GEMMA2))
    mine = summary(mtk, str(tmp_path), "--image", "64x64")["components"][0]["cache_bytes"]
    assert mine == _cached("gemma2_cache", GEMMA2, lambda: _gemma2_cache_bytes(GEMMA2))
    whole = memory(mtk, str(tmp_path), "--image", "64x64")
    assert whole["stages"][0]["cache_bytes"] == mine > 0


def test_encoders_without_a_cache_have_none(mtk):
    whole = memory(mtk, "sd-3.5-medium", "--image", "512x512")
    assert all(s["cache_bytes"] == 0 for s in whole["stages"])
    lumina = memory(mtk, "lumina-image-2.0", "--image", "512x512", "--dtype", "bfloat16")
    # 26 layers x keys and values x 4 kv heads x 256 tokens x head_dim 256 x 2 bytes
    assert lumina["stages"][0]["cache_bytes"] == 26 * 2 * 4 * 256 * 256 * 2


VAE = {"_class_name": "AutoencoderKL", "in_channels": 3, "out_channels": 3, "latent_channels": 4,
       "down_block_types": ["DownEncoderBlock2D", "DownEncoderBlock2D"],
       "up_block_types": ["UpDecoderBlock2D", "UpDecoderBlock2D"], "block_out_channels": [8, 16],
       "layers_per_block": 1, "norm_num_groups": 4, "sample_size": 32, "act_fn": "silu"}


def _vae_decode_peak(cfg, height, width):
    """torch's profiler on the cpu (/work/shared/GROUND_TRUTH.md): the bytes
    allocated at the peak of vae.decode(z) above what was live before, plus
    the input z, which the plan counts as live."""
    import torch
    from diffusers import AutoencoderKL
    from torch.profiler import ProfilerActivity, profile
    torch.set_num_threads(1)  # the cpu flash sdpa's buffers are per thread
    torch.manual_seed(0)
    vae = AutoencoderKL(**{k: v for k, v in cfg.items() if not k.startswith("_")}).eval()
    z = torch.randn(1, cfg["latent_channels"], height // 2, width // 2)
    with torch.no_grad():
        vae.decode(z)  # warm-up
        with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
            out = vae.decode(z).sample
        del out
    events = sorted((e.start_ns(), e.nbytes()) for e in prof.profiler.kineto_results.events() if e.name() == "[memory]")
    cur = peak = 0
    for _, b in events:
        cur += b
        peak = max(peak, cur)
    return peak + z.numel() * z.element_size()


def _vae_decode_peak_isolated(cfg, height, width):
    """_vae_decode_peak in a fresh interpreter: measured inside the whole
    suite's process it read 3,047,424 bytes where a fresh process reads
    1,038,336 (state other torch oracles leave behind changes the kernels'
    allocations), so the ground truth is taken where nothing ran before."""
    code = ("import json, sys; sys.path[:0] = sys.argv[1:3]; "
            "from test_pipeline_memory import _vae_decode_peak; "
            "print(json.dumps(_vae_decode_peak(json.loads(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))))")
    out = subprocess.run([sys.executable, "-c", code, str(HERE), str(HERE.parent), json.dumps(cfg), str(height),
                          str(width)], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_vae_decode_peak_is_torch_profilers_on_cpu(mtk, tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(VAE))
    plan = memory(mtk, str(tmp_path), "--image", "64x64", "--device-kind", "cpu")
    (stage,) = [s for s in plan["stages"] if s["stage"] == "vae_decode"]
    measured = _cached("vae_decode_peak", [VAE, 64, 64], lambda: _vae_decode_peak_isolated(VAE, 64, 64))
    assert stage["activation_peak_bytes"] == measured
