"""The t5 family beyond the oracle's shapes: the command line gives an
encoder-decoder its two inputs (--input twice), an encoder-only class one;
bad inputs and configs fail naming what to give; flan-t5's summary says
how transformers ties its lm_head."""
import json

import pytest


def summary(mtk, *args):
    r = mtk("summary", *args, "--json", "--depth", "1")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_summary_takes_the_encoder_and_the_decoder_inputs(mtk):
    d = summary(mtk, "t5-base", "--input", "2x64", "--input", "2x9")
    assert d["input_shapes"] == [[2, 64], [2, 9]]
    # logits over the decoder's positions, then the encoder's last hidden state
    assert d["output_shapes"] == [[2, 9, 32128], [2, 64, 768]]
    assert d["total_params"] == 222_903_552


def test_an_encoder_decoder_with_one_input_says_to_give_the_decoders(mtk):
    r = mtk("summary", "t5-base", "--input", "1x64")
    assert r.returncode == 1
    assert "T5ForConditionalGeneration is an encoder-decoder" in r.stderr
    assert "--input 1x512 --input 1x64" in r.stderr


def test_encoder_and_decoder_batches_must_agree(mtk):
    r = mtk("summary", "t5-base", "--input", "1x64", "--input", "2x8")
    assert r.returncode == 1 and "a batch of 1, the decoder's of 2" in r.stderr


def test_the_encoder_model_takes_one_input(mtk, tmp_path):
    cfg = {"model_type": "t5", "architectures": ["T5EncoderModel"], "vocab_size": 40, "d_model": 16, "d_kv": 4,
           "d_ff": 24, "num_layers": 2, "num_heads": 2}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    d = summary(mtk, str(tmp_path), "--input", "3x11")
    assert d["output_shapes"] == [[3, 11, 16]]
    assert d["model"]["class"] == "T5EncoderModel"
    r = mtk("summary", str(tmp_path), "--input", "3x11", "--input", "3x4")
    assert r.returncode == 1 and "T5EncoderModel has no decoder" in r.stderr


def test_families_list_t5_with_its_input_kind(mtk):
    r = mtk("models", "--families", "--json")
    assert r.returncode == 0, r.stderr
    rows = {f["model_type"]: f for f in json.loads(r.stdout)["families"]}
    assert rows["t5"]["input"] == "seq2seq_ids"
    assert rows["t5"]["default_class"] == "T5Model"
    assert rows["bert"]["input"] == "token_ids"


def test_builtins_list_both_inputs_in_their_example(mtk):
    r = mtk("models", "--json")
    assert r.returncode == 0, r.stderr
    rows = {m["name"]: m for m in json.loads(r.stdout)["models"]}
    assert rows["t5-base"]["example_input"] == "1x512+1x128"
    assert rows["flan-t5-base"]["params"] == 222_903_552


@pytest.mark.parametrize("proj,words", [
    ("relu-gated", "'relu-gated' is not ACT or gated-ACT"),
    ("gated-gelu-new", "'gated-gelu-new' is not ACT or gated-ACT"),
    ("gated-swishy", "feed_forward_proj"),
])
def test_bad_feed_forward_proj_names_the_field(proj, words, mtk, tmp_path):
    cfg = {"model_type": "t5", "vocab_size": 40, "d_model": 16, "num_layers": 1, "num_heads": 2,
           "feed_forward_proj": proj}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    r = mtk("summary", str(tmp_path))
    assert r.returncode == 1 and words in r.stderr


def test_flan_t5_notes_that_from_pretrained_unties_lm_head(mtk):
    d = summary(mtk, "flan-t5-base", "--input", "1x8", "--input", "1x2")
    assert any("from_pretrained unties it" in note for note in d["notes"]), d["notes"]
    assert not summary(mtk, "t5-base", "--input", "1x8", "--input", "1x2")["notes"]


def _sequence_classifier(tmp_path):
    cfg = {"model_type": "t5", "architectures": ["T5ForSequenceClassification"], "vocab_size": 40, "d_model": 16,
           "d_kv": 4, "d_ff": 24, "num_layers": 2, "num_heads": 2, "num_labels": 3, "decoder_start_token_id": 0}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    return str(tmp_path)


def test_sequence_classification_takes_the_ids_and_pools_one_row_each(mtk, tmp_path):
    d = summary(mtk, _sequence_classifier(tmp_path), "--input", "3x11")
    assert d["input_shapes"] == [[3, 11]]
    assert d["output_shapes"] == [[3, 3]]


def test_sequence_classification_refuses_decoder_ids_of_another_length(mtk, tmp_path):
    r = mtk("summary", _sequence_classifier(tmp_path), "--input", "2x11", "--input", "2x5")
    assert r.returncode == 1
    assert "the decoder ids need the encoder's length 11, got 5" in r.stderr
