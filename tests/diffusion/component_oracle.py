"""The diffusers side of `mtk run` on components: a small random-weight
component saved by diffusers' (or transformers') save_pretrained, inputs
drawn from a seed, and what diffusers' forward gives on them, all written
to a directory:

  DIR/model/                      config.json + diffusion_pytorch_model.safetensors
                                  (model.safetensors for transformers)
  DIR/inputs.safetensors          the call's arguments by diffusers' names
  DIR/expected.safetensors        the output fields (sample, latent_dist.mean,
                                  last_hidden_state, ...)

make(case, directory) writes them; a case is {"kind": "unet" | "vae" | "clip",
"config", "method", "inputs": {name: shape or a number}, "seed"}."""
import os
import warnings

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
warnings.filterwarnings("ignore")

import torch  # noqa: E402
from safetensors.torch import save_file  # noqa: E402


def build(case):
    """The component with seeded weights: torch's default init, the norms'
    scales and shifts moved off 1 and 0 so that they matter."""
    torch.manual_seed(case["seed"])
    cfg = case["config"]
    if case["kind"] == "clip":
        import transformers
        config = transformers.CLIPTextConfig(**{k: v for k, v in cfg.items() if k != "architectures"})
        model = getattr(transformers, cfg["architectures"][0])(config)
    else:
        import diffusers
        cls = getattr(diffusers, cfg["_class_name"])
        model = cls.from_config({k: v for k, v in cfg.items() if not k.startswith("_")})
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.add_(0.1 * torch.randn_like(p))
    return model.eval()


def inputs_of(case):
    g = torch.Generator().manual_seed(case["seed"] + 1)
    out = {}
    for name, spec in case["inputs"].items():
        if isinstance(spec, list) and name == "input_ids":
            out[name] = torch.randint(0, case["config"]["vocab_size"], spec, generator=g)
        elif isinstance(spec, list) and name == "timestep":
            out[name] = torch.randint(0, 1000, spec, generator=g)
        elif isinstance(spec, list):
            out[name] = torch.randn(spec, generator=g)
        else:
            out[name] = torch.tensor(spec)
    return out


def call(model, case, args):
    kind, method = case["kind"], case.get("method", "forward")
    if kind == "unet":
        added = {k: args[k] for k in ("text_embeds", "time_ids") if k in args}
        return {"sample": model(args["sample"], args["timestep"], args["encoder_hidden_states"],
                                added_cond_kwargs=added or None).sample}
    if kind == "vae":
        if method == "encode":
            return {"latent_dist.mean": model.encode(args["x"]).latent_dist.mean}
        if method == "decode":
            return {"sample": model.decode(args["z"]).sample}
        return {"sample": model(args["sample"]).sample}
    out = model(args["input_ids"])
    return {k: v for k, v in out.items() if k in ("last_hidden_state", "pooler_output", "text_embeds")}


def make(case, directory):
    model = build(case)
    model.save_pretrained(os.path.join(directory, "model"))
    args = inputs_of(case)
    with torch.no_grad():
        expected = call(model, case, args)
    save_file({k: v.contiguous() for k, v in args.items()}, os.path.join(directory, "inputs.safetensors"))
    save_file({k: v.contiguous() for k, v in expected.items()}, os.path.join(directory, "expected.safetensors"))
