"""Builders of generated calls, one per kind of op (see gen.py's OPS table).

A builder: (g, op, ok) -> Call.  `op.dtypes` are the dtypes a valid call
draws from; an invalid call may draw from the others."""

from typing import List, Optional, Tuple

from gen_inputs import ALL, FLOATS, NUMERIC, Call, Gen, Tx, _lst, _numel


def _bad_dtypes(op) -> List[str]:
    return [d for d in ALL if d not in op.dtypes] or ALL


def _size_args(g: Gen, shape, allow_varargs: bool = True) -> List[str]:
    """A size argument in one of its accepted spellings."""
    form = g.pick(["list", "tuple", "varargs"] if allow_varargs and shape else ["list", "tuple"])
    if form == "varargs":
        return [str(s) for s in shape]
    if form == "tuple":
        return ["(%s)" % "".join("%s, " % s for s in shape)] if len(shape) == 1 else \
            ["(%s)" % ", ".join(map(str, shape))]
    return [_lst(shape)]


def b_sized_creation(g: Gen, op, ok: bool) -> Call:
    """empty/zeros/ones(size..., dtype=, device=); full(size, fill)."""
    shape = list(g.shape())
    if not ok:
        bad = g.pick(["negative", "float", "string"])
        if bad == "negative":
            shape = shape or [2]
            shape[g.randint(0, len(shape) - 1)] = g.pick([-1, -2])
        elif bad == "float":
            shape = (shape or [2]) + ["2.5"]
        else:
            shape = ["'a'"] + shape
    full = op.name == "full"
    args = _size_args(g, shape, allow_varargs=not full)
    kwargs = []
    if full:
        args.append(g.scalar())
    if g.chance(0.4):
        kwargs.append(("dtype", g.dtype_text(g.dtype(op.dtypes))))
    if not g.values and g.chance(0.1):
        kwargs.append(("device", g.pick(["'meta'", "'cpu'"])))
    return Call(op.name, args, kwargs)


def b_arange(g: Gen, op, ok: bool) -> Call:
    form = g.randint(1, 3)
    floats = g.chance(0.3)
    num = (lambda lo, hi: str(g.randint(lo, hi)) if not floats
           else "%.2f" % (g.randint(lo * 4, hi * 4) / 4))
    if form == 1:
        args = [num(0, 12)]
    elif form == 2:
        a = g.randint(-4, 4)
        args = [str(a), num(a, a + 10)]
    else:
        a = g.randint(-5, 5)
        step = g.pick(["1", "2", "3", "0.5", "-1", "-2", "0.3"])
        sign = -1 if step.startswith("-") else 1
        args = [str(a), str(a + sign * g.randint(0, 9)), step]
    if not ok:
        args = g.pick([[str(g.randint(0, 4)), "5", "0"], ["5", "0", "1"], ["0", "5", "-1"],
                       ["-3"], ["'a'"]])
    kwargs = [("dtype", g.dtype_text(g.dtype(op.dtypes)))] if g.chance(0.35) else []
    return Call(op.name, args, kwargs)


def b_linspace(g: Gen, op, ok: bool) -> Call:
    start = g.pick(["0", "-1", "2.5", "-3.0", "1"])
    end = g.pick(["1", "10", "-2.5", "4.0", "0"])
    steps = str(g.randint(0, 7))
    if not ok:
        steps = g.pick(["-1", "-3", "2.5"])
    kwargs = [("dtype", g.dtype_text(g.dtype(op.dtypes)))] if g.chance(0.35) else []
    args = [start, end, steps]
    if g.chance(0.2):
        return Call(op.name, args[:2], [("steps", steps)] + kwargs)
    return Call(op.name, args, kwargs)


def b_eye(g: Gen, op, ok: bool) -> Call:
    args = [str(g.randint(0, 5))]
    if g.chance(0.5):
        args.append(str(g.randint(0, 5)))
    if not ok:
        args[g.randint(0, len(args) - 1)] = g.pick(["-1", "-2"])
    kwargs = [("dtype", g.dtype_text(g.dtype(op.dtypes)))] if g.chance(0.35) else []
    return Call(op.name, args, kwargs)


def _input(g: Gen, op, ok: bool, lo: int = 0, hi: Optional[int] = None) -> Tx:
    shape = g.shape(lo, hi)
    dtype = g.dtype(op.dtypes if ok or g.chance(0.5) else _bad_dtypes(op))
    return g.tensor(shape, dtype)


def b_view(g: Gen, op, ok: bool) -> Call:
    """view/reshape(x, shape) with the shape as a list, tuple or varargs."""
    x = _input(g, op, True)
    target = g.reshape_target(x.shape)
    if not ok:
        target = g.pick([target + [2] if _numel(x.shape) else [3, -1, 0],
                         [-1, -1] + target, target + [0] if _numel(x.shape) else [1, 2],
                         [-2] + target])
    if not target:
        return Call(op.name, [x.text, "[]"])
    return Call(op.name, [x.text] + _size_args(g, target))


def b_transpose(g: Gen, op, ok: bool) -> Call:
    x = _input(g, op, True)
    nd = len(x.shape)
    d0, d1 = g.dim(nd), g.dim(nd)
    if not ok:
        if g.chance(0.5):
            d0 = g.bad_dim(nd)
        else:
            d1 = g.bad_dim(nd)
    return Call(op.name, [x.text, str(d0), str(d1)])


def b_t(g: Gen, op, ok: bool) -> Call:
    x = _input(g, op, True, 0, 2) if ok else _input(g, op, True, 3)
    return Call(op.name, [x.text])


def b_permute(g: Gen, op, ok: bool) -> Call:
    x = _input(g, op, True)
    nd = len(x.shape)
    perm = list(range(nd))
    g.rng.shuffle(perm)
    perm = [p - nd if g.chance(0.2) else p for p in perm]
    if not ok:
        if nd >= 2 and g.chance(0.5):
            perm[0] = perm[1]                     # repeated dim
        elif g.chance(0.5):
            perm = perm + [nd]                    # one too many
        else:
            perm = perm[:-1] if perm else [0]     # one too few
    if perm and g.chance(0.3):
        return Call(op.name, [x.text] + [str(p) for p in perm])
    return Call(op.name, [x.text, _lst(perm)])


def b_expand(g: Gen, op, ok: bool) -> Call:
    x = _input(g, op, True)
    lead = [g.randint(0, 3) for _ in range(g.randint(0, 2))]
    sizes = []
    for s in x.shape:
        if s == 1 and g.chance(0.6):
            sizes.append(g.randint(0, 4))
        else:
            sizes.append(-1 if g.chance(0.3) else s)
    sizes = lead + sizes
    if not ok:
        non1 = [k for k, s in enumerate(x.shape) if s != 1]
        if non1 and g.chance(0.6):
            k = len(lead) + g.pick(non1)
            sizes[k] = x.shape[k - len(lead)] + 1
        elif x.shape and g.chance(0.5):
            sizes = sizes[len(lead) + 1:]         # fewer dims than the input
        else:
            sizes = [-1] + sizes                  # -1 in a new leading dim
    if sizes and g.chance(0.3):
        return Call(op.name, [x.text] + [str(s) for s in sizes])
    return Call(op.name, [x.text, _lst(sizes)])


def b_squeeze(g: Gen, op, ok: bool) -> Call:
    x = _input(g, op, True)
    nd = len(x.shape)
    ones = [k for k, s in enumerate(x.shape) if s == 1]
    form = g.pick(["none", "int", "list"])
    if not ok:
        return Call(op.name, [x.text, str(g.bad_dim(nd))])
    if form == "none":
        return Call(op.name, [x.text])
    if form == "int":
        d = g.pick(ones) if ones and g.chance(0.6) else g.dim(nd)
        if g.chance(0.2):
            return Call(op.name, [x.text], [("dim", str(d))])
        return Call(op.name, [x.text, str(d)])
    dims = sorted(set(g.dim(nd) % max(nd, 1) for _ in range(g.randint(0, nd))))
    return Call(op.name, [x.text, _lst(dims)])


def b_unsqueeze(g: Gen, op, ok: bool) -> Call:
    x = _input(g, op, True)
    nd = len(x.shape)
    d = g.randint(-nd - 1, nd)
    if not ok:
        d = g.pick([nd + 1, nd + 2, -nd - 2])
    return Call(op.name, [x.text, str(d)])


def b_flatten(g: Gen, op, ok: bool) -> Call:
    x = _input(g, op, True)
    nd = len(x.shape)
    s, e = sorted([g.dim(nd) % max(nd, 1), g.dim(nd) % max(nd, 1)])
    if g.chance(0.3):
        s -= max(nd, 1)
    if not ok:
        if nd >= 2 and g.chance(0.6):
            s, e = nd - 1, 0
        else:
            e = g.bad_dim(nd)
    form = g.randint(0, 3)
    if form == 0:
        return Call(op.name, [x.text])
    if form == 1:
        return Call(op.name, [x.text, str(s)])
    if form == 2:
        return Call(op.name, [x.text, str(s), str(e)])
    return Call(op.name, [x.text], [("start_dim", str(s)), ("end_dim", str(e))])


def b_movedim(g: Gen, op, ok: bool) -> Call:
    x = _input(g, op, True, 1)
    nd = len(x.shape)
    if g.chance(0.5):
        src, dst = g.dim(nd), g.dim(nd)
        if not ok:
            src = g.bad_dim(nd)
        return Call(op.name, [x.text, str(src), str(dst)])
    k = g.randint(1, nd)
    src = g.rng.sample(range(nd), k)
    dst = g.rng.sample(range(nd), k)
    if not ok:
        if k >= 2 and g.chance(0.5):
            dst[0] = dst[1]
        else:
            dst = dst + [0]
    return Call(op.name, [x.text, _lst(src), _lst(dst)])


def b_narrow(g: Gen, op, ok: bool) -> Call:
    x = _input(g, op, True, 1)
    nd = len(x.shape)
    d = g.dim(nd)
    size = x.shape[d]
    start = g.randint(0, size)
    length = g.randint(0, size - start)
    if g.chance(0.2) and start < size:
        start -= size
    if not ok:
        v = g.pick(["long", "neg", "start", "dim"])
        if v == "long":
            length = size - max(start, 0) + 1
        elif v == "neg":
            length = -1
        elif v == "start":
            start = size + 1
        else:
            d = g.bad_dim(nd)
    return Call(op.name, [x.text, str(d), str(start), str(length)])


def b_select(g: Gen, op, ok: bool) -> Call:
    x = _input(g, op, True, 1)
    nd = len(x.shape)
    d = g.dim(nd)
    size = x.shape[d]
    if size == 0 and ok:
        x = g.tensor(tuple(s or 1 for s in x.shape), x.dtype)
        size = x.shape[d]
    idx = g.randint(-size, size - 1) if size else 0
    if not ok:
        v = g.pick(["idx", "dim", "zero-dim"])
        if v == "idx":
            idx = g.pick([size, size + 2, -size - 1])
        elif v == "dim":
            d = g.bad_dim(nd)
        else:
            x = g.tensor((), x.dtype)
            d, idx = 0, 0
    return Call(op.name, [x.text, str(d), str(idx)])


def b_unary_tensor(g: Gen, op, ok: bool) -> Call:
    """contiguous(x) and every unary element-wise op."""
    return Call(op.name, [_input(g, op, ok).text])


def b_repeat(g: Gen, op, ok: bool) -> Call:
    x = _input(g, op, True, 0, 3)
    nd = len(x.shape)
    sizes = [g.randint(0, 3) for _ in range(g.randint(0, 2))] + \
            [g.randint(0, 3) for _ in range(nd)]
    if not ok:
        sizes = sizes[:nd - 1] if nd >= 1 and g.chance(0.6) else sizes + [-1]
    if sizes and g.chance(0.4):
        return Call(op.name, [x.text] + [str(s) for s in sizes])
    return Call(op.name, [x.text, _lst(sizes)])


# -- element-wise binary

ROUNDING_OPS = {"remainder", "floor_divide"}


def b_binary(g: Gen, op, ok: bool) -> Call:
    out = g.shape()
    if ok:
        sa, sb = (out if g.chance(0.5) else g.bcast_from(out)), g.bcast_from(out)
        if g.chance(0.5):
            sa, sb = sb, sa
    else:
        sa, sb = g.mismatched(out)
    bad_dtype = not ok and g.chance(0.4)
    pool = _bad_dtypes(op) if bad_dtype else op.dtypes
    da, db = g.dtype(pool), g.dtype(pool)
    rounding = g.pick([None, None, "'floor'", "'trunc'"]) if op.name == "div" else None
    nonzero = op.name in ROUNDING_OPS or rounding is not None
    a = g.tensor(sa, da)
    r = g.rng.random()
    if r < 0.06:
        args = [g.scalar(), g.tensor(sb, db, nonzero).text]         # Python number first
    elif r < 0.25:
        kind = "float" if db in FLOATS else "bool" if db == "bool" else "int"
        if g.chance(0.4):
            kind = g.pick(["int", "float", "bool"])
        args = [a.text, g.scalar(kind, nonzero)]
    elif r < 0.35:
        args = [g.tensor((), da).text, g.tensor(sb, db, nonzero).text]
    elif r < 0.45:
        args = [a.text, g.tensor((), db, nonzero).text]
    else:
        args = [a.text, g.tensor(sb, db, nonzero).text]
    kwargs = []
    if op.name in ("add", "sub") and g.chance(0.25):
        kwargs.append(("alpha", g.pick(["2", "-1", "0.5", "True", "3"])))
    if op.name == "div" and rounding is not None or (op.name == "div" and g.chance(0.1)):
        kwargs.append(("rounding_mode", rounding if rounding else "None"))
    if op.name == "div" and not ok and g.chance(0.3):
        kwargs = [("rounding_mode", g.pick(["'round'", "'FLOOR'", "1"]))]
    return Call(op.name, args, kwargs)


def b_where(g: Gen, op, ok: bool) -> Call:
    out = g.shape()
    shapes = [g.bcast_from(out) if g.chance(0.6) else out for _ in range(3)]
    if not ok:
        shapes[0], shapes[g.randint(1, 2)] = g.mismatched(out)
    cond_dtype = "bool" if ok or g.chance(0.4) else g.dtype(NUMERIC)
    cond = g.tensor(shapes[0], cond_dtype).text
    dx, dy = g.dtype(), g.dtype()
    x = g.tensor(shapes[1], dx).text if g.chance(0.8) else g.scalar()
    y = g.tensor(shapes[2], dy).text if g.chance(0.8) else g.scalar()
    return Call(op.name, [cond, x, y])


# -- linalg

def _mat_dtype(g: Gen, op, ok: bool) -> Tuple[str, str]:
    d = g.dtype(op.dtypes)
    if ok or g.chance(0.5):
        return d, d
    return d, g.pick([e for e in ALL if e != d])


def b_matmul(g: Gen, op, ok: bool) -> Call:
    da, db = _mat_dtype(g, op, ok)
    n, k, m = g.size(), g.size(), g.size()
    case = g.randint(0, 4)
    if case == 0:
        sa, sb = (k,), (k,)
    elif case == 1:
        sa, sb = (n, k), (k, m)
    elif case == 2:
        sa, sb = (k,), tuple(g.shape(0, 2)) + (k, m)
    elif case == 3:
        sa, sb = tuple(g.shape(0, 2)) + (n, k), (k,)
    else:
        batch = g.shape(1, 3)
        sa = g.bcast_from(batch) + (n, k)
        sb = g.bcast_from(batch) + (k, m)
    if not ok and da == db:
        v = g.pick(["k", "zero-dim", "batch"])
        if v == "k":
            sb = tuple(sb[:-2]) + (k + 1,) + tuple(sb[-1:]) if len(sb) >= 2 else (k + 1,)
        elif v == "zero-dim":
            sa = ()
        else:
            sa, sb = (2, n, k), (3, k, m)
    return Call(op.name, [g.tensor(sa, da).text, g.tensor(sb, db).text])


def b_mm(g: Gen, op, ok: bool) -> Call:
    da, db = _mat_dtype(g, op, ok)
    n, k, m = g.size(), g.size(), g.size()
    batch = (g.randint(0, 3),)
    sa, sb = (n, k), (k, m)
    if op.name == "bmm":
        sa, sb = batch + sa, batch + sb
    elif op.name == "mv":
        sb = (k,)
    elif op.name == "dot":
        sa, sb = (k,), (k,)
    if not ok and da == db:
        v = g.pick(["k", "rank"])
        if v == "k":
            sb = ((sb[0] + 1,) + sb[1:]) if op.name != "bmm" else (sb[0], k + 1, m)
        else:
            sa = (2,) + sa if g.chance(0.5) else sa[1:]
    return Call(op.name, [g.tensor(sa, da).text, g.tensor(sb, db).text])


def b_linear(g: Gen, op, ok: bool) -> Call:
    dx, dw = _mat_dtype(g, op, ok)
    lead = g.shape(0, 3)
    fin, fout = g.size(), g.size()
    x = g.tensor(lead + (fin,), dx)
    wshape = (fout, fin) if g.chance(0.85) else (fin,)
    bias = None
    if g.chance(0.6):
        bshape = (fout,) if len(wshape) == 2 else ()
        if g.chance(0.2):
            bshape = ()
        bias = g.tensor(bshape, dx).text
    if not ok and dx == dw:
        v = g.pick(["in", "bias"])
        if v == "in":
            wshape = (fout, fin + 1)
        else:
            bias = g.tensor((fout + 2,), dx).text
    args = [x.text, g.tensor(wshape, dw).text]
    if bias is not None:
        if g.chance(0.5):
            return Call(op.name, args, [("bias", bias)])
        args.append(bias)
    elif g.chance(0.2):
        args.append("None")
    return Call(op.name, args)


# -- convert family

def b_to(g: Gen, op, ok: bool) -> Call:
    x = _input(g, op, True)
    dt = g.dtype_text(g.dtype())
    dev = g.pick(["'cpu'", "'meta'"])
    form = g.randint(0, 5)
    if not ok:
        return Call(op.name, [x.text, g.pick(["'gpu'", "'cuda:x'", "'cpu:-2'", "'meta:0'"])])
    if form == 0:
        return Call(op.name, [x.text, dt])
    if form == 1:
        return Call(op.name, [x.text], [("dtype", dt)])
    if form == 2:
        return Call(op.name, [x.text, dev])
    if form == 3:
        return Call(op.name, [x.text], [("device", dev)])
    if form == 4:
        return Call(op.name, [x.text, dev, dt])
    return Call(op.name, [x.text], [("device", dev), ("dtype", dt)])


def b_to_empty(g: Gen, op, ok: bool) -> Call:
    x = _input(g, op, True)
    if not ok:
        return Call(op.name, [x.text], g.pick([[("device", "'gpu'")], []]))
    return Call(op.name, [x.text], [("device", g.pick(["'cpu'", "'meta'"]))])


def b_item(g: Gen, op, ok: bool) -> Call:
    shape = g.pick([(), (1,), (1, 1)]) if ok else g.pick([(2,), (0,), (3, 1)])
    return Call(op.name, [g.tensor(shape, g.dtype()).text])


def b_nonzero(g: Gen, op, ok: bool) -> Call:
    x = _input(g, op, ok)
    if g.chance(0.2):
        return Call(op.name, [x.text], [("as_tuple", g.pick(["True", "False"]))])
    return Call(op.name, [x.text])


def b_masked_select(g: Gen, op, ok: bool) -> Call:
    out = g.shape()
    sx, sm = g.bcast_from(out), g.bcast_from(out)
    if not ok:
        sx, sm = g.mismatched(out)
    mdt = "bool" if ok or g.chance(0.5) else g.dtype(NUMERIC)
    return Call(op.name, [g.tensor(sx, g.dtype()).text, g.tensor(sm, mdt).text])


def b_unique(g: Gen, op, ok: bool) -> Call:
    x = _input(g, op, True)
    kwargs = []
    if g.chance(0.3):
        kwargs.append(("return_inverse", g.pick(["True", "False"])))
    if g.chance(0.3):
        kwargs.append(("return_counts", g.pick(["True", "False"])))
    if g.chance(0.25) and x.shape:
        kwargs.append(("dim", str(g.dim(len(x.shape)))))
    if not ok:
        kwargs.append(("dim", str(g.bad_dim(len(x.shape)))))
    return Call(op.name, [x.text], kwargs)


def b_copy_(g: Gen, op, ok: bool) -> Call:
    dst_shape = g.shape()
    src_shape = g.bcast_from(dst_shape)
    if not ok:
        dst_shape, src_shape = g.mismatched(dst_shape)
    dst = g.leaf(dst_shape, g.dtype()) if g.chance(0.7) else g.tensor(dst_shape, g.dtype())
    return Call(op.name, [dst.text, g.tensor(src_shape, g.dtype()).text])


# -- the rest of the op table: activations, clamp, splits, *_as, *_like, slice

def b_activation(g: Gen, op, ok: bool) -> Call:
    """op(x, key=value...): keyword values drawn from op.extra[key]; when
    every keyword is given, sometimes positionally in signature order."""
    x = _input(g, op, ok)
    kwargs = [(k, g.pick(vs)) for k, vs in op.extra.items() if g.chance(0.4)]
    if not ok and op.extra and g.chance(0.3):
        kwargs = [(next(iter(op.extra)), "'bad'")]
    if kwargs and len(kwargs) == len(op.extra) and g.chance(0.3):
        return Call(op.name, [x.text] + [v for _, v in kwargs])
    return Call(op.name, [x.text], kwargs)


def b_clamp(g: Gen, op, ok: bool) -> Call:
    x = _input(g, op, True)

    def bound():
        r = g.rng.random()
        if r < 0.45:
            return g.scalar(g.pick(["int", "float"]))
        if r < 0.75:
            return g.tensor(g.bcast_from(x.shape), g.dtype(op.dtypes)).text
        return "None"

    lo, hi = bound(), bound()
    if lo == "None" and hi == "None" and ok:
        lo = "0"
    if not ok:
        v = g.pick(["none", "shape"])
        if v == "none":
            lo, hi = "None", "None"
        else:
            a, b = g.mismatched(x.shape)
            x, lo = g.tensor(a, x.dtype), g.tensor(b, g.dtype(op.dtypes)).text
    form = g.randint(0, 2)
    if form == 0:
        return Call(op.name, [x.text, lo, hi])
    if form == 1:
        return Call(op.name, [x.text], [("min", lo), ("max", hi)])
    return Call(op.name, [x.text, lo])


def b_split(g: Gen, op, ok: bool) -> Call:
    """chunk(x, chunks, dim), split(x, size_or_sections, dim), unbind(x, dim)."""
    x = _input(g, op, True, 1)
    nd = len(x.shape)
    d = g.dim(nd)
    size = x.shape[d]
    dim_kw = g.chance(0.3)
    if not ok:
        d = g.bad_dim(nd)
    if op.name == "unbind":
        return Call(op.name, [x.text], [("dim", str(d))]) if dim_kw else Call(op.name, [x.text, str(d)])
    if op.name == "chunk":
        arg = str(g.randint(1, 5) if ok or g.chance(0.5) else g.pick([0, -1]))
    elif g.chance(0.5):
        arg = str(g.randint(1, 4) if ok or g.chance(0.5) else g.pick([0, -2]))
    else:
        parts, left = [], size
        while left > 0:
            p = g.randint(0, left)
            parts.append(p)
            left -= p
        if g.chance(0.2):
            parts.append(0)
        if not ok and g.chance(0.5):
            parts.append(1)
        arg = _lst(parts)
    if d == 0 and g.chance(0.3):
        return Call(op.name, [x.text, arg])
    return Call(op.name, [x.text, arg], [("dim", str(d))]) if dim_kw else \
        Call(op.name, [x.text, arg, str(d)])


def b_unflatten(g: Gen, op, ok: bool) -> Call:
    x = _input(g, op, True, 1)
    nd = len(x.shape)
    d = g.dim(nd)
    sizes = g.reshape_target((x.shape[d],)) or [1]
    if not ok:
        sizes = g.pick([sizes + [2] if x.shape[d] else [3, -1], [-1, -1] + sizes, []])
    return Call(op.name, [x.text, str(d), _lst(sizes)])


def b_as(g: Gen, op, ok: bool) -> Call:
    """expand_as / view_as / reshape_as / type_as (x, other)."""
    x = _input(g, op, True)
    if op.name == "expand_as":
        shape = tuple(g.randint(0, 3) for _ in range(g.randint(0, 2))) + \
            tuple(g.randint(0, 4) if s == 1 else s for s in x.shape)
    elif op.name in ("view_as", "reshape_as"):
        shape = tuple(g.reshape_target(x.shape))
        shape = tuple(_numel(x.shape) // max(1, -_numel(shape)) if s == -1 else s for s in shape)
    else:
        shape = g.shape()
    if not ok and op.name != "type_as":
        a, b = g.mismatched(x.shape)
        x, shape = g.tensor(a, x.dtype), b
    return Call(op.name, [x.text, g.tensor(shape, g.dtype()).text])


def b_like(g: Gen, op, ok: bool) -> Call:
    """clone(x), empty/zeros/ones_like(x, dtype=), full_like(x, fill, dtype=)."""
    x = _input(g, op, True)
    args = [x.text]
    if op.name == "full_like":
        args.append(g.scalar())
    kwargs = []
    if op.name != "clone" and g.chance(0.4):
        kwargs.append(("dtype", g.dtype_text(g.dtype())))
    if not ok:
        kwargs.append(g.pick([("dtype", "'f32'"), ("device", "'gpu'"), ("bogus", "1")]))
    return Call(op.name, args, kwargs)


def b_slice(g: Gen, op, ok: bool) -> Call:
    """slice(x, dim, start, end, step): start/end None, negative or past the end."""
    x = _input(g, op, True, 1)
    nd = len(x.shape)
    d = g.dim(nd)
    size = x.shape[d]
    bound = lambda: g.pick(["None", str(g.randint(-size - 2, size + 2))])  # noqa: E731
    step = str(g.randint(1, 3))
    if not ok:
        v = g.pick(["step", "dim"])
        if v == "step":
            step = g.pick(["0", "-1"])
        else:
            d = g.bad_dim(nd)
    return Call(op.name, [x.text, str(d), bound(), bound(), step])
