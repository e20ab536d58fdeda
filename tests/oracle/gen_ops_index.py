"""Builders of the index family's generated calls (cat, stack, tensor_split,
tile, repeat_interleave, roll, flip, tril/triu, index_select, gather,
scatter, scatter_add, index_add, take_along_dim, embedding, one_hot, pad,
sort, argsort, topk, masked_fill) and their rows of the op table:
`rows(Op)` returns them.  Same protocol as gen_builders.py:
(g, op, ok) -> Call, inputs from gen_inputs.Gen.

Index tensors get valid values in "values" mode (remainder(arange(n), size)),
so that cpu runs mostly exercise the kernels rather than bounds errors;
invalid variants still put indices out of range now and then."""

from typing import List, Tuple

from gen_inputs import ALL, FLOATS, NUMERIC, Call, Gen, Tx, _lst, _numel

INDEX_DTYPES = ("int64", "int64", "int32")


def _maybe_kw(g: Gen, name: str, value: str, args: List[str], kwargs: list, p: float = 0.3):
    """Passes an argument by keyword now and then, else positionally."""
    if g.chance(p):
        kwargs.append((name, value))
    else:
        args.append(value)


def _cl_tensor(g: Gen, shape, dtype: str) -> Tx:
    """A channels-last tensor of a 4-D shape (N, C, H, W): a permuted NHWC
    tensor."""
    n, c, h, w = shape
    base = g.leaf((n, h, w, c), dtype)
    return Tx("permute(%s, [0, 3, 1, 2])" % base.text, tuple(shape), dtype)


def _some_tensor(g: Gen, shape, dtype: str) -> Tx:
    """A tensor of the shape; 4-D ones are channels-last now and then."""
    if len(shape) == 4 and g.chance(0.3):
        return _cl_tensor(g, shape, dtype)
    return g.tensor(shape, dtype)


def _index(g: Gen, shape, high: int, dtype: str = "int64", bad: bool = False) -> str:
    """An index tensor of the shape with values in [0, high) (values mode;
    a literal on meta).  `bad`: values may leave the range."""
    shape = tuple(shape)
    if not g.values:
        name = {"int64": "i64", "int32": "i32", "int16": "i16", "float32": "f32", "uint8": "u8",
                "bool": "bool"}.get(dtype, "i64")
        text = "%s[%s]" % (name, ",".join(str(s) for s in shape))
    else:
        n = _numel(shape)
        m = max(high, 1)
        if bad:
            base = "sub(remainder(arange(%d), %d), %d)" % (n, m + 2, 1)
        else:
            base = "remainder(arange(%d), %d)" % (n, m)
        if g.chance(0.3) and n > 1:
            base = "flip(%s, [0])" % base
        text = "reshape(%s, %s)" % (base, _lst(shape))
        if dtype != "int64":
            text = "to(%s, %s)" % (text, {"int32": "i32", "int16": "i16", "float32": "f32",
                                            "uint8": "u8", "bool": "bool"}.get(dtype, "i64"))
    if len(shape) == 2 and g.chance(0.2):  # a transposed index
        text = "t(contiguous(t(%s)))" % text
    return text


def _dtype(g: Gen, op, ok: bool) -> str:
    return g.dtype(op.dtypes if ok or g.chance(0.6) else [d for d in ALL if d not in op.dtypes] or ALL)


# ------------------------------------------------------------------ joining

def b_cat(g: Gen, op, ok: bool) -> Call:
    """cat/concat/concatenate(tensors, dim): shapes equal except along dim,
    mixed dtypes now and then, the legacy empty [0] tensor."""
    nd = g.ndim(1, 4)
    base = [g.size() for _ in range(nd)]
    d = g.dim(nd)
    n = g.randint(1, 4)
    dtype = _dtype(g, op, True)
    items = []
    for _ in range(n):
        shape = list(base)
        shape[d] = g.randint(0, 3)
        dt = dtype if g.chance(0.75) else g.dtype(op.dtypes)
        if g.chance(0.1):
            items.append(g.leaf((0,), dt).text)   # skipped by cat
        else:
            items.append(_some_tensor(g, shape, dt).text)
    if not ok:
        bad = g.pick(["size", "rank", "scalar", "dim", "empty"])
        if bad == "size" and nd > 1:
            shape = list(base)
            other = (d + 1) % nd
            shape[other] += 1
            items.append(g.tensor(shape, dtype).text)
        elif bad == "rank":
            items.append(g.tensor(base + [2], dtype).text)
        elif bad == "scalar":
            items.append(g.tensor((), dtype).text)
        elif bad == "dim":
            d = g.bad_dim(nd)
        else:
            items = []
    args, kwargs = ["[%s]" % ", ".join(items)], []
    if d != 0 or g.chance(0.3):
        _maybe_kw(g, "axis" if op.name == "concatenate" else "dim", str(d), args, kwargs)
    return Call(op.name, args, kwargs)


def b_stack(g: Gen, op, ok: bool) -> Call:
    shape = g.shape(0, 4)
    n = g.randint(1, 3)
    dtype = _dtype(g, op, True)
    items = [_some_tensor(g, shape, dtype if g.chance(0.8) else g.dtype(op.dtypes)).text
             for _ in range(n)]
    nd = len(shape) + 1
    d = g.randint(-nd, nd - 1)
    if not ok:
        if g.chance(0.5):
            d = g.pick([nd, -nd - 1])
        else:
            items.append(g.tensor(tuple(shape) + (2,), dtype).text)
    args, kwargs = ["[%s]" % ", ".join(items)], []
    _maybe_kw(g, "dim", str(d), args, kwargs)
    return Call(op.name, args, kwargs)


def b_hvdstack(g: Gen, op, ok: bool) -> Call:
    """hstack/vstack/dstack: shapes that agree after atleast_Nd, except along
    the joined dim."""
    nd = g.ndim(0, 4)
    base = [g.randint(1, 3) for _ in range(nd)]
    along = {"hstack": 0 if nd == 1 else 1, "vstack": 0, "row_stack": 0, "dstack": 2}[op.name]
    dtype = _dtype(g, op, True)
    items = []
    for _ in range(g.randint(1, 3)):
        shape = list(base)
        if along < nd and (op.name != "vstack" or nd >= 2) and (op.name != "dstack" or nd >= 3):
            shape[along] = g.randint(0, 3)
        items.append(_some_tensor(g, shape, dtype).text)
    if not ok:
        items.append(g.tensor(tuple(base) + (3,), dtype).text if g.chance(0.5) else "f32[7,7,7]")
    return Call(op.name, ["[%s]" % ", ".join(items)])


# ------------------------------------------------------ splitting, repeating

def b_tensor_split(g: Gen, op, ok: bool) -> Call:
    x = g.tensor(g.shape(1, 4), _dtype(g, op, True))
    nd = len(x.shape)
    d = g.dim(nd)
    size = x.shape[d]
    args, kwargs = [x.text], []
    if g.chance(0.5):
        sections = g.randint(1, 5) if ok else g.pick([0, -1])
        if g.chance(0.2):
            kwargs.append(("sections", str(sections)))
        else:
            args.append(str(sections))
    else:
        idx = sorted(g.randint(-size - 1, size + 2) for _ in range(g.randint(0, 3)))
        if g.chance(0.2):
            idx.reverse()
        text = _lst(idx) if g.chance(0.8) or not idx else "(%s,)" % ", ".join(map(str, idx))
        if not ok:
            text = "[1.5]"
        if g.chance(0.2):
            kwargs.append(("indices", text))
        else:
            args.append(text)
    if d != 0 or g.chance(0.3):
        kwargs.append(("dim", str(d if ok or g.chance(0.5) else g.bad_dim(nd))))
    return Call(op.name, args, kwargs)


def b_tile(g: Gen, op, ok: bool) -> Call:
    x = _some_tensor(g, g.shape(0, 4), _dtype(g, op, True))
    dims = [g.randint(0, 3) for _ in range(g.randint(0, len(x.shape) + 1))]
    if not ok:
        dims = (dims or [1]) + [-1]
    return Call(op.name, [x.text, _lst(dims)])


def b_repeat_interleave(g: Gen, op, ok: bool) -> Call:
    """int repeats (with or without dim, output_size), a repeats tensor
    (with output_size on meta; data on cpu), or the repeats alone."""
    x = _some_tensor(g, g.shape(0, 3), _dtype(g, op, True))
    nd = len(x.shape)
    has_dim = nd > 0 and g.chance(0.7)
    d = g.dim(nd) if has_dim else None
    size = x.shape[d] if has_dim else _numel(x.shape)
    form = g.pick(["int", "int", "tensor", "self"])
    kwargs = []
    if form == "int":
        r = g.randint(0, 3) if ok else -1
        args = [x.text, str(r)]
        out = r * size
    elif form == "tensor":
        n = g.pick([size, size, 1]) if ok else size + 1
        args = [x.text, _index(g, (n,) if g.chance(0.8) else (), 3)]
        out = None
    else:
        n = g.randint(0, 4)
        args = [_index(g, (n,), 3)]
        out = None
        has_dim = False
    if has_dim:
        if g.chance(0.3):
            kwargs.append(("dim", str(d)))
        else:
            args.append(str(d))
    if form != "int" and not g.values:
        out = g.randint(0, 6)
    if out is not None and (form != "int" or g.chance(0.3)):
        kwargs.append(("output_size", str(out if ok or g.chance(0.5) else out + 1)))
    return Call(op.name, args, kwargs)


# ------------------------------------------------------------ reordering

def b_roll(g: Gen, op, ok: bool) -> Call:
    x = _some_tensor(g, g.shape(0, 4), _dtype(g, op, True))
    nd = len(x.shape)
    k = g.randint(0, min(nd, 3))
    dims = [g.dim(nd) for _ in range(k)]
    shifts = [g.randint(-5, 5) for _ in range(max(k, 1))]
    if not ok:
        shifts = shifts + [1] if g.chance(0.5) else []
        if g.chance(0.3):
            dims = dims + [g.bad_dim(nd)]
    shift_text = str(shifts[0]) if len(shifts) == 1 and g.chance(0.5) else _lst(shifts)
    if not dims:
        return Call(op.name, [x.text, shift_text])
    dim_text = str(dims[0]) if len(dims) == 1 and g.chance(0.5) else _lst(dims)
    if g.chance(0.3):
        return Call(op.name, [x.text, shift_text], [("dims", dim_text)])
    return Call(op.name, [x.text, shift_text, dim_text])


def b_flip(g: Gen, op, ok: bool) -> Call:
    x = _some_tensor(g, g.shape(0, 4), _dtype(g, op, True))
    nd = len(x.shape)
    dims = [d for d in range(max(nd, 1)) if g.chance(0.5)]
    dims = [d - max(nd, 1) if g.chance(0.3) else d for d in dims]
    if not ok:
        dims = dims + [dims[0]] if dims and g.chance(0.5) else dims + [g.bad_dim(nd)]
    return Call(op.name, [x.text, _lst(dims)])


def b_tri(g: Gen, op, ok: bool) -> Call:
    x = _some_tensor(g, g.shape(2 if ok else 0, 4), _dtype(g, op, ok))
    args, kwargs = [x.text], []
    if g.chance(0.7):
        _maybe_kw(g, "diagonal", str(g.randint(-3, 3)), args, kwargs)
    return Call(op.name, args, kwargs)


# ------------------------------------------------------------- by index

def b_index_select(g: Gen, op, ok: bool) -> Call:
    x = _some_tensor(g, g.shape(0, 4), _dtype(g, op, True))
    nd = len(x.shape)
    d = g.dim(nd)
    size = x.shape[d] if nd else 1
    ishape = (g.randint(0, 4),) if g.chance(0.85) or size == 0 else ()
    if size == 0:
        ishape = (0,)
    idt = g.pick(INDEX_DTYPES)
    if not ok:
        bad = g.pick(["dim", "dtype", "rank", "values"])
        if bad == "dim":
            d = g.bad_dim(nd)
        elif bad == "dtype":
            idt = g.pick(["float32", "int16"])
        elif bad == "rank":
            ishape = (2, 2)
        return Call(op.name, [x.text, str(d), _index(g, ishape, size, idt, bad == "values")])
    return Call(op.name, [x.text, str(d), _index(g, ishape, size, idt)])


def _index_shape_within(g: Gen, shape, d: int, grow: bool = True) -> Tuple[int, ...]:
    """A shape no larger than `shape` apart from dim d."""
    out = []
    for k, s in enumerate(shape):
        out.append(g.randint(0, s + 2) if k == d and grow else g.randint(0, s) if s else 0)
    return tuple(out)


def b_gather(g: Gen, op, ok: bool) -> Call:
    x = _some_tensor(g, g.shape(0, 4), _dtype(g, op, True))
    nd = len(x.shape)
    d = g.dim(nd)
    size = x.shape[d] if nd else 1
    ishape = _index_shape_within(g, x.shape, d % max(nd, 1))
    idt = g.pick(INDEX_DTYPES)
    args, kwargs = [x.text, str(d)], []
    bad_values = False
    if not ok:
        bad = g.pick(["dim", "dtype", "rank", "size", "values"])
        if bad == "dim":
            args[1] = str(g.bad_dim(nd))
        elif bad == "dtype":
            idt = "float32"
        elif bad == "rank":
            ishape = tuple(ishape) + (1,)
        elif bad == "size" and nd > 1:
            k = (d + 1) % nd
            ishape = tuple(s + 1 if i == k else s for i, s in enumerate(ishape))
        bad_values = bad == "values"
    args.append(_index(g, ishape, size, idt, bad_values))
    if g.chance(0.1):
        kwargs.append(("sparse_grad", "False"))
    return Call(op.name, args, kwargs)


def b_scatter(g: Gen, op, ok: bool) -> Call:
    """scatter(x, dim, index, src | value, reduce=), scatter_add(x, dim,
    index, src)."""
    dtype = _dtype(g, op, True)
    x = _some_tensor(g, g.shape(0, 3), dtype)
    nd = len(x.shape)
    d = g.dim(nd)
    size = x.shape[d] if nd else 1
    ishape = _index_shape_within(g, x.shape, d % max(nd, 1), grow=False) if nd else ()
    # (x.shape[d] bounds the index values; its shape may not exceed x's)
    idt = g.pick(INDEX_DTYPES)
    src_shape = tuple(s + g.randint(0, 1) for s in ishape)
    args, kwargs = [x.text, str(d), _index(g, ishape, size, idt, not ok and g.chance(0.3))], []
    use_value = op.name == "scatter" and g.chance(0.4)
    if use_value:
        value = g.scalar("float" if dtype in FLOATS else "bool" if dtype == "bool" else "int")
        _maybe_kw(g, "value", value, args, kwargs, 0.3)
    else:
        sdt = dtype if ok or g.chance(0.5) else g.pick([t for t in NUMERIC if t != dtype])
        args.append(g.tensor(src_shape, sdt).text)
    if op.name == "scatter" and g.chance(0.25):
        kwargs.append(("reduce", g.pick(["'add'", "'multiply'"]) if ok else "'sum'"))
    if not ok and g.chance(0.3):
        args[1] = str(g.bad_dim(nd))
    return Call(op.name, args, kwargs)


def b_index_add(g: Gen, op, ok: bool) -> Call:
    dtype = _dtype(g, op, True)
    x = _some_tensor(g, g.shape(0, 3), dtype)
    nd = len(x.shape)
    d = g.dim(nd)
    size = x.shape[d] if nd else 1
    n = g.randint(0, 4) if size else 0
    source_shape = list(x.shape)
    if nd:
        source_shape[d] = n
    else:
        n = 1
    ishape = (n,) if nd or g.chance(0.5) else ()
    idt = g.pick(INDEX_DTYPES)
    if not ok:
        bad = g.pick(["count", "dtype", "source"])
        if bad == "count":
            ishape = (n + 1,)
        elif bad == "dtype":
            idt = "float32"
        elif nd:
            source_shape[(d + 1) % nd] += 1
    args = [x.text, str(d), _index(g, ishape, size, idt), g.tensor(tuple(source_shape), dtype).text]
    kwargs = []
    if g.chance(0.4):
        kwargs.append(("alpha", g.pick(["2", "-1", "0.5", "1"]) if dtype in FLOATS else g.pick(["2", "-1", "3"])))
    return Call(op.name, args, kwargs)


def b_take_along_dim(g: Gen, op, ok: bool) -> Call:
    x = _some_tensor(g, g.shape(1, 3), _dtype(g, op, True))
    nd = len(x.shape)
    if g.chance(0.3):  # dim=None: flattened
        n = _numel(x.shape)
        ishape = g.shape(0, 2)
        x = g.leaf(x.shape, x.dtype) if g.chance(0.7) else x
        return Call(op.name, [x.text, _index(g, ishape, n, "int64", not ok)])
    d = g.dim(nd)
    ishape = []
    for k, s in enumerate(x.shape):
        if k == d % nd:
            ishape.append(g.randint(0, 3))
        else:
            ishape.append(g.pick([s, s, 1]))
    size = x.shape[d]
    idt = "int64" if ok or g.chance(0.5) else "int32"
    if not ok and g.chance(0.5):
        ishape = ishape[:-1] or [2, 2]
    args = [x.text, _index(g, ishape, max(size, 1), idt)]
    if g.chance(0.3):
        return Call(op.name, args, [("dim", str(d))])
    return Call(op.name, args + [str(d)])


def b_embedding(g: Gen, op, ok: bool) -> Call:
    rows, width = g.randint(1, 5), g.randint(0, 4)
    w = g.tensor((rows, width), _dtype(g, op, True))
    idt = g.pick(INDEX_DTYPES) if ok else g.pick(["float32", "int16"])
    idx = _index(g, g.shape(0, 3), rows, idt)
    kwargs = []
    if g.chance(0.3):
        p = g.randint(-rows, rows - 1) if ok else g.pick([rows, -rows - 1])
        kwargs.append(("padding_idx", str(p)))
    if not ok and g.chance(0.3):
        w = g.tensor((rows,), w.dtype)
    return Call("F." + op.name, [idx, w.text], kwargs)


def b_one_hot(g: Gen, op, ok: bool) -> Call:
    shape = g.shape(0, 3)
    classes = g.randint(1, 5)
    idx = _index(g, shape, classes, "int64" if ok else g.pick(["int32", "int64"]))
    args, kwargs = [idx], []
    if g.values and g.chance(0.2):
        return Call("F." + op.name, args)       # num_classes from the data
    _maybe_kw(g, "num_classes", str(classes if ok else g.pick([-2, 0])), args, kwargs)
    return Call("F." + op.name, args, kwargs)


def b_pad(g: Gen, op, ok: bool) -> Call:
    mode = g.pick(["constant", "constant", "reflect", "replicate", "circular"])
    dtype = _dtype(g, op, True)
    if mode == "constant":
        shape = g.shape(0, 4)
        k = g.randint(0, len(shape))
        pad = []
        for i in range(k):
            s = shape[len(shape) - 1 - i]
            pad += [g.randint(-min(s, 2), 2), g.randint(-min(s, 2), 2)]
    else:
        k = g.randint(1, 3)
        nd = k + g.randint(1, 2)
        shape = [g.randint(1, 4) for _ in range(nd)]
        if g.chance(0.15):
            shape[0] = 0
        pad = []
        for i in range(k):
            s = shape[nd - 1 - i]
            hi = s - 1 if mode == "reflect" else s
            # (torch's circular padding reads uninitialized memory for
            # negative pads: no values to compare there)
            lo = 0 if mode == "circular" and g.values else -1
            pad += [g.randint(lo, hi), g.randint(lo, hi)]
    x = _some_tensor(g, shape, dtype)
    if not ok:
        pad = g.pick([pad + [1], pad + [1, 1] * (len(shape) + 1), [9, 9] + pad[2:]])
    args, kwargs = [x.text, _lst(pad) if g.chance(0.8) else "(%s)" % "".join("%d, " % p for p in pad)], []
    if mode != "constant" or g.chance(0.3):
        _maybe_kw(g, "mode", "'%s'" % mode, args, kwargs, 0.5)
    if mode == "constant" and g.chance(0.5):
        kwargs.append(("value", g.pick(["1.5", "-2", "0", "7"])))
    return Call("F." + op.name, args, kwargs)


# --------------------------------------------------------------- sorting

def b_sort(g: Gen, op, ok: bool) -> Call:
    """sort/argsort(x, dim, descending, stable=): torch's parser takes
    `stable` only with dim and descending by keyword (a positional dim
    with stable= is an error there, and in mtk)."""
    x = _some_tensor(g, g.shape(0, 3), _dtype(g, op, ok))
    nd = len(x.shape)
    stable = g.chance(0.4)
    args, kwargs = [x.text], []
    if g.chance(0.6):
        _maybe_kw(g, "dim", str(g.dim(nd)), args, kwargs, 0.8 if stable else 0.3)
    if g.chance(0.4):
        kwargs.append(("descending", g.pick(["True", "False"])))
    if stable:
        kwargs.append(("stable", g.pick(["True", "False"])))
    return Call(op.name, args, kwargs)


def b_topk(g: Gen, op, ok: bool) -> Call:
    x = _some_tensor(g, g.shape(0, 3), _dtype(g, op, ok))
    nd = len(x.shape)
    d = g.dim(nd)
    size = x.shape[d] if nd else 1
    k = g.randint(0, size) if ok else g.pick([size + 1, -1])
    args, kwargs = [x.text, str(k)], []
    if d != -1 or g.chance(0.5):
        _maybe_kw(g, "dim", str(d), args, kwargs)
    if g.chance(0.4):
        kwargs.append(("largest", g.pick(["True", "False"])))
    if g.chance(0.3):
        kwargs.append(("sorted", g.pick(["True", "False"])))
    return Call(op.name, args, kwargs)


def b_masked_fill(g: Gen, op, ok: bool) -> Call:
    dtype = _dtype(g, op, True)
    x = _some_tensor(g, g.shape(0, 4), dtype)
    mshape = g.bcast_from(x.shape)
    mask = g.tensor(mshape, "bool" if ok or g.chance(0.5) else "uint8")
    if g.chance(0.3):
        value = g.tensor((), g.pick(["float32", "int64", "bool"])).text
    else:
        value = g.scalar("float" if dtype in FLOATS else "bool" if dtype == "bool" else "int")
    if not ok and g.chance(0.5):
        mask = g.tensor(g.mismatched(x.shape)[1], "bool")
    return Call(op.name, [x.text, mask.text, value])


# ---------------------------------------------------------------- the rows

SORTABLE = tuple(ALL)                        # sort takes bool on cpu
TOPK = tuple(d for d in ALL if d != "bool")  # topk does not


def rows(Op) -> list:
    """The index family's rows of gen.OPS (Op: gen.Op)."""
    return [
        Op("cat", "index", b_cat, weight=1.5),
        Op("concat", "index", b_cat, weight=0.5),
        Op("concatenate", "index", b_cat, weight=0.5),
        Op("stack", "index", b_stack),
        Op("hstack", "index", b_hvdstack, weight=0.5),
        Op("vstack", "index", b_hvdstack, weight=0.5),
        Op("dstack", "index", b_hvdstack, weight=0.5),
        Op("tensor_split", "index", b_tensor_split),
        Op("tile", "index", b_tile),
        Op("repeat_interleave", "index", b_repeat_interleave),
        Op("roll", "index", b_roll),
        Op("flip", "index", b_flip),
        Op("tril", "index", b_tri),
        Op("triu", "index", b_tri),
        Op("index_select", "index", b_index_select),
        Op("gather", "index", b_gather),
        Op("scatter", "index", b_scatter),
        Op("scatter_add", "index", b_scatter),
        Op("index_add", "index", b_index_add),
        Op("take_along_dim", "index", b_take_along_dim),
        Op("embedding", "index", b_embedding),
        Op("one_hot", "index", b_one_hot, dtypes=("int64",)),
        Op("pad", "index", b_pad),
        Op("sort", "index", b_sort, dtypes=SORTABLE),
        Op("argsort", "index", b_sort, dtypes=SORTABLE),
        Op("topk", "index", b_topk, dtypes=TOPK),
        Op("masked_fill", "index", b_masked_fill),
    ]
