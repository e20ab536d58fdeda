"""The diffusers side of the DiT oracle (tests/diffusion/test_dit*.py): a
transformer denoiser from its config.json dict, built under
torch.device('meta') as `from_config` builds it, described the way
zoo_probe (tests/models/zoo_probe.c) describes mtk's models; and its
forward's output shape.

Run as a script (`python3 dit_oracle.py describe CONFIG.json`, or
`forward CONFIG.json SPEC.json`) it prints the description as JSON, so the
tests can run it in a subprocess and cache the answer."""
import json
import os
import sys
import warnings

os.environ.setdefault("HF_HUB_OFFLINE", "1")
warnings.filterwarnings("ignore")

import torch  # noqa: E402
import diffusers  # noqa: E402

diffusers.utils.logging.set_verbosity_error()


def dtype_name(dtype):
    return str(dtype).replace("torch.", "")


def build(cfg, device="meta"):
    cls = getattr(diffusers, cfg["_class_name"])
    with torch.device(device):
        model = cls.from_config(cfg)
    return model.eval()


def describe(cfg):
    model = build(cfg)
    params = [[n, list(p.shape), dtype_name(p.dtype), p.requires_grad] for n, p in model.named_parameters()]
    persistent = set(model.state_dict().keys())
    buffers = [[n, list(b.shape), dtype_name(b.dtype), n in persistent] for n, b in model.named_buffers()]
    state = [[k, list(v.shape), dtype_name(v.dtype)] for k, v in model.state_dict().items()]
    return {"type": type(model).__name__, "params": params, "buffers": buffers, "state_dict": state,
            "num_params": sum(p.numel() for p in model.parameters())}


def count(library, cls, cfg):
    """Parameters of the class `cls` of `library` ("diffusers" or
    "transformers", as model_index.json names them) built from `cfg` on
    meta, as a pipeline's from_pretrained builds its components."""
    if library == "diffusers":
        return sum(p.numel() for p in build(dict(cfg, _class_name=cls)).parameters())
    import transformers
    config = transformers.AutoConfig.for_model(**cfg)
    with torch.device("meta"):
        model = getattr(transformers, cls)._from_config(config)
    return sum(p.numel() for p in model.parameters())


def make_input(spec, device):
    shape, dtype = spec["shape"], getattr(torch, spec["dtype"])
    if spec.get("ones"):
        return torch.ones(shape, dtype=dtype, device=device)
    if dtype.is_floating_point:
        return torch.randn(shape, dtype=dtype, device=device)
    return torch.zeros(shape, dtype=dtype, device=device)


def forward(cfg, inputs, device="meta"):
    """Output shape, dtype and FlopCounterMode's FLOPs of model(**inputs):
    `inputs` {name: {"shape", "dtype"[, "ones"]}}.  Lumina2's forward reads
    its mask with .tolist(), which a meta tensor cannot give: it runs on cpu
    (small configs)."""
    from torch.utils.flop_counter import FlopCounterMode
    model = build(cfg, "cpu" if device == "cpu" else "meta")
    if device == "cpu":
        torch.manual_seed(0)
        for p in model.parameters():
            torch.nn.init.normal_(p, std=0.02)
    kwargs = {name: make_input(spec, device) for name, spec in inputs.items()}
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        out = model(**kwargs, return_dict=False)[0]
    return {"shape": list(out.shape), "dtype": dtype_name(out.dtype), "flops": counter.get_total_flops()}


if __name__ == "__main__":
    cfg = json.load(open(sys.argv[2]))
    if sys.argv[1] == "describe":
        print(json.dumps(describe(cfg)))
    else:
        spec = json.load(open(sys.argv[3]))
        print(json.dumps(forward(cfg, spec["inputs"], spec.get("device", "meta"))))
