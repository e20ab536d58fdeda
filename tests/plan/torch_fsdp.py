"""torch's memory trackers on one rank of data parallelism: the oracle of
mtk shard's FSDP (and dp = 1) per-rank memory, for test_shard_fsdp.py.

A case is {config, world, batch, seq, mode, recompute, dtype} (mode
training|inference, recompute none|full|selective, dtype float32|bfloat16;
the last three default to training, none, float32).  The model is built
under FakeTensorMode in float32 (as GROUND_TRUTH.md builds it) with sdpa
attention.  world > 1: FSDP2 (fully_shard on each decoder layer and the
root) over a fake process group of that size, measured by FSDPMemTracker;
world 1: no FSDP, measured by MemTracker.

- recompute full: transformers' gradient_checkpointing_enable
  (torch.utils.checkpoint, use_reentrant=False) around each decoder layer;
- recompute selective: Megatron's selective recompute, the attention core
  only: the function transformers' attention modules call for "sdpa"
  (sdpa_attention_forward: the repeat of the key/value heads where it
  repeats them, F.scaled_dot_product_attention, the transpose of its
  output) runs under torch.utils.checkpoint (use_reentrant=False); the
  projections, RoPE, norms and MLP save as usual;
- dtype bfloat16: FSDP2's MixedPrecisionPolicy(param_dtype=bfloat16,
  reduce_dtype=float32) over float32 sharded parameters (world > 1 only);
- training: AdamW single-tensor, two steps tracked, the second's modules;
  inference: two forwards under no_grad.

Run as a script: argv[1] is a case; prints one JSON line {category: bytes}
(the tracker's peak snapshot of the cpu device, "Total" among them)."""
import json
import os
import sys
import tempfile

import torch
import torch.distributed as dist
import transformers
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.distributed._tools.fsdp2_mem_tracker import FSDPMemTracker
from torch.distributed._tools.mem_tracker import MemTracker
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
from torch.testing._internal.distributed.fake_pg import FakeStore
from torch.utils.checkpoint import checkpoint
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward


def selective_sdpa(module, query, key, value, attention_mask, **kwargs):
    """sdpa_attention_forward under a non-reentrant checkpoint."""
    return checkpoint(sdpa_attention_forward, module, query, key, value, attention_mask, use_reentrant=False,
                      **kwargs)


def build(case, mesh):
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(case["config"], f)
        config = transformers.AutoConfig.from_pretrained(d)
    torch.set_default_dtype(torch.float32)
    cls = getattr(transformers, case["config"]["architectures"][0])
    model = cls._from_config(config, attn_implementation="sdpa")
    if case.get("recompute", "none") == "full":
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model.train(case.get("mode", "training") == "training")
    if mesh is not None:
        mp = case.get("dtype", "float32") == "bfloat16"
        kw = dict(mp_policy=MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)) if mp else {}
        for layer in model.model.layers:
            fully_shard(layer, mesh=mesh, **kw)
        fully_shard(model, mesh=mesh, **kw)
    return config, model


def measure(case):
    W = case["world"]
    if case.get("dtype", "float32") != "float32" and W == 1:
        raise SystemExit("torch_fsdp.py: 16-bit cases are FSDP2's mixed precision, world > 1")
    if case.get("recompute", "none") == "selective":
        AttentionInterface.register("sdpa", selective_sdpa)
    mesh = None
    if W > 1:
        dist.init_process_group("fake", rank=0, world_size=W, store=FakeStore())
        mesh = init_device_mesh("cpu", (W,))
    training = case.get("mode", "training") == "training"
    with FakeTensorMode():
        config, model = build(case, mesh)
        ids = torch.randint(0, config.vocab_size, (case["batch"], case["seq"]))
        opt = torch.optim.AdamW(model.parameters(), foreach=False) if training else None
        if W > 1:
            tracker = FSDPMemTracker(model, opt) if training else FSDPMemTracker(model)
            tracker.track_inputs((ids,))
        else:
            tracker = MemTracker()
            tracker.track_external(*([model, ids] + ([opt] if opt else [])))
        with tracker, torch.set_grad_enabled(training):
            for step in range(2):
                if training:
                    model(input_ids=ids, labels=ids).loss.backward()
                    opt.step()
                    opt.zero_grad()
                else:
                    model(input_ids=ids)
                if step == 0:
                    tracker.reset_mod_stats()
        snap = tracker.get_tracker_snapshot("peak")
    if W > 1:
        dist.destroy_process_group()
    cpu = next(v for k, v in snap.items() if str(k) == "cpu")
    return {str(k).split(".")[-1]: v for k, v in cpu.items()}


if __name__ == "__main__":
    print(json.dumps(measure(json.loads(sys.argv[1]))))
