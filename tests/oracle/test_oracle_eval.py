"""The oracle: thousands of random expressions (and a fixed regression list)
evaluated by `mtk eval --json --batch -` on the meta device and by PyTorch,
which must agree 100% on shape, dtype, strides, storage offset, device and
error/no-error; and the same expressions on cpu (zero-filled literals)
against torch's cpu device.

    MTK_BIN=build/mtk MTK_ORACLE_CASES=20000 MTK_ORACLE_SEED=7 pytest tests/oracle
"""

import os
import re

import pytest

import gen
import harness
import torch_eval

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture(scope="module", autouse=True)
def mtk_binary():
    path = harness.mtk_bin()
    if not os.access(path, os.X_OK):
        pytest.fail("no mtk binary at %s: build it (cmake --build build) or set MTK_BIN" % path)
    return path


def _assert_agree(title, exprs, device="meta"):
    found = harness.compare_with_torch(exprs, device)
    if found:
        pytest.fail(harness.failure_report(title, len(exprs), found), pytrace=False)


def test_random_expressions_agree_with_torch():
    seed, count = harness.seed(), harness.case_count()
    exprs = gen.generate(seed, count)
    _assert_agree("random expressions (MTK_ORACLE_SEED=%d, MTK_ORACLE_CASES=%d)"
                  % (seed, count), exprs)


def test_random_expressions_on_cpu_agree_with_torch_cpu():
    """The same expressions with zero-filled cpu literals (--device cpu):
    metadata and errors as torch's cpu device gives them."""
    seed, count = harness.seed(), harness.case_count()
    exprs = gen.generate(seed, count)
    _assert_agree("random expressions on cpu (MTK_ORACLE_SEED=%d, MTK_ORACLE_CASES=%d)"
                  % (seed, count), exprs, "cpu")


def test_regression_cases_agree_with_torch():
    exprs = harness.load_cases(os.path.join(HERE, "cases.txt"))
    _assert_agree("tests/oracle/cases.txt", exprs)


def test_cpu_regression_cases_agree_with_torch_cpu():
    exprs = harness.load_cases(os.path.join(HERE, "cases_cpu.txt"))
    _assert_agree("tests/oracle/cases_cpu.txt", exprs, "cpu")


def test_generator_covers_every_op_with_valid_and_invalid_calls():
    """Not an mtk test: the generator's mix, judged by torch alone, so that a
    harness change cannot quietly stop testing something."""
    exprs = gen.generate(harness.seed(), 8000)  # enough for every one of ~270 ops to appear
    errors = sum(harness.is_error(torch_eval.evaluate(e).result) for e in exprs)
    assert 0.15 * len(exprs) < errors < 0.45 * len(exprs), errors
    seen = {harness.op_of(e) for e in exprs}   # the last part of a dotted name
    missing = [op.name for op in gen.OPS if op.name.split(".")[-1] not in seen]
    assert not missing, missing


def _one(expr, device="meta"):
    [answer] = harness.run_batch([expr], device)
    return answer


def test_copy_out_of_meta_tensor_fails_with_to_empty_hint():
    answer = _one("to(f32[3,4], 'cpu')")
    assert harness.is_error(answer), answer
    assert answer["error"]["code"] == "meta_no_data", answer
    message = answer["error"]["message"]
    assert "Cannot copy out of meta tensor; no data!" in message, message
    assert "to_empty" in message, message


def test_item_of_meta_tensor_fails_like_torch():
    answer = _one("item(f32[])")
    assert harness.is_error(answer), answer
    assert answer["error"]["code"] == "meta_no_data", answer
    assert "Tensor.item() cannot be called on meta tensors" in answer["error"]["message"]


def test_nonzero_on_meta_says_output_size_depends_on_data():
    answer = _one("nonzero(f32[3])")
    assert harness.is_error(answer), answer
    assert answer["error"]["code"] == "data_dependent", answer
    message = answer["error"]["message"]
    assert "nonzero" in message, message
    assert re.search(r"size .*depends on (the )?data", message), message


def test_cpu_copy_of_meta_tensor_works_after_to_empty():
    answer = _one("to(to_empty(f32[3,4], device='cpu'), 'cpu')")
    assert not harness.is_error(answer), answer
    assert answer["device"] == "cpu" and answer["shape"] == [3, 4], answer
