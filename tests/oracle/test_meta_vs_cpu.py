"""Meta and cpu cannot drift apart: for every op of the generator's table,
expressions over tensors with real data (arange/linspace/reshape built inside
the expression) are run through mtk on meta and on cpu (--values), and

  * the cpu result's shape, dtype, strides and storage offset equal the meta
    result's, and one errors only where the other does (unless torch's own
    meta and cpu results differ the same way);
  * the cpu values equal torch's cpu values: float32 within rtol 1e-5,
    float16/bfloat16 looser, integers and bools exactly, NaN equal to NaN.
"""

import os

import pytest

import gen
import harness
import torch_eval

CASES_PER_OP = int(os.environ.get("MTK_META_CPU_CASES", "40"))
INVALID_SHARE = 0.1
BY_DESIGN_META_ERRORS = harness.BY_DESIGN_META_ERRORS
METADATA = ("shape", "dtype", "stride", "storage_offset")


@pytest.fixture(scope="module")
def runs():
    """op name -> [(expr, mtk meta answer, mtk cpu answer)], from one mtk
    process per device."""
    path = harness.mtk_bin()
    if not os.access(path, os.X_OK):
        pytest.fail("no mtk binary at %s: build it (cmake --build build) or set MTK_BIN" % path)
    seed = harness.seed()
    cases = [(op.name, e) for op in gen.OPS
             for e in gen.generate_for_op(op, seed, CASES_PER_OP, "values", INVALID_SHARE)]
    exprs = [e for _, e in cases]
    meta = harness.run_batch(exprs, "meta")
    cpu = harness.run_batch(exprs, "cpu", values=True)
    out = {op.name: [] for op in gen.OPS}
    for (name, expr), m, c in zip(cases, meta, cpu):
        out[name].append((expr, m, c))
    return out


def _torch_differs_alike(expr, meta, cpu):
    """True when torch's own meta and cpu results differ as mtk's do (a
    device transition: to(x, 'meta') of a cpu tensor is a new tensor)."""
    torch_meta = torch_eval.evaluate(expr, "meta").result
    torch_cpu = torch_eval.evaluate(expr, "cpu").result
    return (harness.metadata_diff(meta, torch_meta, METADATA) is None and
            harness.metadata_diff(cpu, torch_cpu, METADATA) is None)


def _report(op, seed, problems):
    head = "%s: %d problem(s) (MTK_ORACLE_SEED=%d)" % (op, len(problems), seed)
    return "\n".join([head] + problems[:30])


def _line(expr, label_a, a, label_b, b, why):
    return "  %s\n    %s %s\n    %s %s\n    (%s)" % (
        expr, label_a, harness.short(a), label_b, harness.short(b), why)


@pytest.mark.parametrize("op", [op.name for op in gen.OPS])
def test_cpu_metadata_equals_meta_metadata(op, runs):
    problems = []
    for expr, meta, cpu in runs[op]:
        if harness._no_answer(meta) or harness._no_answer(cpu):
            problems.append(_line(expr, "meta:", meta, "cpu: ", cpu, "mtk gave no answer"))
            continue
        if harness.is_error(meta) and meta["error"].get("code") in BY_DESIGN_META_ERRORS:
            continue
        meta_err, cpu_err = harness.is_error(meta), harness.is_error(cpu)
        if meta_err != cpu_err:
            torch_meta = harness.is_error(torch_eval.evaluate(expr, "meta").result)
            torch_cpu = harness.is_error(torch_eval.evaluate(expr, "cpu").result)
            if (torch_meta, torch_cpu) != (meta_err, cpu_err):
                problems.append(_line(expr, "meta:", meta, "cpu: ", cpu,
                                      "an error on one device only"))
            continue
        if not meta_err:
            why = harness.metadata_diff(cpu, meta, METADATA)
            if why and not _torch_differs_alike(expr, meta, cpu):
                problems.append(_line(expr, "meta:", meta, "cpu: ", cpu, why))
    if problems:
        pytest.fail(_report(op, harness.seed(), problems), pytrace=False)


def _values_diff(mtk, ref, with_values, op=None):
    """None when mtk's cpu answer has torch's shape, dtype and values."""
    if isinstance(ref, list) or isinstance(mtk, list):
        if not (isinstance(ref, list) and isinstance(mtk, list)) or len(ref) != len(mtk):
            return "different result structure"
        for i, (a, b) in enumerate(zip(mtk, ref)):
            why = _values_diff(a, b, with_values, op)
            if why:
                return "[%d] %s" % (i, why)
        return None
    if "scalar" in ref:
        return harness.metadata_diff(mtk, ref)
    if "shape" not in ref:
        return None
    why = harness.metadata_diff(mtk, ref, ("shape", "dtype", "device"))
    if why or not with_values or "values" not in ref:
        return why
    if "values" not in mtk:
        return "mtk printed no values"
    if not harness.values_equal(mtk["values"], ref["values"], ref["dtype"], op):
        return "values differ"
    return None


@pytest.mark.parametrize("op", [op.name for op in gen.OPS])
def test_cpu_values_equal_torch_values(op, runs):
    spec = gen.OPS_BY_NAME[op]
    problems = []
    for expr, _, cpu in runs[op]:
        if harness._no_answer(cpu):
            problems.append(_line(expr, "mtk:  ", cpu, "torch:", None, "mtk gave no answer"))
            continue
        ref = torch_eval.evaluate(expr, "cpu", values=True).result
        mtk_err, ref_err = harness.is_error(cpu), harness.is_error(ref)
        if mtk_err and ref_err:
            continue
        if ref_err:
            # torch's cpu kernel lacks a dtype that torch's meta accepts:
            # mtk may implement it
            if "not implemented for '" in ref["error"]["message"]:
                continue
            problems.append(_line(expr, "mtk:  ", cpu, "torch:", ref, "mtk accepted what torch refuses"))
            continue
        if mtk_err:
            # torch's cpu kernel takes what its meta kernel refuses (mixed
            # dtypes in an empty bmm): mtk may refuse it on both devices
            torch_meta = torch_eval.evaluate(expr, "meta").result
            if harness.is_error(torch_meta) and \
                    torch_meta["error"]["code"] not in BY_DESIGN_META_ERRORS:
                continue
            problems.append(_line(expr, "mtk:  ", cpu, "torch:", ref, "mtk refused a valid call"))
            continue
        why = _values_diff(cpu, ref, spec.has_values, op)
        if why:
            problems.append(_line(expr, "mtk:  ", cpu, "torch:", ref, why))
    if problems:
        pytest.fail(_report(op, harness.seed(), problems), pytrace=False)
