"""Evaluates an `mtk eval` expression with PyTorch: the oracle's reference side.

The expression language of `mtk eval` is Python call syntax plus tensor
literals (`f32[3,4]`, `bf16[]`), `true`/`false`, and method-only ops written as
functions (`view(x, [2, 6])`, `to(x, f16)`, `item(x)`).  `evaluate()` rewrites
the literals into calls, binds every name to torch (torch.X, then
torch.nn.functional.X, then a Tensor-method wrapper) and runs the expression
under `with torch.device(DEVICE)`, so it means exactly what it means in
PyTorch.  The answer has the shape of `mtk eval --json`'s answer:

    {"shape": [3, 5], "dtype": "float32", "stride": [5, 1],
     "storage_offset": 0, "device": "meta"}          one tensor
    [ {...}, {...} ]                                   a tuple or list of results
    {"scalar": 3.0}                                    a Python number
    {"error": {"code": "...", "message": "...", "type": "RuntimeError"}}

Truth on meta is torch's meta result.  Two corrections make torch's meta
device usable as a specification:
  * an op with no meta kernel (NotImplementedError for the Meta backend) is run
    on cpu with zero-filled inputs of the same sizes/strides/offsets, and its
    result's metadata is carried back to meta;
  * data-dependent ops (nonzero, masked_select, unique) on a meta input are an
    error whatever torch does (mtk's meta device refuses them by design).
When torch's meta kernel accepts a call that its cpu kernel refuses ("...
not implemented for 'Bool'", mixed dtypes in mm), torch contradicts itself;
the outcome records that in `Outcome.lax` and the test accepts either an
error or torch's meta answer from mtk.
"""

import ast
import math
import re
import warnings
from typing import Any, NamedTuple, Optional

import torch
import torch.nn.functional as F

# -------------------------------------------------------------- dtype names

DTYPES = {
    # short names of `mtk eval`
    "f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16,
    "f64": torch.float64, "i64": torch.int64, "i32": torch.int32,
    "i16": torch.int16, "i8": torch.int8, "u8": torch.uint8, "bool": torch.bool,
    "f8e5m2": torch.float8_e5m2, "f8e4m3": torch.float8_e4m3fn,
    # PyTorch's names and aliases (torch.float is float32, torch.int is int32)
    "float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16,
    "float64": torch.float64, "int64": torch.int64, "int32": torch.int32,
    "int16": torch.int16, "int8": torch.int8, "uint8": torch.uint8,
    "float8_e5m2": torch.float8_e5m2, "float8_e4m3fn": torch.float8_e4m3fn,
    "float": torch.float32, "double": torch.float64, "half": torch.float16,
    "long": torch.int64, "int": torch.int32, "short": torch.int16,
    "byte": torch.uint8, "char": torch.int8,
}


# Names whose value differs from the literal's dtype: as a value, bare `float`
# and `int` are Python's types, which torch reads as float64 and int64
# (`zeros(2, dtype=float)`), while the literal `float[2]` is float32.
VALUE_NAMES = {"float": float, "int": int, "inf": math.inf, "nan": math.nan}


def dtype_name(dtype: torch.dtype) -> str:
    """torch.float32 -> "float32"."""
    return str(dtype).replace("torch.", "")


# Ops whose output size depends on the input's data: an error on meta.
DATA_DEPENDENT = {"nonzero", "masked_select", "unique", "unique_consecutive",
                  "argwhere", "repeat_interleave"}

# ------------------------------------------------------ literal rewriting

_IDENT = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")


def rewrite_literals(expr: str) -> str:
    """Rewrites every tensor literal `NAME[...]` (NAME a dtype name) into
    `__lit__("NAME", [...])`; leaves strings and everything else alone."""
    out = []
    closers = []          # per open '[': the text that closes it
    i, n = 0, len(expr)
    while i < n:
        c = expr[i]
        if c in "'\"":
            j = i + 1
            while j < n and expr[j] != c:
                j += 2 if expr[j] == "\\" else 1
            out.append(expr[i:j + 1])
            i = j + 1
            continue
        m = _IDENT.match(expr, i)
        if m and (i == 0 or not (expr[i - 1].isalnum() or expr[i - 1] in "_.")):
            name = m.group(0)
            j = m.end()
            while j < n and expr[j] == " ":
                j += 1
            if name in DTYPES and j < n and expr[j] == "[":
                out.append('__lit__("%s", [' % name)
                closers.append("])")
                i = j + 1
                continue
            out.append(name)
            i = m.end()
            continue
        if m:                      # identifier glued to something before it
            out.append(m.group(0))
            i = m.end()
            continue
        if c == "[":
            closers.append("]")
        elif c == "]" and closers:
            out.append(closers.pop())
            i += 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


# ------------------------------------------------------------ errors

class DataDependentError(RuntimeError):
    """A data-dependent op was asked for its output on a meta tensor."""


def error_code(exc: BaseException) -> str:
    """A best guess of mtk's error code for a torch exception (for reports;
    the oracle compares error/no-error, not codes)."""
    msg = str(exc)
    if isinstance(exc, DataDependentError):
        return "data_dependent"
    if "Cannot copy out of meta tensor" in msg or "cannot be called on meta tensors" in msg:
        return "meta_no_data"
    if isinstance(exc, (SyntaxError, NameError)):
        return "syntax_error"
    if isinstance(exc, IndexError) or "out of range" in msg:
        return "index_error"
    if isinstance(exc, TypeError):
        return "invalid_argument"
    if "device" in msg:
        return "device_error"
    if "dtype" in msg or "not implemented for" in msg or "ScalarType" in msg:
        return "dtype_error"
    if "shape" in msg or "size" in msg:
        return "shape_error"
    return "invalid_argument"


def _error(exc: BaseException) -> dict:
    return {"error": {"code": error_code(exc), "message": str(exc).split("\n")[0],
                      "type": type(exc).__name__}}


def _is_missing_meta_kernel(exc: BaseException) -> bool:
    msg = str(exc)
    return isinstance(exc, NotImplementedError) and (
        "'Meta' backend" in msg or "no fake impl or Meta kernel" in msg
        or "register_meta" in msg)


# ------------------------------------------------- moving tensors around

def _extent(t: torch.Tensor) -> int:
    """Elements of storage the tensor's view needs (offset + span)."""
    if t.numel() == 0:
        return t.storage_offset()
    return t.storage_offset() + 1 + sum((s - 1) * st for s, st in zip(t.shape, t.stride()))


def _restride(t: torch.Tensor, device: str) -> torch.Tensor:
    """A zero-filled tensor on `device` with t's sizes, strides and offset."""
    base = torch.zeros(max(_extent(t), 1), dtype=t.dtype, device=device)
    return base.as_strided(t.shape, t.stride(), t.storage_offset())


def _map_tensors(x: Any, fn) -> Any:
    if isinstance(x, torch.Tensor):
        return fn(x)
    if isinstance(x, (list, tuple)):
        return type(x)(_map_tensors(v, fn) for v in x)
    return x


def _any_meta(args, kwargs) -> bool:
    found = []
    _map_tensors((list(args), list(kwargs.values())),
                 lambda t: found.append(t.device.type == "meta") or t)
    return any(found)


# ------------------------------------------------------- method wrappers

def _to_empty(x, *, device):
    """Module.to_empty() for one tensor: empty_like on the new device."""
    return torch.empty_like(x, device=device)


def _slice(x, *args, **kwargs):
    """aten's slice(self, dim=0, start=None, end=None, step=1), which Python's
    torch does not expose; its ints refuse bools as torch's Python binding
    does (torch.ops takes True for 1)."""
    for v in list(args) + list(kwargs.values()):
        if isinstance(v, bool):
            raise TypeError("slice(): an int argument must be int, not bool")
    return torch.ops.aten.slice.Tensor(x, *args, **kwargs)


METHODS = {
    # ops that exist only as Tensor methods, or whose method form is the one
    # mtk follows (int[] arguments given as separate ints: view(x, 3, 4))
    "view": lambda x, *a, **k: x.view(*a, **k),
    "reshape": lambda x, *a, **k: x.reshape(*a, **k),
    "expand": lambda x, *a, **k: x.expand(*a, **k),
    "repeat": lambda x, *a, **k: x.repeat(*a, **k),
    "permute": lambda x, *a, **k: x.permute(*a, **k),
    "to": lambda x, *a, **k: x.to(*a, **k),
    "to_empty": _to_empty,
    "item": lambda x: x.item(),
    "contiguous": lambda x, *a, **k: x.contiguous(*a, **k),
    "copy_": lambda x, *a, **k: x.copy_(*a, **k),
    "expand_as": lambda x, *a, **k: x.expand_as(*a, **k),
    "view_as": lambda x, *a, **k: x.view_as(*a, **k),
    "reshape_as": lambda x, *a, **k: x.reshape_as(*a, **k),
    "type_as": lambda x, *a, **k: x.type_as(*a, **k),
    "size": lambda x, *a, **k: x.size(*a, **k),
    "dim": lambda x: x.dim(),
    "numel": lambda x: x.numel(),
    "element_size": lambda x: x.element_size(),
    "zero_": lambda x: x.zero_(),
    "fill_": lambda x, *a, **k: x.fill_(*a, **k),
    "slice": _slice,
}


def resolve(name: str):
    """The torch callable an op name means, or None."""
    if name in METHODS:
        return METHODS[name]
    fn = getattr(torch, name, None)
    if callable(fn) and not isinstance(fn, type):
        return fn
    fn = getattr(F, name, None)
    if callable(fn) and not isinstance(fn, type):
        return fn
    fn = getattr(torch.Tensor, name, None)
    if callable(fn):
        return lambda x, *a, **k: getattr(x, name)(*a, **k)
    return None


# ----------------------------------------------------------- the evaluator

class Outcome(NamedTuple):
    result: Any              # the JSON-like answer
    lax: Optional[str]       # torch's meta/cpu disagreement, if any


def _describe(value: Any, values: bool) -> Any:
    if isinstance(value, torch.Tensor):
        if any(s < 0 for s in value.shape):
            # torch bug: f32[].expand(-1, 0) returns a size of -1
            raise RuntimeError("torch returned a tensor of negative size %s" % list(value.shape))
        d = {"shape": list(value.shape), "dtype": dtype_name(value.dtype),
             "stride": list(value.stride()), "storage_offset": value.storage_offset(),
             "device": value.device.type}
        if values and value.device.type == "cpu":
            flat = value.detach().reshape(-1)
            if flat.dtype in (torch.float16, torch.bfloat16):
                flat = flat.float()
            d["values"] = flat.tolist()
        return d
    if isinstance(value, (tuple, list)):
        return [_describe(v, values) for v in value]
    if isinstance(value, (bool, int, float)):
        return {"scalar": value}
    if value is None:
        return None
    if isinstance(value, str):
        return {"string": value}
    if isinstance(value, torch.dtype):
        return {"dtype": dtype_name(value)}
    if isinstance(value, torch.device):
        return {"device": str(value)}
    return {"other": repr(value)}


class _Run:
    """State of one evaluation: the device and what the op wrappers saw."""

    def __init__(self, device: str):
        self.device = device
        self.lax: Optional[str] = None

    def literal(self, name: str, shape: list):
        dtype = DTYPES[name]
        if self.device == "meta":
            return torch.empty(shape, dtype=dtype, device="meta")
        return torch.zeros(shape, dtype=dtype, device=self.device)

    def wrap(self, name: str, fn):
        def call(*args, **kwargs):
            meta_in = _any_meta(args, kwargs)
            if meta_in and name in DATA_DEPENDENT:
                raise DataDependentError(
                    "%s: the output size depends on the data of its input, and a meta "
                    "tensor has no data" % name)
            try:
                out = fn(*args, **kwargs)
            except NotImplementedError as exc:
                if not (meta_in and _is_missing_meta_kernel(exc)):
                    raise
                if "register_meta" in str(exc):     # nonzero's refusal on meta
                    raise DataDependentError("%s: the output size depends on the data "
                                             "of its input" % name) from None
                return self._on_cpu(fn, args, kwargs)
            if meta_in and self.lax is None:
                self._check_cpu_agrees(name, fn, args, kwargs)
            return out
        return call

    def _on_cpu(self, fn, args, kwargs):
        """Runs fn on zero-filled cpu copies; the result's metadata back on meta."""
        cargs = _map_tensors(list(args), lambda t: _restride(t, "cpu") if t.is_meta else t)
        ckw = {k: _map_tensors(v, lambda t: _restride(t, "cpu") if t.is_meta else t)
               for k, v in kwargs.items()}
        out = fn(*cargs, **ckw)
        return _map_tensors(out, lambda t: _restride(t, "meta"))

    def _check_cpu_agrees(self, name, fn, args, kwargs):
        """Notes where torch's cpu kernel refuses a call its meta kernel took
        (a dtype it has no kernel for, mixed dtypes in mm, ...).  A refusal
        that only zero-filled data causes (integer division by zero) is not
        one."""
        try:
            self._on_cpu(fn, args, kwargs)
        except Exception as exc:  # noqa: BLE001 - any refusal is noted
            msg = str(exc).split("\n")[0]
            if "ZeroDivisionError" not in msg:
                self.lax = "%s: torch cpu refuses what torch meta accepts: %s" % (name, msg)


class _Module:
    """`torch`, `torch.nn`, `torch.nn.functional` and `F` inside expressions:
    attribute access resolves an op name through the run's wrappers."""

    def __init__(self, run: "_Run", functional: bool):
        self._run, self._functional = run, functional

    def __getattr__(self, name: str):
        if name in ("nn", "functional"):
            return _Module(self._run, True)
        if isinstance(getattr(torch, name, None), torch.dtype):
            return getattr(torch, name)
        if self._functional:
            fn = getattr(F, name, None)
        elif name in METHODS:          # torch.reshape exists, torch.view does not
            fn = getattr(torch, name, None)
        else:
            fn = resolve(name)
        if not callable(fn):
            raise AttributeError("module has no attribute '%s'" % name)
        return self._run.wrap(name, fn)


def _names(tree: ast.AST):
    return {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}


def evaluate(expr: str, device: str = "meta", values: bool = False) -> Outcome:
    """Evaluates one expression with torch on `device` ("meta" or "cpu").
    Literals are uninitialized on meta and zero-filled elsewhere.  With
    `values`, cpu tensors carry their flattened values.  Never raises."""
    run = _Run(device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _evaluate(run, expr, device, values)


def _evaluate(run: "_Run", expr: str, device: str, values: bool) -> Outcome:
    try:
        source = rewrite_literals(expr.strip())
        tree = ast.parse(source, mode="eval")
        namespace = {"__builtins__": {}, "__lit__": run.literal,
                     "true": True, "false": False, "True": True, "False": False,
                     "None": None, "torch": _Module(run, False), "F": _Module(run, True)}
        for name in _names(tree):
            if name in namespace:
                continue
            if name in VALUE_NAMES:
                namespace[name] = VALUE_NAMES[name]
                continue
            if name in DTYPES:
                namespace[name] = DTYPES[name]
                continue
            fn = resolve(name)
            if fn is not None:
                namespace[name] = run.wrap(name, fn)
        code = compile(tree, "<expr>", "eval")
        with torch.device(device):
            value = eval(code, namespace)  # noqa: S307 - the oracle's own input
        return Outcome(_describe(value, values), run.lax)
    except Exception as exc:  # noqa: BLE001 - errors are answers
        return Outcome(_error(exc), run.lax)


if __name__ == "__main__":
    import json
    import sys
    dev = sys.argv[1] if len(sys.argv) > 1 else "meta"
    for line in sys.stdin:
        if line.strip():
            o = evaluate(line, dev, values=dev == "cpu")
            print(json.dumps(o.result) + ("  # lax: " + o.lax if o.lax else ""))
