"""Generated calls of the reduce family (sum, mean, amax, max, argmax, var,
norm, all, cumsum, median, ...), for the oracle's op table.

`rows(Op)` returns this family's rows of gen.OPS; each builder follows the
builder protocol of gen_builders.py: (g, op, ok) -> Call.  Dim arguments
come in every spelling PyTorch accepts (an int, a list, a tuple, [] and
None), with keepdim given by position or keyword, and dtype= where the op
has it; invalid variants use out-of-range and repeated dims, refused input
dtypes and refused dtype= values.

`linalg.vector_norm` is spelled with its module (torch_eval resolves it in
torch.linalg)."""

from typing import List, Optional

from gen_builders import _bad_dtypes
from gen_inputs import FLOATS, INTS, NUMERIC, Call, Gen, Tx, _lst

# ---------------------------------------------------------------- helpers


# torch 2.13's cpu median/nanmedian read garbage from inputs with a 0
# stride (expand): their values are drawn from contiguous tensors only
NO_EXPANDED_VALUES = {"median", "nanmedian"}


def _x(g: Gen, op, ok: bool, lo: int = 0, hi: Optional[int] = None) -> Tx:
    """The input: a dtype the op takes on cpu, or (invalid calls, half the
    time) one it refuses."""
    bad = not ok and g.chance(0.5)
    dtype = g.dtype(_bad_dtypes(op) if bad else op.dtypes)
    if g.values and op.name in NO_EXPANDED_VALUES:
        return g.leaf(g.shape(lo, hi), dtype)
    return g.tensor(g.shape(lo, hi), dtype)


def _dims(g: Gen, nd: int, ok: bool, allow_empty: bool = True) -> str:
    """A dim-list argument: an int, a list or tuple of distinct dims, []."""
    n = max(nd, 1)
    if not ok:
        bad = g.pick(["range", "repeat", "range"])
        if bad == "repeat":
            d = g.dim(nd)
            other = d - n if d >= 0 else d + n     # the same dim, spelled the other way
            return _lst([d, g.pick([d, other])])
        return g.pick([str(g.bad_dim(nd)), _lst([0, g.bad_dim(nd)])])
    form = g.pick(["int", "list", "list", "tuple", "empty"] if allow_empty else ["int", "list", "tuple"])
    if form == "int":
        return str(g.dim(nd))
    if form == "empty":
        return g.pick(["[]", "()"])
    k = g.randint(1, n)
    chosen = g.rng.sample(range(n), k)
    dims = [d - n if g.chance(0.25) else d for d in chosen]
    if form == "tuple":
        return "(%s)" % "".join("%d, " % d for d in dims) if len(dims) == 1 else \
            "(%s)" % ", ".join(map(str, dims))
    return _lst(dims)


def _keepdim(g: Gen, args: List[str], kwargs: list, positional_ok: bool = True) -> None:
    """Sometimes a keepdim, by position (after the dim) or by keyword."""
    if not g.chance(0.4):
        return
    value = g.pick(["True", "False", "True"])
    if positional_ok and g.chance(0.5):
        args.append(value)
    else:
        kwargs.append(("keepdim", value))


def _dtype_kw(g: Gen, kwargs: list, choices, ok: bool, refused=None) -> None:
    if g.chance(0.3):
        pool = refused if (not ok and refused and g.chance(0.5)) else choices
        kwargs.append(("dtype", g.dtype_text(g.pick(list(pool)))))


# ---------------------------------------------------------------- builders


def b_reduce_dims(g: Gen, op, ok: bool) -> Call:
    """sum/nansum/mean/nanmean/amax/amin/all/any/count_nonzero/logsumexp:
    (input, dim, keepdim[, dtype=]).  extra: required (dim must be given),
    keepdim (bool), dtypes (dtype= choices), bad_dtypes."""
    x = _x(g, op, ok)
    nd = len(x.shape)
    args, kwargs = [x.text], []
    required = op.extra.get("required", False)
    bad_dim = not ok and g.chance(0.5)
    r = g.rng.random()
    if required or bad_dim or r < 0.75:
        dims = _dims(g, nd, not bad_dim)
        if g.chance(0.2):
            kwargs.append(("dim", dims))
        else:
            args.append(dims)
        if op.extra.get("keepdim", True):
            _keepdim(g, args, kwargs, positional_ok=not kwargs)
    elif r < 0.85 and op.extra.get("keepdim", True):
        args.append("None")
        _keepdim(g, args, kwargs)
    if op.extra.get("dtypes"):
        _dtype_kw(g, kwargs, op.extra["dtypes"], ok, op.extra.get("bad_dtypes"))
    return Call(op.name, args, kwargs)


def b_reduce_one_dim(g: Gen, op, ok: bool) -> Call:
    """prod/argmax/argmin/median/nanmedian/mode/cumsum/cumprod/cummax/cummin:
    (input[, dim[, keepdim]]) with one int dim.  extra: required, keepdim,
    dtypes, bad_dtypes."""
    x = _x(g, op, ok)
    nd = len(x.shape)
    args, kwargs = [x.text], []
    required = op.extra.get("required", False)
    if required or g.chance(0.7) or not ok:
        d = str(g.dim(nd)) if ok or g.chance(0.4) else str(g.bad_dim(nd))
        if g.chance(0.2):
            kwargs.append(("dim", d))
        else:
            args.append(d)
        if op.extra.get("keepdim", True):
            _keepdim(g, args, kwargs, positional_ok=not kwargs)
    elif op.name in ("argmax", "argmin") and g.chance(0.3):
        args.append("None")
        _keepdim(g, args, kwargs)
    if op.extra.get("dtypes"):
        _dtype_kw(g, kwargs, op.extra["dtypes"], ok, op.extra.get("bad_dtypes"))
    return Call(op.name, args, kwargs)


def b_max(g: Gen, op, ok: bool) -> Call:
    """max/min: (input) -> value, (input, dim[, keepdim]) -> (values,
    indices), (input, other) -> maximum/minimum."""
    r = g.rng.random()
    if r < 0.25:
        out = g.shape()
        if ok:
            sa, sb = out, g.bcast_from(out)
            if g.chance(0.5):
                sa, sb = sb, sa
        else:
            sa, sb = g.mismatched(out)
        a, b = g.tensor(sa, g.dtype(op.dtypes)), g.tensor(sb, g.dtype(op.dtypes))
        if g.chance(0.3):
            return Call(op.name, [a.text], [("other", b.text)])
        return Call(op.name, [a.text, b.text])
    x = _x(g, op, ok)
    if r < 0.45:
        return Call(op.name, [x.text])
    nd = len(x.shape)
    d = str(g.dim(nd)) if ok or g.chance(0.4) else g.pick([str(g.bad_dim(nd)), "[0]", "None"])
    args, kwargs = [x.text], []
    if g.chance(0.2):
        kwargs.append(("dim", d))
    else:
        args.append(d)
    _keepdim(g, args, kwargs, positional_ok=not kwargs)
    return Call(op.name, args, kwargs)


def b_var(g: Gen, op, ok: bool) -> Call:
    """var/std/var_mean/std_mean in their three overloads: (input,
    unbiased), (input, dim, unbiased[, keepdim]), (input, dim=None, *,
    correction=, keepdim=)."""
    x = _x(g, op, ok)
    nd = len(x.shape)
    args, kwargs = [x.text], []
    form = g.pick(["plain", "unbiased", "dim", "dim_unbiased", "correction", "kw_unbiased"])
    dims = _dims(g, nd, ok or g.chance(0.5))
    if form == "unbiased":
        args.append(g.pick(["True", "False"]))
    elif form == "dim":
        args.append(dims)
        _keepdim(g, [], kwargs)
    elif form == "dim_unbiased":
        args += [dims, g.pick(["True", "False"])]
        _keepdim(g, args, kwargs)
    elif form == "correction":
        if g.chance(0.6):
            kwargs.append(("dim", dims) if g.chance(0.3) else ("dim", "None"))
        kwargs.append(("correction", g.pick(["0", "1", "2", "0.5", "True"])))
        _keepdim(g, [], kwargs)
    elif form == "kw_unbiased":
        args.append(dims)
        kwargs.append(("unbiased", g.pick(["True", "False"])))
        _keepdim(g, [], kwargs)
    if not ok and g.chance(0.3):
        kwargs += [("unbiased", "True"), ("correction", "1")]   # both: refused
    return Call(op.name, args, kwargs)


NORM_ORDS = ["2", "1", "0", "3", "0.5", "-1", "inf", "-inf", "2.5", "-2"]


def b_norm(g: Gen, op, ok: bool) -> Call:
    """torch.norm(input, p, dim, keepdim, out, dtype) and
    linalg.vector_norm(input, ord, dim, keepdim, *, dtype)."""
    x = _x(g, op, ok)
    nd = len(x.shape)
    args, kwargs = [x.text], []
    vector = op.name != "norm"
    if vector:
        ords = NORM_ORDS
    else:
        ords = NORM_ORDS + ["'fro'", "'fro'", "None", "'nuc'"] + (["'abc'"] if not ok else [])
    if g.chance(0.8):
        o = g.pick(ords)
        if g.chance(0.3):
            kwargs.append(("ord" if vector else "p", o))
        else:
            args.append(o)
    if g.chance(0.6) and (args[1:] or not kwargs):
        dims = _dims(g, nd, ok or g.chance(0.5))
        if len(args) == 2 and g.chance(0.6):
            args.append(dims)
        else:
            kwargs.append(("dim", dims))
        _keepdim(g, args if len(args) == 3 and not kwargs else [], kwargs)
    if g.chance(0.25):
        dt = x.dtype if x.dtype in FLOATS else "float32"
        wider = {"float16": ["float16", "float32", "float64"], "bfloat16": ["bfloat16", "float32"],
                 "float32": ["float32", "float64"], "float64": ["float64"]}[dt]
        pool = wider if ok else ["float16", "int32", "bfloat16"]
        kwargs.append(("dtype", g.dtype_text(g.pick(pool))))
    return Call(op.name, args, kwargs)


# -------------------------------------------------------------------- rows

SUMMING_DTYPES = ["float32", "float64", "int64", "int32", "float16", "bfloat16", "int16", "bool"]


def rows(Op) -> list:
    """This family's rows of the op table (Op is gen.Op)."""
    dims = b_reduce_dims
    one = b_reduce_one_dim
    return [
        Op("sum", "reduce", dims, weight=1.0, extra={"dtypes": SUMMING_DTYPES}),
        Op("nansum", "reduce", dims, weight=0.5, extra={"dtypes": SUMMING_DTYPES}),
        Op("mean", "reduce", dims, dtypes=FLOATS, weight=1.0,
           extra={"dtypes": FLOATS, "bad_dtypes": INTS}),
        Op("nanmean", "reduce", dims, dtypes=FLOATS, weight=0.5,
           extra={"dtypes": FLOATS, "bad_dtypes": INTS}),
        Op("amax", "reduce", dims, weight=0.7),
        Op("amin", "reduce", dims, weight=0.5),
        Op("all", "reduce", dims, weight=0.5),
        Op("any", "reduce", dims, weight=0.5),
        Op("count_nonzero", "reduce", dims, weight=0.4, extra={"keepdim": False}),
        Op("logsumexp", "reduce", dims, weight=0.5, extra={"required": True}),
        Op("prod", "reduce", one, weight=0.5, extra={"dtypes": SUMMING_DTYPES}),
        Op("argmax", "reduce", one, dtypes=NUMERIC, weight=0.6),
        Op("argmin", "reduce", one, dtypes=NUMERIC, weight=0.4),
        Op("max", "reduce", b_max, weight=1.0),
        Op("min", "reduce", b_max, weight=0.6),
        Op("var", "reduce", b_var, dtypes=FLOATS, weight=0.7),
        Op("std", "reduce", b_var, dtypes=FLOATS, weight=0.5),
        Op("var_mean", "reduce", b_var, dtypes=FLOATS, weight=0.4),
        Op("std_mean", "reduce", b_var, dtypes=FLOATS, weight=0.4),
        Op("norm", "reduce", b_norm, dtypes=FLOATS, weight=0.7),
        Op("linalg.vector_norm", "reduce", b_norm, dtypes=FLOATS, weight=0.5),
        Op("cumsum", "reduce", one, weight=0.6,
           extra={"required": True, "keepdim": False, "dtypes": SUMMING_DTYPES}),
        Op("cumprod", "reduce", one, weight=0.4,
           extra={"required": True, "keepdim": False, "dtypes": SUMMING_DTYPES}),
        Op("cummax", "reduce", one, weight=0.4, extra={"required": True, "keepdim": False}),
        Op("cummin", "reduce", one, weight=0.3, extra={"required": True, "keepdim": False}),
        Op("median", "reduce", one, dtypes=NUMERIC, weight=0.4),
        Op("nanmedian", "reduce", one, dtypes=FLOATS, weight=0.3),
        Op("mode", "reduce", one, dtypes=NUMERIC, weight=0.3, extra={"required": False}),
    ]


__all__ = ["rows", "b_reduce_dims", "b_reduce_one_dim", "b_max", "b_var", "b_norm"]
