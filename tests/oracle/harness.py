"""Runs expressions through `mtk eval --json --batch -` and judges its answers
against torch's (torch_eval).  Used by the oracle tests and, as a script, to
print every disagreement grouped by op:

    python3 tests/oracle/harness.py [--cases N] [--seed S] [--file F] [--device cpu]
                                    [--family view,linalg] [--all]
"""

import json
import math
import os
import re
import subprocess
from collections import OrderedDict
from typing import Any, List, Optional, Sequence

import torch_eval
from torch_eval import Outcome

def is_error(answer: Any) -> bool:
    return isinstance(answer, dict) and "error" in answer


METADATA_KEYS = ("shape", "dtype", "stride", "storage_offset", "device")


def metadata_diff(mtk: Any, ref: Any, keys=METADATA_KEYS) -> Optional[str]:
    """None when the two answers agree on every metadata key (recursively for
    lists, exactly for scalars), else a short description of the first
    difference."""
    if isinstance(ref, list) or isinstance(mtk, list):
        if not (isinstance(ref, list) and isinstance(mtk, list)):
            return "one is a list, the other is not"
        if len(ref) != len(mtk):
            return "list lengths %d vs %d" % (len(mtk), len(ref))
        for i, (a, b) in enumerate(zip(mtk, ref)):
            d = metadata_diff(a, b, keys)
            if d:
                return "[%d] %s" % (i, d)
        return None
    if ref is None or mtk is None:
        return None if ref is mtk else "%r vs %r" % (mtk, ref)
    if not isinstance(mtk, dict):
        return "not an object: %r" % (mtk,)
    if "scalar" in ref:
        if "scalar" not in mtk:
            return "expected a scalar"
        a, b = mtk["scalar"], ref["scalar"]
        if not values_equal([a], [b], "float64"):
            return "scalar %r vs %r" % (a, b)
        return None
    if "shape" not in ref:
        return None if mtk == ref else "%r vs %r" % (mtk, ref)
    for k in keys:
        if mtk.get(k) != ref.get(k):
            return "%s %r vs %r" % (k, mtk.get(k), ref.get(k))
    return None


TOLERANCES = {  # dtype: (rtol, atol)
    "float64": (1e-7, 1e-9), "float32": (1e-5, 1e-6),
    "float16": (2e-3, 1e-3), "bfloat16": (1.6e-2, 1e-2),
}


def _num(v):
    if v is None:       # JSON has no NaN; a writer may put null
        return math.nan
    if isinstance(v, str):
        return float(v.replace("Infinity", "inf"))
    return float(v)


# Normalizing ops (statistics over a reduction, then a division by them):
# torch's float32 kernels accumulate in float32 and mtk's in double, so
# outputs near zero differ by a few ulps of the statistics, an absolute
# error.  torch.testing's own float32 atol (1e-5) for these ops only.  With
# a half input torch also keeps statistics and some intermediates in the
# half dtype: about one ulp at the magnitude of the normalized values
# (|w| * |x - mean| * rstd, up to ~8 here) shows near zero.
NORMALIZING_OPS = {"softmax", "log_softmax", "layer_norm", "rms_norm", "group_norm",
                   "batch_norm", "instance_norm"}
NORMALIZING_ATOL = {"float32": 1e-5, "float16": 4e-3, "bfloat16": 3.2e-2}


# Products and convolutions sum many float32 terms in an order torch's
# GEMM picks (MKL/oneDNN blocking): where the terms cancel, the result's
# absolute error scales with the terms, not with the result (a conv3d
# output of 0.0367 from terms of ~10 differed by 3.1e-6 on seed 23).
# torch.testing's own float32 atol (1e-5) for these ops only.
ACCUMULATING_OPS = {"conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                    "conv_transpose3d", "matmul", "mm", "bmm", "mv", "dot", "linear"}
ACCUMULATING_ATOL = {"float32": 1e-5}


def tolerance(dtype: str, op: Optional[str] = None):
    """(rtol, atol) of a dtype, with the normalizing and accumulating ops'
    atol for `op`."""
    rtol, atol = TOLERANCES.get(dtype, (0.0, 0.0))
    name = op.split(".")[-1] if op is not None else None
    if name in NORMALIZING_OPS:
        atol = max(atol, NORMALIZING_ATOL.get(dtype, 0.0))
    if name in ACCUMULATING_OPS:
        atol = max(atol, ACCUMULATING_ATOL.get(dtype, 0.0))
    return rtol, atol


def values_equal(a: list, b: list, dtype: str, op: Optional[str] = None) -> bool:
    """Element-wise equality within the dtype's tolerance (the op's, see
    tolerance()); NaN equals NaN."""
    if len(a) != len(b):
        return False
    rtol, atol = tolerance(dtype, op)
    for x, y in zip(a, b):
        if isinstance(x, bool) or isinstance(y, bool):
            if bool(x) != bool(y) or (isinstance(x, (int, float)) and float(x) != float(y)):
                return False
            continue
        x, y = _num(x), _num(y)
        if math.isnan(x) or math.isnan(y):
            if not (math.isnan(x) and math.isnan(y)):
                return False
            continue
        if math.isinf(x) or math.isinf(y):
            if x != y:
                return False
            continue
        if abs(x - y) > atol + rtol * abs(y):
            return False
    return True



REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_SEED = 20240601


def mtk_bin() -> str:
    """The mtk binary: $MTK_BIN or <repo>/build/mtk."""
    return os.environ.get("MTK_BIN", os.path.join(REPO, "build", "mtk"))


def seed() -> int:
    return int(os.environ.get("MTK_ORACLE_SEED", DEFAULT_SEED))


def case_count(default: int = 20000) -> int:
    return int(os.environ.get("MTK_ORACLE_CASES", default))


def _parse(line: str) -> Any:
    try:
        return json.loads(line)
    except ValueError:
        return {"unparsable": line[:300]}


def run_batch(exprs: Sequence[str], device: str = "meta", values: bool = False,
              timeout: float = 300.0) -> List[Any]:
    """Answers of ONE `mtk eval --json --batch -` process per run of
    expressions.  If mtk dies part-way, the expression it died on is answered
    {"crash": ...} and a new process takes the rest."""
    cmd = [mtk_bin(), "eval", "--json", "--batch", "-"]
    if device != "meta":
        cmd += ["--device", device]
    if values:
        cmd += ["--values"]
    for e in exprs:
        assert "\n" not in e, e
    answers: List[Any] = [None] * len(exprs)
    start = 0
    while start < len(exprs):
        chunk = exprs[start:]
        proc = subprocess.run(cmd, input="".join(e + "\n" for e in chunk),
                              capture_output=True, text=True, timeout=timeout)
        lines = proc.stdout.splitlines()
        for i, line in enumerate(lines[: len(chunk)]):
            answers[start + i] = _parse(line)
        if len(lines) >= len(chunk):
            break
        died = start + len(lines)
        answers[died] = {"crash": {"returncode": proc.returncode,
                                   "stderr": proc.stderr[-400:]}}
        start = died + 1
    return answers


def op_of(expr: str) -> str:
    """The outermost op of an expression ("add" for add(f32[3], ...))."""
    m = re.match(r"\s*([A-Za-z_][A-Za-z_0-9.]*)\s*\(", expr)
    return m.group(1).split(".")[-1] if m else expr.strip()[:20]


def _no_answer(mtk: Any) -> bool:
    return not isinstance(mtk, (dict, list)) or (
        isinstance(mtk, dict) and ("crash" in mtk or "unparsable" in mtk))


def judge(mtk: Any, ref: Outcome) -> Optional[str]:
    """None when mtk's meta answer agrees with torch's, else why not.
    Agreement: both errors, or both results with equal shape, dtype, stride,
    storage_offset and device (and equal scalars)."""
    if _no_answer(mtk):
        return "mtk gave no answer"
    mtk_err, ref_err = is_error(mtk), is_error(ref.result)
    if mtk_err and ref_err:
        return None
    if mtk_err:
        return "mtk refused a valid call"
    if ref_err:
        return "mtk accepted an invalid call"
    return metadata_diff(mtk, ref.result)


BY_DESIGN_META_ERRORS = ("meta_no_data", "data_dependent")


# Families whose cpu layouts mtk models as torch's cpu kernels give them
# (not only as its meta device does): judged on torch's cpu strides alone.
STRICT_CPU_LAYOUT_FAMILIES = {"elementwise", "conv"}


def _strict_cpu_layout(expr: str) -> bool:
    import gen  # the op table (imported here: gen imports this module's siblings)
    op = gen.OPS_BY_NAME.get(op_of(expr))
    return op is not None and op.family in STRICT_CPU_LAYOUT_FAMILIES


def judge_cpu(mtk: Any, ref: Outcome, expr: str) -> Optional[str]:
    """Like judge() for answers on cpu (zero-filled literals), where torch's
    cpu result is the truth, with torch's own contradictions allowed: mtk may
    run what torch's cpu kernel lacks a dtype for ("not implemented for"),
    may refuse what torch's meta kernel refuses, and may give the metadata
    torch gives on meta where torch's cpu result differs from it (a pooling
    layout, say) -- except for ops of STRICT_CPU_LAYOUT_FAMILIES, whose cpu
    layouts mtk models: those are judged on torch's cpu strides alone."""
    if _no_answer(mtk):
        return "mtk gave no answer"
    mtk_err, ref_err = is_error(mtk), is_error(ref.result)
    if mtk_err == ref_err:
        why = None if mtk_err else metadata_diff(mtk, ref.result)
        if why and not _strict_cpu_layout(expr) and \
                metadata_diff(mtk, torch_eval.evaluate(expr, "meta").result,
                              ("shape", "dtype", "stride", "storage_offset")) is None:
            return None     # torch's cpu and meta strides differ; mtk has meta's
        return why
    if ref_err:
        if "not implemented for '" in ref.result["error"]["message"]:
            return None
        return "mtk accepted an invalid call"
    meta = torch_eval.evaluate(expr, "meta").result
    if is_error(meta) and meta["error"]["code"] not in BY_DESIGN_META_ERRORS:
        return None
    return "mtk refused a valid call"


def short(answer: Any, limit: int = 220) -> str:
    text = json.dumps(answer, separators=(",", ":"))
    return text if len(text) <= limit else text[:limit] + "..."


class Disagreement:
    def __init__(self, expr: str, mtk: Any, ref: Any, why: str):
        self.expr, self.mtk, self.ref, self.why = expr, mtk, ref, why

    def __str__(self) -> str:
        return "  %s\n    mtk:   %s\n    torch: %s\n    (%s)" % (
            self.expr, short(self.mtk), short(self.ref), self.why)


def compare_with_torch(exprs: Sequence[str], device: str = "meta") -> List[Disagreement]:
    """Runs every expression on `device` (meta or cpu) through mtk and torch;
    the disagreements."""
    answers = run_batch(exprs, device)
    out = []
    for expr, mtk in zip(exprs, answers):
        ref = torch_eval.evaluate(expr, device)
        why = judge(mtk, ref) if device == "meta" else judge_cpu(mtk, ref, expr)
        if why:
            out.append(Disagreement(expr, mtk, ref.result, why))
    return out


def by_op(disagreements: Sequence[Disagreement]) -> "OrderedDict[str, List[Disagreement]]":
    groups: "OrderedDict[str, List[Disagreement]]" = OrderedDict()
    for d in disagreements:
        groups.setdefault(op_of(d.expr), []).append(d)
    return OrderedDict(sorted(groups.items(), key=lambda kv: -len(kv[1])))


def failure_report(title: str, total: int, disagreements: Sequence[Disagreement],
                   limit: int = 30) -> str:
    """The failure message: counts by op, then the first `limit` cases."""
    groups = by_op(disagreements)
    lines = ["%s: %d of %d expressions disagree with torch" % (title, len(disagreements), total),
             "by op: " + ", ".join("%s %d" % (k, len(v)) for k, v in groups.items())]
    lines += [str(d) for d in disagreements[:limit]]
    if len(disagreements) > limit:
        lines.append("  ... and %d more" % (len(disagreements) - limit))
    return "\n".join(lines)


def load_cases(path: str) -> List[str]:
    """Expressions of a cases file: one per line, # comments and blanks skipped."""
    with open(path) as f:
        return [ln.strip() for ln in f if ln.strip() and not ln.lstrip().startswith("#")]


if __name__ == "__main__":
    import argparse
    import gen
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--cases", type=int, default=case_count())
    ap.add_argument("--seed", type=int, default=seed())
    ap.add_argument("--file", help="expressions from a file instead of the generator")
    ap.add_argument("--all", action="store_true", help="list every disagreement")
    ap.add_argument("--device", default="meta", choices=["meta", "cpu"],
                    help="cpu: zero-filled literals, torch's cpu result is the truth")
    ap.add_argument("--family", help="only these op families (comma-separated: view,linalg,...)")
    args = ap.parse_args()
    ops = gen.ops_of(args.family.split(",")) if args.family else None
    exprs = load_cases(args.file) if args.file else gen.generate(args.seed, args.cases, ops=ops)
    found = compare_with_torch(exprs, args.device)
    print("%d of %d disagree (seed %d)" % (len(found), len(exprs), args.seed))
    for op, ds in by_op(found).items():
        print("\n== %s: %d" % (op, len(ds)))
        for d in (ds if args.all else ds[:1]):
            print(d)
