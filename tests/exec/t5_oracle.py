"""What transformers 5 computes for `mtk run` on an encoder-decoder: small
random T5ForConditionalGeneration (relu, untied-scaling off) and T5Model
(gated-gelu) checkpoints saved with save_pretrained, and their outputs on
encoder ids (B, S) and decoder ids (B, T) of another length: the decoder's
logits / last_hidden_state and encoder_last_hidden_state, in float32.

Runs in its own interpreter (run_isolated), as run_oracle.py does.
fixtures(root) writes root/<case>/ once: model/, inputs.safetensors
(input_ids, decoder_input_ids), f32.safetensors, case.json."""
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
warnings.filterwarnings("ignore")

B, S, T, VOCAB = 2, 9, 5, 101
T5 = dict(d_model=32, d_kv=8, d_ff=48, num_layers=2, num_decoder_layers=3, num_heads=4, vocab_size=VOCAB,
          relative_attention_num_buckets=8, relative_attention_max_distance=20)
# case -> (model class, config fields, output names)
CASES = {
    "t5_lm": ("T5ForConditionalGeneration", dict(T5), ("logits", "encoder_last_hidden_state")),
    "t5_gated_base": ("T5Model", dict(T5, feed_forward_proj="gated-gelu", tie_word_embeddings=False),
                      ("last_hidden_state", "encoder_last_hidden_state")),
}


def _make(case, root):
    import torch
    import transformers
    from safetensors.torch import save_file
    cls, fields, names = CASES[case]
    torch.manual_seed(0)
    model = getattr(transformers, cls)(transformers.T5Config(**fields)).eval()
    with torch.no_grad():  # norms away from their init
        for name, p in model.named_parameters():
            if p.ndim == 1:
                p.copy_(torch.randn_like(p) * 0.3 + 1.0)
    d = root / case
    model.save_pretrained(d / "model")
    g = torch.Generator().manual_seed(5)
    inputs = {"input_ids": torch.randint(2, VOCAB, (B, S), generator=g),
              "decoder_input_ids": torch.randint(2, VOCAB, (B, T), generator=g)}
    save_file(inputs, str(d / "inputs.safetensors"))
    with torch.no_grad():
        out = model(**inputs)
    save_file({n: out[n].contiguous() for n in names}, str(d / "f32.safetensors"))
    (d / "case.json").write_text(json.dumps({"class": cls, "outputs": list(names)}))


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
