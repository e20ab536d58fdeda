"""FLOPs: `mtk eval --flops` against torch.utils.flop_counter.FlopCounterMode
on random valid calls of the ops it counts (matmul family, linear,
convolutions and transposed ones, scaled_dot_product_attention), drawn by
the oracle's generator, on the meta device.

    MTK_FLOPS_CASES=100 MTK_ORACLE_SEED=3 pytest tests/oracle/test_flops.py
"""

import json
import os
import subprocess

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

import gen
import harness
import torch_eval

CASES_PER_OP = int(os.environ.get("MTK_FLOPS_CASES", "30"))

FLOP_OPS = ["matmul", "mm", "bmm", "mv", "dot", "linear",
            "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
            "scaled_dot_product_attention"]


def _rows():
    """The table's rows of FLOP_OPS, pending families included."""
    rows = {op.name: op for op in gen.FAMILY_OPS}
    rows.update(gen.OPS_BY_NAME)
    return [rows[name] for name in FLOP_OPS if name in rows]


def torch_flops(expr: str):
    """FlopCounterMode's total for the expression on meta; None when torch
    refuses the call."""
    with FlopCounterMode(display=False) as counter:
        outcome = torch_eval.evaluate(expr, "meta")
    if "error" in outcome.result:
        return None
    return counter.get_total_flops()


def mtk_flops(exprs):
    cmd = [harness.mtk_bin(), "eval", "--json", "--flops", "--batch", "-"]
    proc = subprocess.run(cmd, input="".join(e + "\n" for e in exprs), capture_output=True, text=True,
                          timeout=300)
    lines = proc.stdout.splitlines()
    assert len(lines) == len(exprs), proc.stderr[-400:]
    return [json.loads(line) for line in lines]


def test_rows_exist_for_every_counted_op():
    if os.environ.get("MTK_ORACLE_FAMILIES"):
        pytest.skip("MTK_ORACLE_FAMILIES leaves some families' rows out")
    assert [op.name for op in _rows()] == FLOP_OPS


@pytest.mark.parametrize("op", _rows(), ids=lambda op: op.name)
def test_flops_equal_flop_counter_mode(op):
    exprs = [e for e in gen.generate_for_op(op, harness.seed(), CASES_PER_OP, "meta", 0.0)]
    answers = mtk_flops(exprs)
    problems, counted = [], 0
    for expr, answer in zip(exprs, answers):
        want = torch_flops(expr)
        if want is None:
            continue  # an invalid call: the oracle tests judge errors
        if "error" in answer:
            problems.append("%s\n    mtk refused: %s" % (expr, answer["error"]["message"]))
            continue
        counted += 1
        if answer["flops"] != want:
            problems.append("%s\n    mtk %d, FlopCounterMode %d" % (expr, answer["flops"], want))
    assert counted >= CASES_PER_OP // 2, "too few valid calls of %s: %d" % (op.name, counted)
    assert not problems, "%s: %d of %d disagree\n  %s" % (op.name, len(problems), counted,
                                                           "\n  ".join(problems[:10]))
