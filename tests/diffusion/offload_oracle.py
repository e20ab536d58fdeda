"""The offload oracle (test_offload_oracle.py): diffusers' own
enable_model_cpu_offload / enable_sequential_cpu_offload on a small
StableDiffusionPipeline (or StableDiffusionXLPipeline) of tiny random
components, run for one image on a
cpu-only machine, traced for which weights are on the "GPU" when and how
many bytes move between host and "GPU".

HOW THE GPU IS SIMULATED ON THE CPU

  Both modes are enabled with device="cpu": diffusers then hooks every
  component with accelerate for the execution device torch.device("cpu:0"),
  which computes on the cpu but is a device other than torch.device("cpu")
  (the host) to accelerate's comparisons.

  Model offload (accelerate's CpuOffload, cpu_offload_with_hook): the hook
  decides from `next(module.parameters()).device` whether a component is on
  the host or the execution device, and moves it with `module.to(device)`
  (in: the execution device; out: init_hook's module.to("cpu")).  A real cpu
  tensor never reports "cpu:0", so each component is given a virtual
  device: nn.Module's `.to` is patched, for the components only, to record the device asked for (and run the
  real move, a no-op on the cpu), and the first tensor `.parameters()`
  yields for a component reports that virtual device (every other attribute is the real
  parameter's).  The hooks' own code then takes every decision as on a
  GPU: a move in is counted (the component's parameters and buffers, all of
  them, as Module.to moves them) when a component goes from the host to
  the execution device, a move out the other way; the set of components on
  the execution device is recorded right after each move in (what is
  resident while that component runs).

  Sequential offload (accelerate's cpu_offload: AlignDevicesHook on every
  module, weights kept in a cpu weights_map and the module's tensors on
  meta between calls): it runs unchanged, and every
  `set_module_tensor_to_device` the hooks call is counted: a tensor set on
  the execution device is a move in of its bytes, one set on meta is
  dropped (no copy back).  The copies themselves are made to "cpu" (a
  Parameter's .to("cpu:0") gives a plain tensor that accelerate cannot
  turn back into a Parameter).  The most parameter bytes on the execution device
  at once is recorded while each component runs.

Moves are attributed to the component that owns the module moved, counted
over the whole pipeline call (maybe_free_model_hooks included, which moves
every resident component back)."""
import json
import os
import warnings
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
warnings.filterwarnings("ignore")

import torch  # noqa: E402
import diffusers  # noqa: E402
import transformers  # noqa: E402

diffusers.utils.logging.set_verbosity_error()
transformers.utils.logging.set_verbosity_error()

HOST = torch.device("cpu")
EXEC = torch.device("cpu:0")


def tokenizer(directory):
    """A byte-level CLIPTokenizer with no merges: every byte a token."""
    printable = [*range(33, 127), *range(161, 173), *range(174, 256)]
    chars = [chr(b) for b in printable] + [chr(256 + i) for i in range(256 - len(printable))]  # byte-level
    vocab = {c: i for i, c in enumerate(chars)}
    vocab.update({c + "</w>": len(chars) + i for i, c in enumerate(chars)})
    vocab["<|startoftext|>"] = len(vocab)
    vocab["<|endoftext|>"] = len(vocab)
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    (d / "vocab.json").write_text(json.dumps(vocab))
    (d / "merges.txt").write_text("#version: 0.2\n")
    return transformers.CLIPTokenizer(str(d / "vocab.json"), str(d / "merges.txt"), model_max_length=77)


def _unet_and_vae(cross_dim, **unet_extra):
    unet = diffusers.UNet2DConditionModel(
        sample_size=16, in_channels=4, out_channels=4, layers_per_block=1, block_out_channels=(8, 16),
        down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"), up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
        cross_attention_dim=cross_dim, attention_head_dim=2, norm_num_groups=4, **unet_extra)
    vae = diffusers.AutoencoderKL(
        in_channels=3, out_channels=3, latent_channels=4, block_out_channels=(8, 16), layers_per_block=1,
        down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
        up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D"), norm_num_groups=4, sample_size=32)
    return unet, vae


def _clip(cls, hidden, **extra):
    return cls(transformers.CLIPTextConfig(
        vocab_size=516, hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=2, num_attention_heads=2,
        max_position_embeddings=77, bos_token_id=514, eos_token_id=515, pad_token_id=515, **extra))


def make(directory, kind="sd"):
    """Saves a tiny random StableDiffusionPipeline ("sd") or
    StableDiffusionXLPipeline ("sdxl": two text encoders, the second with a
    projection, and the UNet's text_time conditioning) to `directory`."""
    torch.manual_seed(0)
    if kind == "sd":
        unet, vae = _unet_and_vae(12)
        pipe = diffusers.StableDiffusionPipeline(
            vae=vae, text_encoder=_clip(transformers.CLIPTextModel, 12),
            tokenizer=tokenizer(Path(directory) / "tokenizer"), unet=unet, scheduler=diffusers.DDIMScheduler(),
            safety_checker=None, feature_extractor=None, requires_safety_checker=False)
    else:
        unet, vae = _unet_and_vae(
            12 + 8, addition_embed_type="text_time", addition_time_embed_dim=4,
            projection_class_embeddings_input_dim=6 * 4 + 8)
        pipe = diffusers.StableDiffusionXLPipeline(
            vae=vae, text_encoder=_clip(transformers.CLIPTextModel, 12),
            text_encoder_2=_clip(transformers.CLIPTextModelWithProjection, 8, projection_dim=8),
            tokenizer=tokenizer(Path(directory) / "tokenizer"), tokenizer_2=tokenizer(Path(directory) / "tokenizer_2"),
            unet=unet, scheduler=diffusers.EulerDiscreteScheduler())
    pipe.save_pretrained(directory, safe_serialization=True)


def tensor_bytes(t):
    return t.numel() * t.element_size()


def module_bytes(m):
    return sum(tensor_bytes(t) for t in m.parameters()) + sum(tensor_bytes(t) for t in m.buffers())


class _FirstParameter:
    """A parameter that reports its module's virtual device."""

    def __init__(self, param, device):
        self._param, self.device = param, device

    def __getattr__(self, name):
        return getattr(self._param, name)


def _device_of(args, kwargs):
    for a in list(args) + [kwargs.get("device")]:
        if isinstance(a, torch.device):
            return a
        if isinstance(a, str):
            return torch.device(a)
    return None


def trace_model_offload(pipe, components, run):
    where = {name: HOST for name in components}
    log = {"moved_in": 0, "moved_out": 0, "events": [], "resident": []}

    # nn.Module's own `to` and `parameters`, patched for the components only (by identity): diffusers' and
    # transformers' overrides of `to` end in nn.Module.to; an instance attribute would not survive
    # accelerate's remove_hook_from_module, and a subclass breaks transformers' output_hidden_states
    tracked = {id(m): name for name, m in components.items()}
    real_to, real_parameters = torch.nn.Module.to, torch.nn.Module.parameters

    def to(self, *args, **kwargs):
        name = tracked.get(id(self))
        device = _device_of(args, kwargs) if name else None
        if device is not None:
            was, where[name] = where[name], device
            if was == HOST and device != HOST:
                log["moved_in"] += module_bytes(self)
                log["events"].append(["in", name])
                log["resident"].append([name, sorted(n for n in components if where[n] != HOST)])
            elif was != HOST and device == HOST:
                log["moved_out"] += module_bytes(self)
                log["events"].append(["out", name])
        return real_to(self, *args, **kwargs)

    def parameters(self, recurse=True):
        params = real_parameters(self, recurse)
        name = tracked.get(id(self))
        if name is not None:
            first = next(params, None)
            if first is not None:
                yield _FirstParameter(first, where[name])
        yield from params

    torch.nn.Module.to, torch.nn.Module.parameters = to, parameters
    try:
        pipe.enable_model_cpu_offload(device="cpu")
        log["events"].clear()
        log["moved_in"] = log["moved_out"] = 0
        run(pipe)
    finally:
        torch.nn.Module.to, torch.nn.Module.parameters = real_to, real_parameters
    return {"moved_in": log["moved_in"], "moved_out": log["moved_out"], "events": log["events"],
            "resident": log["resident"]}


def trace_sequential_offload(pipe, components, run):
    import accelerate.hooks as hooks
    owner = {id(m): name for name, c in components.items() for m in c.modules()}
    on_exec = {}  # (module id, tensor name) -> bytes
    log = {"moved_in": 0, "per_component": {}, "peak_params": {}}
    real_set = hooks.set_module_tensor_to_device

    def counted(module, tensor_name, device, value=None, **kwargs):
        # the copy itself goes to "cpu": a Parameter's .to("cpu:0") returns a plain tensor, which accelerate
        # then cannot turn back into a Parameter
        real_set(module, tensor_name, HOST if torch.device(device) == EXEC else device, value=value, **kwargs)
        if not counting[0]:
            return
        component = owner.get(id(module), "?")
        key = (id(module), tensor_name)
        if torch.device(device).type == "meta":
            on_exec.pop(key, None)
            return
        t = getattr(module, tensor_name)
        n = tensor_bytes(t)
        log["moved_in"] += n
        log["per_component"][component] = log["per_component"].get(component, 0) + n
        is_param = tensor_name in module._parameters
        if is_param:
            on_exec[key] = n
        now = sum(on_exec.values())
        log["peak_params"][component] = max(log["peak_params"].get(component, 0), now)

    counting = [False]
    hooks.set_module_tensor_to_device = counted
    try:
        pipe.enable_sequential_cpu_offload(device="cpu")
        buffers_on_exec = sum(tensor_bytes(b) for c in components.values() for b in c.buffers()
                              if b.device.type != "meta")
        counting[0] = True
        run(pipe)
    finally:
        hooks.set_module_tensor_to_device = real_set
    return {"moved_in": log["moved_in"], "per_component": log["per_component"], "peak_params": log["peak_params"],
            "buffers_on_exec": buffers_on_exec}


def trace(directory, mode, height=32, width=32, steps=2, guidance=7.5):
    """What `mode` ("model" or "sequential") moves for one image."""
    pipe = diffusers.DiffusionPipeline.from_pretrained(directory)
    components = {k: v for k, v in pipe.components.items() if isinstance(v, torch.nn.Module)}

    def run(p):
        with torch.no_grad():
            p("a cat", height=height, width=width, num_inference_steps=steps, guidance_scale=guidance,
              output_type="np", generator=torch.Generator().manual_seed(0))

    out = {"bytes": {name: module_bytes(m) for name, m in components.items()},
           "calls": {}}
    counts = {}
    for name, m in components.items():
        m.register_forward_hook(lambda mod, a, o, name=name: counts.__setitem__(name, counts.get(name, 0) + 1))
    if mode == "model":
        out.update(trace_model_offload(pipe, components, run))
    else:
        out.update(trace_sequential_offload(pipe, components, run))
    out["calls"] = counts
    return out


def oracle(directory, kind="sd", **call):
    """Saves the pipeline to `directory` and traces both modes there."""
    make(directory, kind)
    return {mode: trace(directory, mode, **call) for mode in ("model", "sequential")}


if __name__ == "__main__":
    import sys
    print(json.dumps(oracle(sys.argv[1]), indent=1))
