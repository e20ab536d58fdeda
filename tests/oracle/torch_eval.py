"""Evaluates an `mtk eval` expression with PyTorch: the oracle's reference side.

The expression language of `mtk eval` is Python call syntax plus tensor
literals (`f32[3,4]`, `bf16[]`), `true`/`false`, and method-only ops written as
functions (`view(x, [2, 6])`, `to(x, f16)`, `item(x)`).  `evaluate()` rewrites
the literals into calls, binds every name generically (see `resolve`: the
method forms of METHODS, the op families' own TORCH_BINDINGS,
torch.nn.functional.X, torch.X, torch.linalg.X, then a Tensor-method wrapper; dotted
names through `torch`, `F`, `nn.functional`, `linalg`, ...) and runs the
expression under `with torch.device(DEVICE)`, so it means exactly what it
means in PyTorch.  A new op needs no edit here.  The answer has the shape of `mtk eval --json`'s answer:

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
Where torch's meta kernel accepts a call that its cpu kernel refuses ("...
not implemented for 'Bool'", mixed dtypes in mm), truth on meta is torch's
meta answer, as everywhere else: mtk follows each device.
"""

import ast
import glob
import importlib
import math
import os
import re
import sys
import warnings
from typing import Any, Dict, NamedTuple

import torch
import torch.nn.functional as F

# torch's oneDNN (mkldnn) convolutions return wrong float32 values for some
# channels-last and small strided convs on this kind of cpu (AVX-512/AMX),
# zeros for some float16 conv3d, and crash on one float16 conv2d; its
# native kernels agree with float64 references.  The oracle asks those.
torch.backends.mkldnn.enabled = False

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
VALUE_NAMES = {"float": float, "int": int, "len": len, "inf": math.inf, "nan": math.nan}


def dtype_name(dtype: torch.dtype) -> str:
    """torch.float32 -> "float32"."""
    return str(dtype).replace("torch.", "")


# Ops whose output size depends on the input's data: an error on meta.
# (repeat_interleave is not here: torch's meta decides, from whether the
# output size is known -- an int `repeats` or an `output_size`.)
DATA_DEPENDENT = {"nonzero", "masked_select", "unique", "unique_consecutive", "argwhere"}

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
    if isinstance(exc, DataDependentError) or "without output_size" in msg:
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


_FAMILY_BINDINGS: Dict[str, Any] = {}
_FAMILY_BINDINGS_LOADED = False


def family_bindings() -> Dict[str, Any]:
    """name -> torch callable, from the TORCH_BINDINGS of every op family's
    generator module (tests/oracle/gen_ops_*.py) that defines one: names
    whose torch meaning is not the generic one (`batch_norm` is
    F.batch_norm, not torch.batch_norm; `rope` is mtk's own op)."""
    global _FAMILY_BINDINGS_LOADED
    if not _FAMILY_BINDINGS_LOADED:
        _FAMILY_BINDINGS_LOADED = True
        here = os.path.dirname(os.path.abspath(__file__))
        if here not in sys.path:
            sys.path.insert(0, here)
        for path in sorted(glob.glob(os.path.join(here, "gen_ops_*.py"))):
            module = importlib.import_module(os.path.basename(path)[:-3])
            bindings = getattr(module, "TORCH_BINDINGS", None)   # a mapping, maybe lazy
            if bindings is not None:
                _FAMILY_BINDINGS.update({k: bindings[k] for k in list(bindings.keys())})
    return _FAMILY_BINDINGS


def _function(module, name: str):
    fn = getattr(module, name, None)
    return fn if callable(fn) and not isinstance(fn, type) else None


# the namespaces an expression may spell (torch.linalg.vector_norm,
# F.softmax, linalg.vector_norm, nn.functional.gelu)
NAMESPACES = {"torch": torch, "nn": torch.nn, "functional": F, "F": F,
              "linalg": torch.linalg, "special": torch.special, "fft": torch.fft}


def resolve(name: str):
    """The torch callable an op name means, or None: a method form of
    METHODS, a family's own binding, torch.nn.functional.X, torch.X,
    torch.linalg.X, then the Tensor method X.  (torch.nn.functional first:
    where both exist, mtk's signature is the functional one --
    F.max_pool2d's return_indices, F.embedding(input, weight), F.relu's
    inplace -- and elsewhere they are the same function.)  A dotted name
    ("linalg.vector_norm", "torch.nn.functional.gelu") is looked up in its
    namespace."""
    if "." in name:
        parts = name.split(".")
        if parts[0] == "torch":
            parts = parts[1:]
        module = torch
        for part in parts[:-1]:
            module = NAMESPACES.get(part) if module is torch else getattr(module, part, None)
            if module is None:
                return None
        return resolve(parts[-1]) if module is torch else _function(module, parts[-1])
    if name in METHODS:
        return METHODS[name]
    fn = family_bindings().get(name)
    if fn is not None:
        return fn
    for module in (F, torch, torch.linalg):
        fn = _function(module, name)
        if fn is not None:
            return fn
    if callable(getattr(torch.Tensor, name, None)):
        return lambda x, *a, **k: getattr(x, name)(*a, **k)
    return None


# ----------------------------------------------------------- the evaluator

class Outcome(NamedTuple):
    result: Any              # the JSON-like answer


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


def _onednn_bias_rule(name: str, args, kwargs) -> None:
    """torch's default cpu backend for float16/bfloat16 transposed convs is
    oneDNN, which refuses a bias of another dtype; the native kernels the
    oracle asks instead (oneDNN off, above) accept any.  mtk follows torch's
    default: so does the oracle, by raising oneDNN's error."""
    if name.split(".")[-1] not in ("conv_transpose1d", "conv_transpose2d"):
        return
    x = args[0] if args else kwargs.get("input")
    bias = args[2] if len(args) > 2 else kwargs.get("bias")
    if (isinstance(x, torch.Tensor) and isinstance(bias, torch.Tensor)
            and x.dtype in (torch.float16, torch.bfloat16) and bias.dtype != x.dtype):
        raise RuntimeError("Input type (%s) and bias type (%s) should be the same (oneDNN)"
                           % (x.dtype, bias.dtype))


class _Run:
    """State of one evaluation: the device the literals live on."""

    def __init__(self, device: str):
        self.device = device

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
            if not meta_in:
                _onednn_bias_rule(name, args, kwargs)
            try:
                out = fn(*args, **kwargs)
            except NotImplementedError as exc:
                if not (meta_in and _is_missing_meta_kernel(exc)):
                    raise
                if "register_meta" in str(exc):     # nonzero's refusal on meta
                    raise DataDependentError("%s: the output size depends on the data "
                                             "of its input" % name) from None
                return self._on_cpu(fn, args, kwargs)
            return out
        return call

    def _on_cpu(self, fn, args, kwargs):
        """Runs fn on zero-filled cpu copies; the result's metadata back on meta."""
        cargs = _map_tensors(list(args), lambda t: _restride(t, "cpu") if t.is_meta else t)
        ckw = {k: _map_tensors(v, lambda t: _restride(t, "cpu") if t.is_meta else t)
               for k, v in kwargs.items()}
        out = fn(*cargs, **ckw)
        return _map_tensors(out, lambda t: _restride(t, "meta"))


class _Module:
    """A namespace inside expressions (`torch`, `F`, `nn`, `linalg`, ...):
    attribute access gives a sub-namespace, a dtype, or an op resolved in
    this namespace and wrapped by the run."""

    def __init__(self, run: "_Run", module):
        self._run, self._module = run, module

    def __getattr__(self, name: str):
        if self._module is torch and isinstance(getattr(torch, name, None),
                                                (torch.dtype, torch.layout, torch.memory_format)):
            return getattr(torch, name)
        sub = getattr(self._module, name, None)
        if sub is not None and type(sub) is type(torch):
            return _Module(self._run, sub)
        if self._module is torch:
            # torch.X is torch's function X (torch.reshape exists, torch.view
            # does not), else what the bare name means
            fn = _function(torch, name)
            if fn is None and name not in METHODS:
                fn = resolve(name)
        else:
            fn = _function(self._module, name)
        if fn is None:
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
                     "None": None}
        for name in _names(tree):
            if name in namespace:
                continue
            if name in VALUE_NAMES:
                namespace[name] = VALUE_NAMES[name]
                continue
            if name in DTYPES:
                namespace[name] = DTYPES[name]
                continue
            if name in NAMESPACES:
                namespace[name] = _Module(run, NAMESPACES[name])
                continue
            fn = resolve(name)
            if fn is not None:
                namespace[name] = run.wrap(name, fn)
        code = compile(tree, "<expr>", "eval")
        with torch.device(device):
            value = eval(code, namespace)  # noqa: S307 - the oracle's own input
        return Outcome(_describe(value, values))
    except Exception as exc:  # noqa: BLE001 - errors are answers
        return Outcome(_error(exc))


if __name__ == "__main__":
    import json
    import sys
    dev = sys.argv[1] if len(sys.argv) > 1 else "meta"
    for line in sys.stdin:
        if line.strip():
            o = evaluate(line, dev, values=dev == "cpu")
            print(json.dumps(o.result))
