"""Absurd sizes are refused with the limit stated, before memory is
committed: a config of a billion layers, a split into a billion views."""
import json


def test_config_of_a_billion_layers_is_refused_with_the_limit(run, tmp_path):
    config = tmp_path / "config.json"
    config.write_text(json.dumps({
        "model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 64,
        "intermediate_size": 128, "num_attention_heads": 4, "num_hidden_layers": 10**9, "vocab_size": 100}))
    proc = run("summary", str(config), timeout=30)
    assert proc.returncode == 1
    assert "num_hidden_layers" in proc.stderr and "1000000000" in proc.stderr
    assert "limit of 100000 layers" in proc.stderr


def test_split_into_a_billion_pieces_is_refused_with_the_limit(run):
    proc = run("eval", "--json", "split(u8[0,2147483648,4294967297], 4, -1)", timeout=30)
    assert proc.returncode == 1, proc.stderr
    message = json.loads(proc.stdout)["error"]["message"]
    assert "1073741825 tensors" in message and "more than mtk's limit of 65536 tensors" in message


def test_unbind_of_a_billion_rows_is_refused_with_the_limit(run):
    proc = run("eval", "--json", "unbind(i8[1000000000])", timeout=30)
    assert proc.returncode == 1, proc.stderr
    assert "more than mtk's limit of 65536 tensors" in json.loads(proc.stdout)["error"]["message"]
