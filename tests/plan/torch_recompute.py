"""torch's FlopCounterMode on a transformers model: the oracle of the FLOPs
mtk shard says recompute adds to a training step (test_shard_recompute_flops.py).

A case is {config, batch, seq}.  The model is built under FakeTensorMode
in float32 with sdpa attention; scaled_dot_product_attention runs the cpu
flash kernel (one op saving its output and logsumexp, as the CUDA kernels
do), to which torch's own sdpa FLOP count (flop_counter.sdpa_flop_count,
the one it registers for the CUDA kernels) is registered here: FlopCounterMode
has none for the cpu op.  Measured:

- step: the FLOPs of one training step's forward and backward
  (model(input_ids, labels).loss.backward()) under each recompute:
  none; full, transformers' gradient_checkpointing_enable
  (torch.utils.checkpoint, use_reentrant=False) around each decoder
  layer; selective, the function transformers' attention modules call
  for "sdpa" (sdpa_attention_forward) under the same checkpoint, as
  torch_fsdp.py does it.  step[mode] - step[none] is what recompute adds;
- layers_forward: the forward FLOPs of the decoder layers (FlopCounterMode's
  per-module counts of model.model.layers.N), what full recompute reruns;
- attention_forward: the forward FLOPs of the attention cores
  (sdpa_attention_forward's), what selective reruns.

Run as a script: argv[1] is a case; prints one JSON line."""
import json
import os
import re
import sys
import tempfile

import torch
import transformers
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.utils import flop_counter
from torch.utils.checkpoint import checkpoint
from torch.utils.flop_counter import FlopCounterMode
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward

ATTENTION = {"core": 0}


@flop_counter.register_flop_formula(torch.ops.aten._scaled_dot_product_flash_attention_for_cpu)
def cpu_sdpa_flop(query_shape, key_shape, value_shape, *args, out_shape=None, **kwargs):
    """torch's sdpa count (its two batched matmuls) for the cpu kernel."""
    return flop_counter.sdpa_flop_count(query_shape, key_shape, value_shape)


def counted_sdpa(module, query, key, value, attention_mask, **kwargs):
    """sdpa_attention_forward, its forward matmuls counted apart."""
    with FlopCounterMode(display=False) as inner:
        out = sdpa_attention_forward(module, query, key, value, attention_mask, **kwargs)
    ATTENTION["core"] += inner.get_total_flops()
    return out


def selective_sdpa(module, query, key, value, attention_mask, **kwargs):
    """sdpa_attention_forward under a non-reentrant checkpoint."""
    return checkpoint(sdpa_attention_forward, module, query, key, value, attention_mask, use_reentrant=False,
                      **kwargs)


def build(case, recompute):
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(case["config"], f)
        config = transformers.AutoConfig.from_pretrained(d)
    torch.set_default_dtype(torch.float32)
    cls = getattr(transformers, case["config"]["architectures"][0])
    model = cls._from_config(config, attn_implementation="sdpa")
    if recompute == "full":
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model.train()
    return config, model


def step_flops(case, recompute):
    AttentionInterface.register("sdpa", selective_sdpa if recompute == "selective" else sdpa_attention_forward)
    with FakeTensorMode():
        config, model = build(case, recompute)
        ids = torch.randint(0, config.vocab_size, (case["batch"], case["seq"]))
        with FlopCounterMode(display=False) as counter:
            model(input_ids=ids, labels=ids).loss.backward()
    return counter.get_total_flops()


def forward_flops(case):
    AttentionInterface.register("sdpa", counted_sdpa)
    ATTENTION["core"] = 0
    with FakeTensorMode(), torch.no_grad():
        config, model = build(case, "none")
        ids = torch.randint(0, config.vocab_size, (case["batch"], case["seq"]))
        with FlopCounterMode(display=False) as counter:
            model(input_ids=ids)
    layers = 0
    for name, ops in counter.get_flop_counts().items():
        if re.search(r"\.layers\.\d+$", name):
            layers += sum(ops.values())
    return layers, ATTENTION["core"]


def measure(case):
    layers, attention = forward_flops(case)
    return dict(step={m: step_flops(case, m) for m in ("none", "selective", "full")}, layers_forward=layers,
                attention_forward=attention)


if __name__ == "__main__":
    print(json.dumps(measure(json.loads(sys.argv[1]))))
