"""The diffusers side of the DiT cpu-forward oracle (test_dit_forward.py):
a transformer denoiser built on the cpu from a small config with random
weights, saved by diffusers' own save_pretrained (config.json +
diffusion_pytorch_model.safetensors), random inputs as its pipeline makes
them (inputs.safetensors, one tensor per forward argument, named as
diffusers names it) and diffusers' float32 output (expected.safetensors,
"sample").

`make(cfg, seed, out_dir)` writes the three files, and arguments.json:
the names of the forward's arguments in the order of its signature.  The weights are drawn
N(0, 0.05) after diffusers' init, so that the zero-initialised layers (the
adaptive norms' linears, proj_out) take part in the comparison."""
import inspect
import json
import os
import warnings
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
warnings.filterwarnings("ignore")

import torch  # noqa: E402
import diffusers  # noqa: E402
from safetensors.torch import save_file  # noqa: E402

diffusers.utils.logging.set_verbosity_error()


def sd3_inputs(cfg, g, b, size, tokens):
    return {"hidden_states": torch.randn(b, cfg["in_channels"], size, size, generator=g),
            "encoder_hidden_states": torch.randn(b, tokens, cfg["joint_attention_dim"], generator=g),
            "pooled_projections": torch.randn(b, cfg["pooled_projection_dim"], generator=g),
            "timestep": torch.rand(b, generator=g) * 1000}


def flux_inputs(cfg, g, b, size, tokens):
    # FluxPipeline: 2 x 2 latent patches packed, ids (row, col) per patch, text ids zero, t in [0, 1]
    side = size // 2
    ids = torch.zeros(side, side, 3)
    ids[..., 1] += torch.arange(side)[:, None]
    ids[..., 2] += torch.arange(side)[None, :]
    inputs = {"hidden_states": torch.randn(b, side * side, cfg["in_channels"], generator=g),
              "encoder_hidden_states": torch.randn(b, tokens, cfg["joint_attention_dim"], generator=g),
              "pooled_projections": torch.randn(b, cfg["pooled_projection_dim"], generator=g),
              "timestep": torch.rand(b, generator=g),
              "img_ids": ids.reshape(-1, 3), "txt_ids": torch.zeros(tokens, 3)}
    if cfg.get("guidance_embeds"):
        inputs["guidance"] = torch.full((b,), 3.5)
    return inputs


def lumina_inputs(cfg, g, b, size, tokens):
    return {"hidden_states": torch.randn(b, cfg["in_channels"], size, size, generator=g),
            "timestep": torch.rand(b, generator=g),
            "encoder_hidden_states": torch.randn(b, tokens, cfg["cap_feat_dim"], generator=g),
            "encoder_attention_mask": torch.ones(b, tokens, dtype=torch.int64)}


INPUTS = {"SD3Transformer2DModel": sd3_inputs, "FluxTransformer2DModel": flux_inputs,
          "Lumina2Transformer2DModel": lumina_inputs}


def make(cfg, seed, out_dir, batch=2, size=8, tokens=5):
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    cls = getattr(diffusers, cfg["_class_name"])
    model = cls.from_config({k: v for k, v in cfg.items() if k != "_class_name"}).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.05)
    model.save_pretrained(out, safe_serialization=True)
    g = torch.Generator().manual_seed(seed + 1)
    inputs = INPUTS[cfg["_class_name"]](cfg, g, batch, size, tokens)
    with torch.no_grad():
        sample = model(**inputs, return_dict=False)[0]
    save_file({k: v.contiguous() for k, v in inputs.items()}, str(out / "inputs.safetensors"))
    save_file({"sample": sample.contiguous()}, str(out / "expected.safetensors"))
    # the forward's arguments in diffusers' order, as its signature lists them
    order = [n for n in inspect.signature(cls.forward).parameters if n in inputs]
    (out / "arguments.json").write_text(json.dumps(order))
