"""Builders of the ternary point-wise ops (lerp, addcmul, addcdiv) and glu,
and their rows of the op table: `rows(Op)` returns them.  Same protocol as
gen_builders.py: (g, op, ok) -> Call, inputs from gen_inputs.Gen.

Valid calls broadcast the three operands against one shape and mostly
keep lerp's dtypes equal (its rule); invalid ones mismatch a shape or,
for lerp, a dtype; glu gets an odd or 0-dim dim now and then."""

from gen_inputs import ALL, FLOATS, Call, Gen

FUNCTIONAL = {"glu"}

VALUES = ["1", "2", "0.5", "-1.5", "True", "0"]
LERP_WEIGHTS = ["0.5", "0.25", "0.75", "1", "0", "2", "-0.5", "True"]


def _three(g: Gen, ok: bool):
    """Shapes of three operands that broadcast (or, invalid, one that does not)."""
    out = g.shape()
    a, b, c = g.bcast_from(out), g.bcast_from(out), g.bcast_from(out)
    if not ok:
        a, b = g.mismatched(out)
    return a, b, c


def b_lerp(g: Gen, op, ok: bool) -> Call:
    """lerp(input, end, weight): weight a number or a tensor."""
    a, b, c = _three(g, ok and g.chance(0.8))
    dtype = g.dtype(op.dtypes)
    end_dtype = dtype if ok or g.chance(0.5) else g.dtype(FLOATS)
    args = [g.tensor(a, dtype).text, g.tensor(b, end_dtype).text]
    if g.chance(0.5):
        weight = g.pick(LERP_WEIGHTS)
    else:
        wshape = c if g.chance(0.7) else ()
        # a 0-dim weight may have any dtype; one with dimensions must match
        wdtype = dtype if wshape or g.chance(0.5) else g.dtype(FLOATS)
        if not ok and g.chance(0.3):
            wshape, wdtype = c or (2,), g.dtype(FLOATS)
        weight = g.tensor(wshape, wdtype).text
    if g.chance(0.2):
        return Call(op.name, args, [("weight", weight)])
    return Call(op.name, args + [weight])


def b_addc(g: Gen, op, ok: bool) -> Call:
    """addcmul/addcdiv(input, tensor1, tensor2, value=...): mixed dtypes."""
    a, b, c = _three(g, ok)
    dt = lambda: g.dtype(op.dtypes) if g.chance(0.7) else g.dtype(ALL)  # noqa: E731
    base = dt()
    t1 = base if g.chance(0.6) else dt()
    t2 = base if g.chance(0.6) else dt()
    args = [g.tensor(a, base).text, g.tensor(b, t1).text, g.tensor(c, t2).text]
    kwargs = [("value", g.pick(VALUES))] if g.chance(0.4) else []
    return Call(op.name, args, kwargs)


def b_glu(g: Gen, op, ok: bool) -> Call:
    """F.glu(input, dim=-1): dim's size even."""
    shape = list(g.shape(1))
    d = g.dim(len(shape))
    shape[d] = 2 * g.randint(0, 3)
    if not ok:
        v = g.pick(["odd", "scalar", "dim"])
        if v == "odd":
            shape[d] = g.pick([1, 3, 5])
        elif v == "scalar":
            shape = []
        else:
            d = g.bad_dim(len(shape))
    x = g.tensor(tuple(shape), g.dtype(op.dtypes))
    if g.chance(0.3) and d in (-1, len(shape) - 1) and ok:
        return Call(op.name, [x.text])
    if g.chance(0.3):
        return Call(op.name, [x.text], [("dim", str(d))])
    return Call(op.name, [x.text, str(d)])


def rows(Op):
    return [
        Op("lerp", "elementwise", b_lerp, dtypes=tuple(FLOATS) + ("float32", "int64", "bool")),
        Op("addcmul", "elementwise", b_addc, dtypes=tuple(ALL)),
        Op("addcdiv", "elementwise", b_addc, dtypes=tuple(FLOATS) + ("float32",)),
        Op("glu", "elementwise", b_glu, dtypes=tuple(ALL) + ("float32", "float16", "bfloat16")),
    ]
