"""The transformers side of the zoo oracle: a model from a config.json dict,
built under torch.device('meta') as `from_config` builds it (the class named
by architectures[0], the family's base model when there is none, in the
config's dtype), described the way zoo_probe describes mtk's."""
import json
import os
import warnings

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import torch  # noqa: E402
import transformers  # noqa: E402
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

transformers.logging.set_verbosity_error()
warnings.filterwarnings("ignore")

BASE_CLASS = {
    "llama": "LlamaModel", "mistral": "MistralModel", "mixtral": "MixtralModel", "qwen2": "Qwen2Model",
    "qwen2_moe": "Qwen2MoeModel",
    "qwen3": "Qwen3Model", "qwen3_moe": "Qwen3MoeModel", "olmo2": "Olmo2Model", "smollm3": "SmolLM3Model",
    "granite": "GraniteModel", "phi": "PhiModel", "gemma": "GemmaModel", "gemma2": "Gemma2Model", "phi3": "Phi3Model",
    "gpt2": "GPT2Model", "gpt_neox": "GPTNeoXModel", "bert": "BertModel", "vit": "ViTModel",
    "roberta": "RobertaModel", "xlm-roberta": "XLMRobertaModel", "modernbert": "ModernBertModel",
    "t5": "T5Model",
    "gpt_oss": "GptOssModel", "llama4_text": "Llama4TextModel", "llama4": "Llama4ForConditionalGeneration",
    "deepseek_v3": "DeepseekV3Model",
    "gemma3_text": "Gemma3TextModel", "gemma3": "Gemma3Model", "mistral3": "Mistral3Model",
    "glm4_moe": "Glm4MoeModel",
}
MOE_FAMILIES = {"mixtral", "qwen2_moe", "qwen3_moe", "gpt_oss", "deepseek_v3", "glm4_moe"}



def dtype_name(dtype):
    return str(dtype).replace("torch.", "")


def hf_config(cfg_dict, directory):
    """transformers' config for a config.json dict, read back from `directory`
    as from_pretrained reads it."""
    path = os.path.join(directory, "config.json")
    if cfg_dict["model_type"] == "kimi_k2":
        # Kimi-K2's remote code (trust_remote_code) is DeepseekV3Config's
        cfg_dict = dict(cfg_dict, model_type="deepseek_v3")
    with open(path, "w") as f:
        json.dump(cfg_dict, f)
    config = transformers.AutoConfig.from_pretrained(directory)
    if cfg_dict["model_type"] in MOE_FAMILIES:
        # the default grouped_mm kernel wants bf16; batched_mm runs on meta
        config._experts_implementation = "batched_mm"
    return config


def hf_model(config):
    """The model of `config` on the meta device, as from_config builds it."""
    arch = (config.architectures or [BASE_CLASS[config.model_type]])[0]
    cls = getattr(transformers, arch)
    with torch.device("meta"):
        model = cls._from_config(config)
    model.eval()
    return model


def hf_quantize(model, config):
    """`model` as from_pretrained makes it for a config with a
    quantization_config, and its quantizer: the quantizer's modules
    (FP8Linear, ...) in place, made under the model's dtype.  Storage only:
    transformers' fp8 forward needs its CUDA kernels, so forwards are
    compared on the dense model.  mxfp4 on cpu without kernels dequantizes:
    the model stays dense (describe_quantized gives the checkpoint's view)."""
    from transformers.quantizers import AutoHfQuantizer
    quantizer = AutoHfQuantizer.from_config(config.quantization_config, pre_quantized=True)
    default = torch.get_default_dtype()
    torch.set_default_dtype(model.dtype)
    try:
        quantizer.preprocess_model(model, config=config, dtype=model.dtype, checkpoint_files=None, use_kernels=False)
    finally:
        torch.set_default_dtype(default)
    return model, quantizer


def param_values(row):
    """The values a [name, shape, dtype, ...] parameter row stands for: its
    elements, an mxfp4 blocks tensor's two a byte and its scales none (the
    count gpt-oss's model card gives, 20.9B, is the dense model's)."""
    n = 1
    for d in row[1]:
        n *= d
    if row[2] == "uint8" and row[0].endswith("_blocks"):
        return 2 * n
    if row[2] == "uint8" and row[0].endswith("_scales"):
        return 0
    return n


def _mxfp4_checkpoint_view(desc, model, config, quantizer):
    """describe() of the dense model transformers keeps on cpu, with the
    experts' matrices as the checkpoint stores them: for each proj of the
    quantizer's serialized_names, <proj>_blocks uint8 (*packed[:-1], groups,
    16) and <proj>_scales uint8 (*packed[:-1], groups), `packed` being the
    uint8 (E, out, in / 2) parameter of transformers' Mxfp4GptOssExperts and
    groups its 32-value blocks; only the experts the quantizer converts."""
    from transformers.integrations.mxfp4 import Mxfp4GptOssExperts
    from transformers.quantizers.quantizers_utils import should_convert_module
    with torch.device("meta"):
        packed = Mxfp4GptOssExperts(config)
    stored = {}
    for proj, (blocks, scales) in quantizer.serialized_names.items():
        shape = list(getattr(packed, proj).shape)
        groups = shape[-1] * 2 // 32
        stored[proj] = [[blocks, shape[:-1] + [groups, 16]], [scales, shape[:-1] + [groups]]]
    converted = {name + ".experts" for name, m in model.named_modules() if type(m).__name__ == "GptOssMLP"
                 and should_convert_module(name + ".experts", quantizer.modules_to_not_convert)}
    out = dict(desc)
    frozen = 0
    for key in ("state_dict", "params"):
        rows = []
        for row in desc[key]:
            owner, _, local = row[0].rpartition(".")
            if owner not in converted or local not in stored:
                rows.append(row)
                continue
            if key == "params" and row[3]:
                frozen += param_values(row)
            for local_name, shape in stored[local]:
                rows.append([owner + "." + local_name, shape, "uint8"] + ([False] if key == "params" else []))
        out[key] = rows
    out["trainable_params"] = desc["trainable_params"] - frozen  # integers cannot require grad
    return out


def describe_quantized(config):
    """describe() of the model from_pretrained makes for `config` (with a
    quantization_config) on cpu: the quantizer's modules for fp8; for mxfp4,
    which transformers dequantizes on cpu, the dense model with the experts'
    storage as the published checkpoints hold it (its count stays the
    dense model's, as the model card's)."""
    model, quantizer = hf_quantize(hf_model(config), config)
    desc = describe(model)
    qc = config.quantization_config
    method = qc.get("quant_method") if isinstance(qc, dict) else getattr(qc, "quant_method", None)
    if method == "mxfp4":
        desc = _mxfp4_checkpoint_view(desc, model, config, quantizer)
    return desc


def describe(model):
    """params, buffers, state_dict and counts, in zoo_probe's layout."""
    named = list(model.named_parameters())
    params = [[n, list(p.shape), dtype_name(p.dtype), p.requires_grad] for n, p in named]
    modules = dict(model.named_modules())
    buffers = []
    for name, b in model.named_buffers():
        owner, _, local = name.rpartition(".")
        persistent = local not in modules[owner]._non_persistent_buffers_set
        buffers.append([name, list(b.shape), dtype_name(b.dtype), persistent])
    state_dict = [[k, list(v.shape), dtype_name(v.dtype)] for k, v in model.state_dict().items()]
    total = sum(p.numel() for _, p in named)
    return {"type": type(model).__name__, "params": params, "buffers": buffers, "state_dict": state_dict,
            "num_params": total, "trainable_params": sum(p.numel() for _, p in named if p.requires_grad)}


def is_seq2seq_shape(shape):
    """An encoder-decoder's input: (encoder ids shape, decoder ids shape)."""
    return len(shape) == 2 and all(isinstance(s, (list, tuple)) for s in shape)


def _t5_sequence_classification_forward(model, ids):
    """T5ForSequenceClassification's forward selects the <eos> positions of
    the ids, which meta tensors lack: its parts run instead, T5Model on the
    ids and on them shifted right (same shape), then the classification
    head on the last position of each row (the selection counts no FLOPs)."""
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        hidden = model.transformer(input_ids=ids, decoder_input_ids=torch.empty_like(ids)).last_hidden_state
        logits = model.classification_head(hidden[:, -1, :])
    return {"outputs": [[list(logits.shape), dtype_name(logits.dtype)]], "flops": counter.get_total_flops()}


def forward(model, shape):
    """[[shape, dtype]] of the model's tensor outputs for an input of `shape`
    (token ids, pixels for ViT, or (encoder ids, decoder ids) shapes for an
    encoder-decoder), and the FLOPs torch's counter counts."""
    if is_seq2seq_shape(shape):
        kwargs = {"input_ids": torch.empty(*shape[0], device="meta", dtype=torch.long),
                  "decoder_input_ids": torch.empty(*shape[1], device="meta", dtype=torch.long)}
    elif model.config.model_type == "vit":
        kwargs = {"pixel_values": torch.empty(*shape, device="meta", dtype=model.dtype)}
    else:
        # use_cache stays on: without a cache, transformers' mask code looks
        # for packed sequences in the position ids, which needs their values
        kwargs = {"input_ids": torch.empty(*shape, device="meta", dtype=torch.long)}
        # SmolLM3-3B publishes use_cache: false (T5EncoderModel sets it, and refuses a cache)
        if getattr(model.config, "use_cache", True) is False and model.config.model_type != "t5":
            kwargs["use_cache"] = True
    if type(model).__name__ == "T5ForSequenceClassification":
        return _t5_sequence_classification_forward(model, kwargs["input_ids"])
    # the padding warning of GPT-2 & co. reads the ids' values, which meta
    # tensors lack; it only warns, so it is switched off for the forward
    for module in model.modules():
        if hasattr(module, "warn_if_padding_and_no_attention_mask"):
            module.warn_if_padding_and_no_attention_mask = lambda *args, **kwargs: None
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        out = model(**kwargs)
    tensors = [out[k] for k in ("logits", "start_logits", "end_logits", "last_hidden_state", "pooler_output",
                                 "encoder_last_hidden_state")
               if out.get(k) is not None]
    return {"outputs": [[list(t.shape), dtype_name(t.dtype)] for t in tensors],
            "flops": counter.get_total_flops()}
