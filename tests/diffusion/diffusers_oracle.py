"""The diffusers side of the diffusion oracle: a component from its
config.json dict built under torch.device('meta') as from_config builds it
(diffusers' class from _class_name, transformers' from architectures[0]),
its state dict, and its calls run on meta with the inputs mtk's pipeline
summary reports (shapes, dtypes): output shapes and FlopCounterMode's FLOPs."""
import os
import warnings

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
warnings.filterwarnings("ignore")

import torch  # noqa: E402
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16, "int64": torch.int64}


def build(cfg):
    """The component of `cfg` on meta, in the dtype from_pretrained would
    give it (transformers: the config's torch_dtype; diffusers: float32)."""
    with torch.device("meta"):
        if "_class_name" in cfg and "model_type" not in cfg:
            import diffusers
            cls = getattr(diffusers, cfg["_class_name"])
            model = cls.from_config({k: v for k, v in cfg.items() if not k.startswith("_")})
        else:
            import transformers
            config = transformers.CLIPTextConfig(**{k: v for k, v in cfg.items() if k != "architectures"})
            cls = getattr(transformers, cfg["architectures"][0])
            dtype = DTYPES.get(cfg.get("torch_dtype", "float32"), torch.float32)
            default = torch.get_default_dtype()
            torch.set_default_dtype(dtype)
            try:
                model = cls._from_config(config)
            finally:
                torch.set_default_dtype(default)
    return model.eval()


def run_call(model, method, inputs):
    """One call: `inputs` {name: {"shape", "dtype"}} in mtk's order."""
    args = {n: torch.empty(v["shape"], dtype=DTYPES[v["dtype"]], device="meta") for n, v in inputs.items()}
    cls = type(model).__name__
    if cls == "UNet2DConditionModel":
        added = {k: args.pop(k) for k in ("text_embeds", "time_ids") if k in args}
        out = model(args["sample"], args["timestep"], args["encoder_hidden_states"],
                    added_cond_kwargs=added or None).sample
        return [out]
    if cls == "AutoencoderKL":
        if method == "decode":
            return [model.decode(args["z"]).sample]
        return [model.encode(args["x"]).latent_dist.mean]
    out = model(args["input_ids"])
    if cls == "CLIPTextModelWithProjection":
        return [out.text_embeds, out.last_hidden_state]
    return [out.last_hidden_state, out.pooler_output]


def describe(cfg, calls):
    """{"state_dict": [[key, shape, dtype]], "num_params", "calls": [{"outputs":
    [[shape, dtype]], "flops"}]} of the component."""
    model = build(cfg)
    sd = [[k, list(v.shape), str(v.dtype).replace("torch.", "")] for k, v in model.state_dict().items()]
    out = {"state_dict": sd, "num_params": sum(p.numel() for p in model.parameters()), "calls": []}
    with torch.no_grad():
        for call in calls:
            counter = FlopCounterMode(display=False)
            with counter:
                outputs = run_call(model, call["method"], call["inputs"])
            out["calls"].append({"outputs": [[list(t.shape), str(t.dtype).replace("torch.", "")] for t in outputs],
                                 "flops": counter.get_total_flops()})
    return out
