"""torch's FSDPMemTracker with activation checkpointing, FSDP2 mixed
precision and forward-only runs: the oracle of test_shard_fsdp_modes.py.
One rank of FSDP2 (fully_shard on each decoder layer and the root) over W
ranks, built and run under FakeTensorMode in float32; `recompute: full`
applies transformers' gradient_checkpointing_enable (use_reentrant=False);
`dtype: bfloat16` is FSDP2's MixedPrecisionPolicy(param_dtype=bfloat16,
reduce_dtype=float32) over float32 sharded parameters; `mode: inference`
runs the forward under no_grad.  Training: AdamW single-tensor, two steps
tracked, the second's peak; inference: two forwards, the second's.

Run as a script: argv[1] is a JSON case {config, world, batch, seq, mode,
recompute, dtype}; prints one JSON line {category: bytes} (the tracker's
peak snapshot of the cpu device)."""
import json, os, sys, tempfile
import torch
import torch.distributed as dist
import transformers
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.distributed._tools.fsdp2_mem_tracker import FSDPMemTracker
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard, MixedPrecisionPolicy
from torch.testing._internal.distributed.fake_pg import FakeStore


def measure(case):
    W = case["world"]
    dist.init_process_group("fake", rank=0, world_size=W, store=FakeStore())
    mesh = init_device_mesh("cpu", (W,))
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(case["config"], f)
        config = transformers.AutoConfig.from_pretrained(d)
    mp = case.get("dtype", "float32") == "bfloat16"
    kw = dict(mp_policy=MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)) if mp else {}
    with FakeTensorMode():
        torch.set_default_dtype(torch.float32)
        cls = getattr(transformers, case["config"]["architectures"][0])
        model = cls._from_config(config, attn_implementation="sdpa")
        if case.get("recompute") == "full":
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        model.train(case.get("mode", "training") == "training")
        for layer in model.model.layers:
            fully_shard(layer, mesh=mesh, **kw)
        fully_shard(model, mesh=mesh, **kw)
        ids = torch.randint(0, config.vocab_size, (case["batch"], case["seq"]))
        if case.get("mode", "training") == "training":
            opt = torch.optim.AdamW(model.parameters(), foreach=False)
            tracker = FSDPMemTracker(model, opt)
            tracker.track_inputs((ids,))
            with tracker:
                for step in range(2):
                    model(input_ids=ids, labels=ids).loss.backward()
                    opt.step()
                    opt.zero_grad()
                    if step == 0:
                        tracker.reset_mod_stats()
        else:
            tracker = FSDPMemTracker(model)
            tracker.track_inputs((ids,))
            with tracker, torch.no_grad():
                for step in range(2):
                    model(input_ids=ids)
                    if step == 0:
                        tracker.reset_mod_stats()
        snap = tracker.get_tracker_snapshot("peak")
    dist.destroy_process_group()
    cpu = next(v for k, v in snap.items() if str(k) == "cpu")
    return {str(k).split(".")[-1]: v for k, v in cpu.items()}


if __name__ == "__main__":
    print(json.dumps(measure(json.loads(sys.argv[1]))))
