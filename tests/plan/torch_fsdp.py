"""torch's FSDPMemTracker on a fake process group: the oracle of
test_shard_fsdp.py.  One rank of FSDP2 (fully_shard on each decoder layer
and the root) over W ranks, built and run under FakeTensorMode (float32,
as GROUND_TRUTH.md builds it), AdamW single-tensor, two training steps
tracked, the second's peak reported by category.

Run as a script: argv[1] is a JSON case {config, world, batch, seq};
prints one JSON line {category: bytes} (FSDPMemTracker's peak snapshot
of the cpu device)."""
import json
import os
import sys
import tempfile

import torch
import torch.distributed as dist
import transformers
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.distributed._tools.fsdp2_mem_tracker import FSDPMemTracker
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard
from torch.testing._internal.distributed.fake_pg import FakeStore


def measure(case):
    W = case["world"]
    dist.init_process_group("fake", rank=0, world_size=W, store=FakeStore())
    mesh = init_device_mesh("cpu", (W,))
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(case["config"], f)
        config = transformers.AutoConfig.from_pretrained(d)
    with FakeTensorMode():
        torch.set_default_dtype(torch.float32)
        cls = getattr(transformers, case["config"]["architectures"][0])
        model = cls._from_config(config, attn_implementation="sdpa")
        for layer in model.model.layers:
            fully_shard(layer, mesh=mesh)
        fully_shard(model, mesh=mesh)
        opt = torch.optim.AdamW(model.parameters(), foreach=False)
        ids = torch.randint(0, config.vocab_size, (case["batch"], case["seq"]))
        tracker = FSDPMemTracker(model, opt)
        tracker.track_inputs((ids,))
        with tracker:
            for step in range(2):
                model(input_ids=ids, labels=ids).loss.backward()
                opt.step()
                opt.zero_grad()
                if step == 0:
                    tracker.reset_mod_stats()
        snap = tracker.get_tracker_snapshot("peak")
    dist.destroy_process_group()
    cpu = next(v for k, v in snap.items() if str(k) == "cpu")
    return {str(k).split(".")[-1]: v for k, v in cpu.items()}


if __name__ == "__main__":
    print(json.dumps(measure(json.loads(sys.argv[1]))))
