"""torch's side of the saved-activations oracle: a transformers model built
from a config.json dict on the cpu (random weights, training mode), called
with labels=input_ids (causal LMs) or plainly (encoders) under
torch.autograd.graph.saved_tensors_hooks, counting what the hooks see as
GROUND_TRUTH.md does: each storage once, parameters left out, every
storage the hooks see counted (those freed before the forward ends too).

Also a script: python3 saved_oracle.py CONFIG.json DTYPE ATTENTION BxS LOSS
prints {"saved_bytes": N}."""
import json
import os
import sys
import warnings

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import torch  # noqa: E402
import transformers  # noqa: E402

transformers.logging.set_verbosity_error()
warnings.filterwarnings("ignore")


def saved_bytes(cfg, dtype, attention, batch, seq, loss):
    """Bytes autograd keeps for backward during the forward of `cfg`."""
    return saved_by_module(cfg, dtype, attention, batch, seq, loss)["total"]


def saved_by_module(cfg, dtype, attention, batch, seq, loss):
    """{"total": bytes, "modules": {name: bytes}}: each storage counted in
    the innermost module running when it was first saved ("" the root,
    the loss included)."""
    config = transformers.AutoConfig.for_model(**cfg)
    config._attn_implementation = attention
    cls = getattr(transformers, cfg["architectures"][0])
    torch.manual_seed(0)
    model = cls._from_config(config, dtype=getattr(torch, dtype))
    model.train()
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    seen = {}
    stack = [""]
    per_module = {}
    names = {m: n for n, m in model.named_modules()}
    hooks = [m.register_forward_pre_hook(lambda m, a: stack.append(names[m])) for m in names]
    hooks += [m.register_forward_hook(lambda m, a, o: stack.pop() and None) for m in names]

    # every packed tensor is held until the forward ends: a node whose outputs
    # are dropped during the forward (deepseek_v3's router: topk(...)[1] and the
    # masked_fill before it) frees what it saved, and the allocator may hand that
    # address to a later saved storage, which a data_ptr key would then skip
    # (2,392 or 2,431 router bytes depending on the heap's history)
    held = []

    def pack(t):
        st = t.untyped_storage()
        if st.data_ptr() not in params and st.data_ptr() not in seen:
            seen[st.data_ptr()] = st.nbytes()
            per_module[stack[-1]] = per_module.get(stack[-1], 0) + st.nbytes()
            held.append(t)
        return t

    if cfg["model_type"] == "vit":
        size = config.image_size
        kwargs = {"pixel_values": torch.randn(batch, config.num_channels, size, size, dtype=model.dtype)}
    else:
        ids = torch.randint(0, getattr(config, "text_config", config).vocab_size, (batch, seq))
        kwargs = {"input_ids": ids, "labels": ids} if loss else {"input_ids": ids}
    if cfg["model_type"] != "vit":
        kwargs["use_cache"] = False
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(**kwargs)
    for h in hooks:
        h.remove()
    held.clear()
    return {"total": sum(seen.values()), "modules": per_module}


if __name__ == "__main__":
    cfg = json.load(open(sys.argv[1]))
    b, s = (int(x) for x in sys.argv[4].split("x"))
    print(json.dumps({"saved_bytes": saved_bytes(cfg, sys.argv[2], sys.argv[3], b, s, sys.argv[5] == "loss")}))
