"""torch's cpu profiler on one call of a diffusers or transformers
component (/work/shared/GROUND_TRUTH.md's protocol): no_grad, one thread,
random weights built from the component's config.json (float32, or cast to
the floating inputs' dtype when that is another: `mtk --dtype`), random
inputs of the shapes `mtk summary` gives the call.  The peak is the bytes
allocated above what was live before the call, plus the inputs, which the
plan counts as live.  Run it in a fresh interpreter (`python3
peak_oracle.py DIR INPUTS_JSON`): state earlier torch work leaves behind
changes the kernels' allocations."""
import json
import os
import sys
import warnings
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
warnings.filterwarnings("ignore")

DTYPES = {"float32": "float32", "int64": "int64"}


def _model(directory):
    import diffusers
    import transformers
    cfg = json.loads((Path(directory) / "config.json").read_text())
    if "_class_name" in cfg:
        cls = getattr(diffusers, cfg["_class_name"])
        return cls.from_config({k: v for k, v in cfg.items() if not k.startswith("_")}).eval()
    cls = getattr(transformers, cfg["architectures"][0])
    return cls(transformers.AutoConfig.from_pretrained(str(directory))).eval()


def _inputs(spec):
    import torch
    out = {}
    for name, t in spec.items():
        if t["dtype"] == "int64":  # token ids and masks: ones are valid for both
            out[name] = torch.ones(t["shape"], dtype=torch.int64)
        else:
            out[name] = torch.randn(t["shape"], dtype=getattr(torch, t["dtype"]))
    return out


def _call(model, inputs):
    import diffusers
    args = dict(inputs)
    if isinstance(model, diffusers.UNet2DConditionModel) and "text_embeds" in args:
        args["added_cond_kwargs"] = {"text_embeds": args.pop("text_embeds"), "time_ids": args.pop("time_ids")}
    return model(**args)


def peak(directory, spec):
    import torch
    from torch.profiler import ProfilerActivity, profile
    torch.set_num_threads(1)  # the cpu flash sdpa's buffers are per thread
    torch.manual_seed(0)
    model = _model(directory)
    inputs = _inputs(spec)
    dtypes = {t.dtype for t in inputs.values() if t.is_floating_point() and t.ndim > 0}
    if len(dtypes) == 1 and dtypes != {torch.float32}:
        model = model.to(dtypes.pop())
    with torch.no_grad():
        _call(model, inputs)  # warm-up
        with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
            out = _call(model, inputs)
        del out
    events = sorted((e.start_ns(), e.nbytes()) for e in prof.profiler.kineto_results.events() if e.name() == "[memory]")
    cur = top = 0
    for _, b in events:
        cur += b
        top = max(top, cur)
    return top + sum(t.numel() * t.element_size() for t in inputs.values())


if __name__ == "__main__":
    print(json.dumps(peak(sys.argv[1], json.loads(sys.argv[2]))))
