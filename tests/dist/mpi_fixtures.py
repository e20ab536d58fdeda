"""Checkpoints for the MPI load tests, written by transformers 5's
save_pretrained (its own on-disk layout) in a subprocess of their own:
python3 mpi_fixtures.py ROOT writes ROOT/<case>/ (config.json, the
safetensors and state_dict.json: the model's state-dict names, shapes and
dtypes, which the tests' plans split).

  llama_sharded  LlamaForCausalLM, saved in shards with an index.json
  mixtral        MixtralForCausalLM: transformers 5 fuses the experts in
                 the model (experts.gate_up_proj) but saves them per expert,
                 so a slice of a fused tensor is read from several keys
  gpt2           GPT2LMHeadModel: transformer. prefix, Conv1D weights, tied
                 lm_head
  mixtral_tp     MixtralForCausalLM that tensor parallelism divides (vocab
                 96, 2 kv heads, 4 experts): the plans of `mtk shard`"""
import json
import os
import sys
import warnings
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import torch  # noqa: E402
import transformers  # noqa: E402

warnings.filterwarnings("ignore")
transformers.logging.set_verbosity_error()

# vocab 97 and 3 kv heads: splits that are uneven at 2, 3 and 4 ranks
DECODER = dict(hidden_size=48, intermediate_size=80, num_hidden_layers=3, num_attention_heads=6,
               num_key_value_heads=3, vocab_size=97, max_position_embeddings=64)

CASES = {
    "llama_sharded": ("LlamaConfig", "LlamaForCausalLM", dict(DECODER, tie_word_embeddings=False), "60KB"),
    "mixtral": ("MixtralConfig", "MixtralForCausalLM", dict(DECODER, num_local_experts=3, num_experts_per_tok=2),
                None),
    "mixtral_tp": ("MixtralConfig", "MixtralForCausalLM",
                   dict(DECODER, num_attention_heads=4, num_key_value_heads=2, vocab_size=96, num_local_experts=4,
                        num_experts_per_tok=2), None),
    "gpt2": ("GPT2Config", "GPT2LMHeadModel", dict(n_embd=48, n_layer=3, n_head=6, vocab_size=97, n_positions=64,
                                                  bos_token_id=0, eos_token_id=0), None),
}


def write(root, case):
    config_cls, model_cls, fields, shard = CASES[case]
    torch.manual_seed(0)
    config = getattr(transformers, config_cls)(**fields)
    model = getattr(transformers, model_cls)(config)
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():  # values away from any init, so a misplaced read shows
        for _, p in model.named_parameters():
            p.copy_(torch.randn(p.shape, generator=gen))
    out = root / case
    kwargs = {"max_shard_size": shard} if shard else {}
    model.save_pretrained(out, **kwargs)
    seen, sd = set(), []
    for k, v in model.state_dict().items():  # a tied tensor once, by its first name (as saved)
        if v.data_ptr() in seen:
            continue
        seen.add(v.data_ptr())
        sd.append({"name": k, "shape": list(v.shape), "dtype": str(v.dtype).removeprefix("torch.")})
    (out / "state_dict.json").write_text(json.dumps(sd))


if __name__ == "__main__":
    root = Path(sys.argv[1])
    for case in sys.argv[2:] or CASES:
        write(root, case)
    (root / "done").write_text("ok")
