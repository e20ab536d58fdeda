"""mtk memory against torch 2.13's measured peaks (tests/plan/torch_memory.py,
cached in torch_memory_cache.json): every causal-LM family x float32/bfloat16
x eager/sdpa x {training with AdamW or SGD, inference}, with and without
gradient checkpointing; the MoE families also with transformers' grouped_mm
experts (torch_memory_grouped.py, sizes aligned as torch's cpu kernel needs).  Peaks within 3% of torch's for every configuration
and 1% at the median; --fit answers that fit in torch, one more not."""
import json
import os
import statistics
import subprocess

import pytest

import memory_cases

# Configurations that disagree today, and why (strict=False: a fix in the
# graph makes them pass without editing this).  The MoE families run
# transformers' batched_mm experts (memory_cases.MOE) and, in the
# "-grouped-" cases, its default grouped_mm experts, both traced op by op.
KNOWN_GAPS = {}


def _param(case_id, case):
    marks = [pytest.mark.xfail(reason=KNOWN_GAPS[case_id], strict=False)] if case_id in KNOWN_GAPS else []
    return pytest.param(case_id, case, id=case_id, marks=marks)


CASES = memory_cases.cases() + memory_cases.grouped_cases()
_cache = memory_cases.load_cache()
_errors = {}


def mtk_memory(run, tmp_path, case, *extra):
    d = tmp_path / "model"
    d.mkdir(exist_ok=True)
    (d / "config.json").write_text(json.dumps(case["config"]))
    args = ["memory", str(d), "--input", "%dx%d" % (case["batch"], case["seq"]), "--mode", case["mode"],
            "--dtype", case["dtype"], "--attention", case["attention"], "--json", *extra]
    if case["mode"] == "training":
        args += ["--optimizer", case["optimizer"], "--grad-accum", str(case.get("grad_accum", 1))]
        if case.get("checkpointing"):
            args.append("--checkpointing")
    r = run(*args, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def rel(got, want):
    return abs(got - want) / want


@pytest.mark.parametrize("case_id,case", [_param(i, c) for i, c in CASES])
def test_peak_matches_torch(run, tmp_path, case_id, case):
    want = memory_cases.measured(case, _cache)
    got = mtk_memory(run, tmp_path, case)
    err = rel(got["peak_bytes"], want["peak"])
    _errors[case_id] = err
    msg = "%s: mtk %d vs torch %d (%.3f%%), peak at %s" % (case_id, got["peak_bytes"], want["peak"],
                                                         100 * err, got["peak_at"])
    print(msg)
    assert err <= 0.03, msg
    if case["mode"] == "training":
        err1 = rel(got["first_step"]["peak_bytes"], want["peak_first_step"])
        assert err1 <= 0.03, "first step: mtk %d vs torch %d" % (got["first_step"]["peak_bytes"],
                                                                 want["peak_first_step"])
        assert got["breakdown"]["optimizer_states"] <= want["optimizer_states"] * 1.0001 or \
            got["peak_at"]["phase"] != "optimizer"


def test_median_error_within_one_percent():
    if len(_errors) < len(CASES):
        pytest.skip("needs every configuration's run (run the whole file)")
    med = statistics.median(_errors.values())
    worst = max(_errors, key=_errors.get)
    print("median %.3f%%, worst %.3f%% (%s)" % (100 * med, 100 * _errors[worst], worst))
    assert med <= 0.01


_FIT_GAPS = {}
_FITS = [pytest.param(i, c, what, n, id=i,
                      marks=[pytest.mark.xfail(reason=_FIT_GAPS[i], strict=False)] if i in _FIT_GAPS else [])
         for i, c, what, n in memory_cases.fit_cases()]


@pytest.mark.parametrize("case_id,case,what,answer", _FITS)
def test_fit_answer_fits_in_torch_and_one_more_does_not(run, tmp_path, case_id, case, what, answer):
    at = mtk_memory(run, tmp_path, dict(case, **{what: answer}))["peak_bytes"]
    beyond = mtk_memory(run, tmp_path, dict(case, **{what: answer + 1}))["peak_bytes"]
    budget = (at + beyond) // 2
    extra = ["--fit", str(budget)] + (["--fit-context"] if what == "seq" else [])
    got = mtk_memory(run, tmp_path, case, *extra)
    assert got["fit"]["max_context" if what == "seq" else "max_batch"] == answer
    assert got["fit"]["peak_bytes"] == at and got["fit"]["peak_bytes_next"] == beyond
    torch_at = memory_cases.measured(dict(case, **{what: answer}), _cache)["peak"]
    torch_beyond = memory_cases.measured(dict(case, **{what: answer + 1}), _cache)["peak"]
    assert torch_at <= budget < torch_beyond, (torch_at, budget, torch_beyond)


# What the forward saves, byte for byte, in the grouped_mm training cases
# (the experts' sorted rows, offsets and _grouped_mm operands; per module
# the experts agree in every family, measured 2026-11-27)
_SAVED_GAPS = {}
_SAVED = [pytest.param(i, c, id=i, marks=[pytest.mark.xfail(reason=_SAVED_GAPS[i], strict=True)]
                       if i in _SAVED_GAPS else [])
          for i, c in memory_cases.grouped_cases() if c["mode"] == "training" and not c.get("checkpointing")]


@pytest.mark.parametrize("case_id,case", _SAVED)
def test_grouped_mm_saved_activations_equal_torch(run, tmp_path, case_id, case):
    want = memory_cases.measured(case, _cache)
    got = mtk_memory(run, tmp_path, case)
    assert got["activations_saved_forward"] == want["saved"]
