"""What transformers 5 computes for `mtk generate` and a padded `mtk run` on
T5ForConditionalGeneration: small random checkpoints saved with
save_pretrained (relu with the decoder's output scaled; gated-gelu as T5
v1.1 / flan-t5 with tie_word_embeddings false, so unscaled, once with the
lm_head tied as transformers 5 saves it and once with the checkpoint's own
lm_head.weight as flan-t5 ships it), a right-padded batch and its mask.

Per case, written once into root/<case>/:
  model/               the checkpoint (config, generation_config, safetensors)
  inputs.safetensors   input_ids (B, S), attention_mask, decoder_input_ids (B, T),
                       plain_ids (1, S): an unpadded row
  run_f32.safetensors  model(input_ids, attention_mask, decoder_input_ids):
                       logits, encoder_last_hidden_state
  run_bf16.safetensors the same from model.to(bfloat16)
  gen.safetensors      generate(do_sample=False, max_new_tokens=N): masked (the
                       padded batch with its mask) and masked_logits (N, B, V:
                       output_logits), plain (plain_ids, no mask, no eos)
  model_start/         (START_CASE only) the checkpoint with its
                       generation_config.json's decoder_start_token_id set to
                       START, which generate uses over the config's 0
  gen_start.safetensors  plain: generate(plain_ids) from model_start/
Runs in its own interpreter (run_isolated), as run_oracle.py does."""
import json
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
warnings.filterwarnings("ignore")

VOCAB, S, T, NEW = 101, 8, 5, 20
LENGTHS = (8, 5, 7)  # each row's tokens; the rest is padding (right, as T5's tokenizer pads)
# transformers 5.24's generate sizes the self-attention cache by num_layers: a decoder deeper than the
# encoder fails there (IndexError in DynamicCache.update), so the decoder is the shallower one
T5 = dict(d_model=32, d_kv=8, d_ff=48, num_layers=3, num_decoder_layers=2, num_heads=4, vocab_size=VOCAB,
          relative_attention_num_buckets=8, relative_attention_max_distance=20, decoder_start_token_id=0,
          pad_token_id=0, eos_token_id=1)
# a generation_config.json whose decoder_start_token_id differs from the config's
START_CASE, START = "relu_scaled", 7
# case -> (config fields, a checkpoint with its own lm_head.weight)
CASES = {
    "relu_scaled": (dict(T5), False),
    "gated_unscaled_tied": (dict(T5, feed_forward_proj="gated-gelu", tie_word_embeddings=False), False),
    "gated_untied_lm_head": (dict(T5, feed_forward_proj="gated-gelu", tie_word_embeddings=False), True),
}


def _make(case, root):
    import torch
    import transformers
    from safetensors.torch import load_file, save_file
    fields, own_head = CASES[case]
    torch.manual_seed(0)
    model = transformers.T5ForConditionalGeneration(transformers.T5Config(**fields)).eval()
    with torch.no_grad():  # norms away from their init
        for name, p in model.named_parameters():
            if p.ndim == 1:
                p.copy_(torch.randn_like(p) * 0.3 + 1.0)
    d = root / case
    model.save_pretrained(d / "model")
    if own_head:  # flan-t5's layout: lm_head.weight beside shared.weight, other values
        path = d / "model" / "model.safetensors"
        sd = load_file(str(path))
        sd["lm_head.weight"] = torch.randn(VOCAB, fields["d_model"], generator=torch.Generator().manual_seed(3))
        save_file(sd, str(path), metadata={"format": "pt"})
        model = transformers.T5ForConditionalGeneration.from_pretrained(d / "model").eval()
        assert not torch.equal(model.lm_head.weight, model.shared.weight)
    g = torch.Generator().manual_seed(5)
    ids = torch.randint(2, VOCAB, (len(LENGTHS), S), generator=g)
    mask = torch.zeros_like(ids)
    for r, n in enumerate(LENGTHS):
        ids[r, n - 1] = 1  # eos ends each row's tokens
        ids[r, n:] = 0
        mask[r, :n] = 1
    dec = torch.randint(2, VOCAB, (len(LENGTHS), T), generator=g)
    dec[:, 0] = 0
    plain = torch.randint(2, VOCAB, (1, S), generator=g)
    save_file({"input_ids": ids, "attention_mask": mask, "decoder_input_ids": dec, "plain_ids": plain},
              str(d / "inputs.safetensors"))
    names = ("logits", "encoder_last_hidden_state")
    with torch.no_grad():
        out = model(input_ids=ids, attention_mask=mask, decoder_input_ids=dec)
        save_file({n: out[n].contiguous() for n in names}, str(d / "run_f32.safetensors"))
        gen = model.generate(ids, attention_mask=mask, do_sample=False, max_new_tokens=NEW,
                             return_dict_in_generate=True, output_logits=True)
        plain_gen = model.generate(plain, do_sample=False, max_new_tokens=NEW, eos_token_id=None)
        save_file({"masked": gen.sequences.contiguous(), "masked_logits": torch.stack(gen.logits).contiguous(),
                   "plain": plain_gen.contiguous()}, str(d / "gen.safetensors"))
        bf16 = model.to(torch.bfloat16)(input_ids=ids, attention_mask=mask, decoder_input_ids=dec)
        save_file({n: bf16[n].contiguous() for n in names}, str(d / "run_bf16.safetensors"))
    if case == START_CASE:
        shutil.copytree(d / "model", d / "model_start")
        path = d / "model_start" / "generation_config.json"
        gen_config = json.loads(path.read_text())
        gen_config["decoder_start_token_id"] = START
        path.write_text(json.dumps(gen_config))
        started = transformers.T5ForConditionalGeneration.from_pretrained(d / "model_start").eval()
        assert started.generation_config.decoder_start_token_id == START
        with torch.no_grad():
            out = started.generate(plain, do_sample=False, max_new_tokens=NEW, eos_token_id=None)
        assert out[0, 0].item() == START
        save_file({"plain": out.contiguous()}, str(d / "gen_start.safetensors"))
    (d / "case.json").write_text(json.dumps({"outputs": list(names), "new_tokens": NEW}))


def fixtures(root):
    root = Path(root)
    for case in CASES:
        if not (root / case / "case.json").exists():
            _make(case, root)
    return root


def run_isolated(root):
    subprocess.run([sys.executable, __file__, str(root)], check=True)


if __name__ == "__main__":
    fixtures(sys.argv[1])
