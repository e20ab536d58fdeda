"""Quantized storage (src/models/quant.c) against what transformers 5.24's
quantizer makes of the same model: fp8 block-wise (DeepSeek-V3's
quantization_config) through FineGrainedFP8HfQuantizer.preprocess_model on
the meta device, compared on parameters (names, order, shapes, dtypes,
requires_grad), state dict and counts; mxfp4 (gpt-oss's storage, whose
transformers side needs gpt_oss and a hub kernel) on a hand-made qwen3_moe
config against the published checkpoints' layout; and DeepSeek-V3's
weight bytes against its published checkpoint."""
import copy
import json

import pytest
import torch

import hf_oracle
from test_zoo_oracle import assert_same_model

FP8 = {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8", "weight_block_size": [128, 128]}


def _deepseek(**over):
    cfg = {"model_type": "deepseek_v3", "architectures": ["DeepseekV3ForCausalLM"], "vocab_size": 301,
           "hidden_size": 260, "intermediate_size": 300, "moe_intermediate_size": 200, "num_hidden_layers": 3,
           "num_attention_heads": 2, "num_key_value_heads": 2, "q_lora_rank": 130, "kv_lora_rank": 100,
           "qk_nope_head_dim": 64, "qk_rope_head_dim": 32, "v_head_dim": 60, "n_routed_experts": 4, "n_group": 2,
           "topk_group": 1, "num_experts_per_tok": 2, "first_k_dense_replace": 1, "torch_dtype": "bfloat16",
           "quantization_config": dict(FP8)}
    cfg.update(over)
    return cfg


FP8_CASES = [
    ("deepseek-fp8", _deepseek()),
    ("deepseek-fp8-no-q-lora-bias", _deepseek(q_lora_rank=None, attention_bias=True)),
    ("deepseek-fp8-blocks-16x48", _deepseek(quantization_config=dict(FP8, weight_block_size=[16, 48]))),
    ("deepseek-fp8-skip", _deepseek(quantization_config=dict(
        FP8, modules_to_not_convert=["model.layers.*.self_attn.kv_b_proj", "model.layers.2.mlp.experts", "o_proj"]))),
    ("deepseek-fp8-token-classification", _deepseek(architectures=["DeepseekV3ForTokenClassification"], num_labels=3)),
]


def _hf_quantized(cfg, directory):
    config = hf_oracle.hf_config(cfg, directory)
    return hf_oracle.describe_quantized(config)


@pytest.mark.parametrize("case_id,cfg", FP8_CASES, ids=[c[0] for c in FP8_CASES])
def test_fp8_storage_matches_transformers_quantizer(case_id, cfg, zoo_probe, tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    got = zoo_probe([(str(tmp_path / "config.json"), [(1, 5)])])[0]
    want = _hf_quantized(cfg, str(tmp_path))
    assert_same_model(got, want)
    assert any(r[2] == "float8_e4m3fn" for r in got["state_dict"])
    # and the forward still runs on meta, with the dense model's output
    assert got["forwards"][0]["outputs"] == [[[1, 5, cfg.get("num_labels", 3) if "Token" in cfg["architectures"][0]
                                               else cfg["vocab_size"]], "bfloat16"]]


def _bytes(rows):
    size = {"float8_e4m3fn": 1, "uint8": 1, "bfloat16": 2, "float32": 4}
    total = 0
    for _, shape, dtype in rows:
        n = 1
        for d in shape:
            n *= d
        total += n * size[dtype]
    return total


MXFP4 = {"quant_method": "mxfp4",
         "modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.gate", "model.embed_tokens",
                                    "lm_head", "model.layers.1.mlp.experts"]}
QWEN3_MOE = {"model_type": "qwen3_moe", "architectures": ["Qwen3MoeForCausalLM"], "vocab_size": 97, "hidden_size": 64,
             "intermediate_size": 96, "moe_intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 4,
             "num_key_value_heads": 2, "head_dim": 16, "num_experts": 4, "num_experts_per_tok": 2,
             "torch_dtype": "bfloat16", "quantization_config": MXFP4}


def test_mxfp4_stores_expert_blocks_and_scales_as_gpt_oss_checkpoints(zoo_probe, tmp_path):
    """gpt-oss's checkpoints: <name>_blocks uint8 (E, rows, cols/32, 16) and
    <name>_scales uint8 (E, rows, cols/32) for the experts' matrices, other
    weights untouched; modules_to_not_convert keeps layer 1's experts."""
    (tmp_path / "q.json").write_text(json.dumps(QWEN3_MOE))
    dense = dict(QWEN3_MOE)
    del dense["quantization_config"]
    (tmp_path / "d.json").write_text(json.dumps(dense))
    got, base = zoo_probe([(str(tmp_path / "q.json"), [(2, 3)]), (str(tmp_path / "d.json"), [(2, 3)])])
    assert "error" not in got, got.get("error")
    sd = {r[0]: r[1:] for r in got["state_dict"]}
    e, i, h = 4, 96, 64
    assert sd["model.layers.0.mlp.experts.gate_up_proj_blocks"] == [[e, 2 * i, h // 32, 16], "uint8"]
    assert sd["model.layers.0.mlp.experts.gate_up_proj_scales"] == [[e, 2 * i, h // 32], "uint8"]
    assert sd["model.layers.0.mlp.experts.down_proj_blocks"] == [[e, h, i // 32, 16], "uint8"]
    assert sd["model.layers.0.mlp.experts.down_proj_scales"] == [[e, h, i // 32], "uint8"]
    assert "model.layers.0.mlp.experts.gate_up_proj" not in sd
    assert sd["model.layers.1.mlp.experts.gate_up_proj"] == [[e, 2 * i, h], "bfloat16"]
    # everything else as the dense model's
    dense_sd = {r[0]: r[1:] for r in base["state_dict"]}
    assert {k: v for k, v in sd.items() if "layers.0.mlp.experts" not in k} == \
        {k: v for k, v in dense_sd.items() if "layers.0.mlp.experts" not in k}
    # 4.25 bits a weight: half a byte, plus a byte per 32
    expert_weights = e * (2 * i * h + h * i)
    assert _bytes(got["state_dict"]) == _bytes(base["state_dict"]) - 2 * expert_weights + expert_weights // 2 + \
        expert_weights // 32
    assert got["forwards"][0]["outputs"] == base["forwards"][0]["outputs"]


def test_mxfp4_refuses_columns_that_are_not_whole_blocks(zoo_probe, tmp_path):
    cfg = dict(QWEN3_MOE, hidden_size=40, head_dim=10, quantization_config={"quant_method": "mxfp4"})
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    got = zoo_probe([(str(tmp_path / "config.json"), [(1, 2)])])[0]
    assert "mxfp4 packs blocks of 32 values" in got["error"]


def test_unknown_quant_method_is_a_note_not_an_error(mtk, tmp_path):
    cfg = dict(QWEN3_MOE, quantization_config={"quant_method": "bitsandbytes"})
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    result = mtk("summary", str(tmp_path / "config.json"), "--json", "--depth", "0", "--input", "1x4")
    assert result.returncode == 0, result.stderr
    notes = json.loads(result.stdout)["notes"]
    assert any("quant_method 'bitsandbytes' is not modelled (supported: fp8, mxfp4)" in n for n in notes), notes


def test_deepseek_v3_weight_bytes_are_its_checkpoint_minus_the_mtp_layer(builtin_answers_quant):
    """The published DeepSeek-V3 index (163 shards) totals 688.6 GB: the 61
    layers transformers builds plus model.layers.61, the multi-token
    prediction module (a MoE decoder layer in fp8, its own embed_tokens and
    shared_head.head in bf16, enorm/hnorm/norm, eh_proj 7168 x 14336 in
    fp8), which transformers skips."""
    got = builtin_answers_quant
    ours = _bytes(got["state_dict"])
    assert ours == 673_363_472_736
    layer60 = _bytes([r for r in got["state_dict"] if ".layers.60." in r[0]])
    mtp_extra = 2 * 129280 * 7168 * 2 + 3 * 7168 * 2 + 7168 * 14336 + 56 * 112 * 4
    total = ours + layer60 + mtp_extra
    assert abs(total - 688_586_727_753) / 688_586_727_753 < 0.0002, total


@pytest.fixture(scope="module")
def builtin_answers_quant(zoo_probe):
    return zoo_probe([("deepseek-v3", [(1, 4)])])[0]


def _gpt_oss_checkpoint(experts, layers, vocab=201088, hidden=2880, inter=2880, heads=64, kv_heads=8, head_dim=64):
    """The tensors of the published openai/gpt-oss-* safetensors, written
    out from the checkpoint's listing (not from mtk): the experts' mxfp4
    blocks and scales (E, out, in/32, 16) and (E, out, in/32) in uint8,
    everything else bf16."""
    rows = [["model.embed_tokens.weight", [vocab, hidden], "bfloat16"]]
    for n in range(layers):
        p = "model.layers.%d." % n
        q, kv = heads * head_dim, kv_heads * head_dim
        rows += [[p + "input_layernorm.weight", [hidden], "bfloat16"],
                 [p + "post_attention_layernorm.weight", [hidden], "bfloat16"],
                 [p + "self_attn.q_proj.weight", [q, hidden], "bfloat16"], [p + "self_attn.q_proj.bias", [q], "bfloat16"],
                 [p + "self_attn.k_proj.weight", [kv, hidden], "bfloat16"],
                 [p + "self_attn.k_proj.bias", [kv], "bfloat16"],
                 [p + "self_attn.v_proj.weight", [kv, hidden], "bfloat16"],
                 [p + "self_attn.v_proj.bias", [kv], "bfloat16"],
                 [p + "self_attn.o_proj.weight", [hidden, q], "bfloat16"],
                 [p + "self_attn.o_proj.bias", [hidden], "bfloat16"], [p + "self_attn.sinks", [heads], "bfloat16"],
                 [p + "mlp.router.weight", [experts, hidden], "bfloat16"],
                 [p + "mlp.router.bias", [experts], "bfloat16"],
                 [p + "mlp.experts.gate_up_proj_blocks", [experts, 2 * inter, hidden // 32, 16], "uint8"],
                 [p + "mlp.experts.gate_up_proj_scales", [experts, 2 * inter, hidden // 32], "uint8"],
                 [p + "mlp.experts.gate_up_proj_bias", [experts, 2 * inter], "bfloat16"],
                 [p + "mlp.experts.down_proj_blocks", [experts, hidden, inter // 32, 16], "uint8"],
                 [p + "mlp.experts.down_proj_scales", [experts, hidden, inter // 32], "uint8"],
                 [p + "mlp.experts.down_proj_bias", [experts, hidden], "bfloat16"]]
    return rows + [["model.norm.weight", [hidden], "bfloat16"], ["lm_head.weight", [vocab, hidden], "bfloat16"]]


@pytest.mark.parametrize("name,experts,layers,total_bytes,params", [
    ("gpt-oss-20b", 32, 24, 13_761_264_768, 20_914_757_184),
    ("gpt-oss-120b", 128, 36, 65_248_815_744, 116_829_156_672),
])
def test_gpt_oss_summary_weighs_its_published_checkpoint(name, experts, layers, total_bytes, params, mtk, zoo_probe):
    """gpt-oss ships its experts in mxfp4: gpt-oss-20b's safetensors hold
    13,761,264,768 bytes of weights (10,152,345,600 of uint8 blocks and
    scales, 3,608,919,168 of bf16), not the 41.8 GB of a bf16 model; the
    summary weighs that, counts the model card's parameters (unpacked
    values) and runs its meta forward."""
    want = _gpt_oss_checkpoint(experts, layers)
    assert _bytes(want) == total_bytes
    got = zoo_probe([(name, [(1, 8)])])[0]
    assert "error" not in got, got.get("error")
    assert sorted(got["state_dict"]) == sorted(want)
    result = mtk("summary", name, "--json", "--depth", "0", "--input", "1x8")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["param_bytes"] == total_bytes
    assert summary["param_bytes_by_dtype"]["uint8"] == _bytes([r for r in want if r[2] == "uint8"])
    assert summary["total_params"] == params
    assert summary["output_shapes"] == [[1, 8, 201088]]
    assert any("mxfp4" in note for note in summary["notes"]), summary["notes"]


def test_mxfp4_gpt_oss_forward_unpacks_to_the_dense_layout(zoo_probe, tmp_path):
    """A small gpt_oss with mxfp4 experts: the experts' checkpoint storage
    (blocks of the transpose of transformers' (E, H, 2I)), and a meta
    forward whose outputs and FLOPs are the dense model's."""
    cfg = {"model_type": "gpt_oss", "architectures": ["GptOssForCausalLM"], "vocab_size": 97, "hidden_size": 64,
           "intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
           "head_dim": 16, "num_local_experts": 4, "num_experts_per_tok": 2, "torch_dtype": "bfloat16",
           "quantization_config": {"quant_method": "mxfp4", "modules_to_not_convert": [
               "model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"]}}
    (tmp_path / "q.json").write_text(json.dumps(cfg))
    dense = dict(cfg)
    del dense["quantization_config"]
    (tmp_path / "d.json").write_text(json.dumps(dense))
    got, base = zoo_probe([(str(tmp_path / "q.json"), [(2, 5)]), (str(tmp_path / "d.json"), [(2, 5)])])
    assert "error" not in got, got.get("error")
    sd = {r[0]: r[1:] for r in got["state_dict"]}
    assert sd["model.layers.1.mlp.experts.gate_up_proj_blocks"] == [[4, 192, 2, 16], "uint8"]
    assert sd["model.layers.1.mlp.experts.down_proj_scales"] == [[4, 64, 3], "uint8"]
    assert sd["model.layers.1.mlp.experts.gate_up_proj_bias"] == [[4, 192], "bfloat16"]
    assert got["num_params"] == base["num_params"]
    assert got["forwards"] == base["forwards"]


def test_models_list_says_how_quantized_builtins_weigh(mtk):
    """`mtk models` counts gpt-oss-20b's 20.9B parameters (the card's) and
    its notes say the weights take the checkpoint's 13.76 GB, not bf16's
    41.8 GB; param_bytes gives the bytes of every built-in."""
    rows = {r["name"]: r for r in json.loads(mtk("models", "--json").stdout)["models"]}
    assert rows["gpt-oss-20b"]["params"] == 20_914_757_184
    assert rows["gpt-oss-20b"]["param_bytes"] == 13_761_264_768
    assert rows["llama-3-8b"]["param_bytes"] == 2 * rows["llama-3-8b"]["params"]
    text = mtk("models").stdout
    assert "gpt-oss-20b: quantization_config: 24 expert modules store mxfp4 weights" in text
    assert "20,914,757,184 parameters (unpacked values) in 13,761,264,768 bytes, not the 41,829,514,368 of " \
           "bfloat16" in text
