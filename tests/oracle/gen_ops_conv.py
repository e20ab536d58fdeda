"""Builders and table rows of the conv family for the oracle generator:
convolutions (conv1d/2d/3d, conv_transpose1d/2d/3d), pooling (max, avg,
adaptive) and interpolate.  Same protocol as gen_builders: a builder is
(g, op, ok) -> Call; `rows(Op)` returns this family's rows of gen.OPS.

Valid calls draw sizes that fit (kernel within the padded input, groups
dividing the channels, output_padding below stride or dilation); invalid
ones break one rule at a time (a channel count, a bias size, a negative
padding, a kernel larger than the input, a 'same' padding with a stride,
a pooling padding over half the kernel, a mode on the wrong dims, ...).
Inputs are sometimes channels-last (a permuted NHWC / NDHWC tensor),
non-contiguous views, unbatched, or empty along the batch."""

from typing import List, Optional, Sequence

from gen_inputs import Call, Gen, Tx, _lst

# float16/bfloat16 convolutions: torch_eval.py turns oneDNN (mkldnn) off,
# whose torch 2.13 cpu kernels give wrong values for some of them here
# (channels-last or dilated inputs, all zeros for some 3-D ones) and crash
# on some strided dilated ones; torch's native kernels are the reference.
CONV_DTYPES = ("float32", "float32", "float32", "float64", "int64", "float16", "bfloat16")
POOL_DTYPES = ("float32", "float32", "float64", "float16", "bfloat16")
AVG_DTYPES = ("float32", "float32", "float64", "bfloat16", "int64")
MAX_DTYPES = ("float32", "float32", "float64", "float16", "int64", "int32", "uint8")
INTERP_DTYPES = ("float32", "float32", "float64", "float16", "bfloat16")


def _ints(g: Gen, values: Sequence[int], n: int, as_int_ok: bool = True) -> str:
    """n ints as an int (all equal, sometimes) or a tuple/list."""
    values = list(values)
    if as_int_ok and all(v == values[0] for v in values) and g.chance(0.5):
        return str(values[0])
    if len(values) == 1 and g.chance(0.5):
        return "(%d,)" % values[0]
    return _lst(values) if g.chance(0.5) else "(%s)" % ", ".join(map(str, values))


def _input(g: Gen, shape, dtype: str) -> str:
    """A tensor of `shape`: contiguous, channels-last (4-D/5-D) or a view."""
    nd = len(shape)
    if nd in (4, 5) and g.chance(0.25):
        # a channels-last tensor: permute an N, *spatial, C tensor
        base = [shape[0]] + list(shape[2:]) + [shape[1]]
        perm = [0, nd - 1] + list(range(1, nd - 1))
        return "permute(%s, %s)" % (g.leaf(base, dtype).text, _lst(perm))
    return g.tensor(shape, dtype).text


# ------------------------------------------------------------ convolution

def _conv_geometry(g: Gen, spatial: int, transposed: bool, ok: bool):
    """Sizes of a convolution call that fits (when ok)."""
    small = g.values
    batch = g.pick([1, 2, 2, 0]) if not small else g.pick([1, 2])
    groups = g.pick([1, 1, 1, 2, 3])
    cin_g, cout_g = g.randint(1, 3), g.randint(1, 3)
    kernel = [g.randint(1, 3) for _ in range(spatial)]
    stride = [g.pick([1, 1, 2, 3]) for _ in range(spatial)]
    dilation = [g.pick([1, 1, 1, 2]) for _ in range(spatial)]
    padding = [g.randint(0, 2) for _ in range(spatial)]
    size = [g.randint(1, 5 if small else 7) for _ in range(spatial)]
    if not transposed:
        for i in range(spatial):
            span = dilation[i] * (kernel[i] - 1) + 1
            if size[i] + 2 * padding[i] < span:
                size[i] = span - 2 * padding[i] + g.randint(0, 2)
    outpad = [0] * spatial
    if transposed:
        for i in range(spatial):
            limit = max(stride[i], dilation[i])
            outpad[i] = g.randint(0, limit - 1) if g.chance(0.4) else 0
            # the output must have a positive size
            while (size[i] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (kernel[i] - 1) + outpad[i] + 1 < 1:
                padding[i] = max(0, padding[i] - 1)
                if padding[i] == 0:
                    break
    return dict(batch=batch, groups=groups, cin_g=cin_g, cout_g=cout_g, kernel=kernel,
                stride=stride, dilation=dilation, padding=padding, size=size, outpad=outpad)


def b_conv(g: Gen, op, ok: bool) -> Call:
    """F.conv{1,2,3}d / F.conv_transpose{1,2,3}d(input, weight, bias, ...)."""
    transposed = "transpose" in op.name
    spatial = int(op.name[-2])
    p = _conv_geometry(g, spatial, transposed, ok)
    dtype = g.dtype(op.dtypes)
    groups = p["groups"]
    cin, cout = p["cin_g"] * groups, p["cout_g"] * groups
    if transposed:
        wshape = [cin, p["cout_g"]] + p["kernel"]
    else:
        wshape = [cout, p["cin_g"]] + p["kernel"]
    ishape = [p["batch"], cin] + p["size"]
    bias = g.chance(0.5)
    bshape = [cout]
    kwargs = []
    padding: Optional[str] = None
    bad = None if ok else g.pick(["channels", "bias", "groups", "padding", "kernel", "dims",
                                  "dtype", "same_stride", "outpad", "stride"])
    wdtype = dtype
    if bad == "channels":
        ishape[1] += 1
    elif bad == "bias":
        bias, bshape = True, [cout + 1]
    elif bad == "groups":
        groups += 1
    elif bad == "padding":
        p["padding"][0] = -1
    elif bad == "kernel" and not transposed:
        wshape[2] = p["size"][0] + 2 * p["padding"][0] + 1
    elif bad == "dims":
        ishape = ishape[1:] if g.chance(0.5) else [1] + ishape
        ishape = ishape[:1] if len(ishape) < 2 else ishape
    elif bad == "dtype":
        wdtype = g.pick([d for d in ("float32", "float64", "float16") if d != dtype])
    elif bad == "stride":
        p["stride"][0] = g.pick([0, -1])
    elif bad == "outpad" and transposed:
        p["outpad"][0] = max(p["stride"][0], p["dilation"][0])
    if ok and g.chance(0.15) and ishape[0] == 1:
        ishape = ishape[1:]                      # unbatched
    if not transposed and g.chance(0.2):
        padding = g.pick(["'same'", "'valid'"])
        if bad == "same_stride":
            padding = "'same'"
            p["stride"][0] = 2
        elif padding == "'same'":
            p["stride"] = [1] * spatial
    args = [_input(g, ishape, dtype), g.tensor(wshape, wdtype).text]
    if bias:
        b = g.tensor(bshape, dtype).text
        if g.chance(0.5):
            args.append(b)
        else:
            kwargs.append(("bias", b))
    elif g.chance(0.3):
        args.append("None")
    stride = _ints(g, p["stride"], spatial)
    pad = padding or _ints(g, p["padding"], spatial)
    dil = _ints(g, p["dilation"], spatial)
    opts = [("stride", stride, any(s != 1 for s in p["stride"])),
            ("padding", pad, padding is not None or any(v != 0 for v in p["padding"]))]
    if transposed:
        opts += [("output_padding", _ints(g, p["outpad"], spatial), any(p["outpad"])),
                 ("groups", str(groups), groups != 1),
                 ("dilation", dil, any(d != 1 for d in p["dilation"]))]
    else:
        opts += [("dilation", dil, any(d != 1 for d in p["dilation"])),
                 ("groups", str(groups), groups != 1)]
    for name, text, needed in opts:
        if needed or g.chance(0.2):
            kwargs.append((name, text))
    return Call(op.name, args, kwargs)


# ----------------------------------------------------------------- pooling

def b_pool(g: Gen, op, ok: bool) -> Call:
    """F.max_pool{1,2,3}d / F.avg_pool{1,2,3}d(input, kernel_size, ...)."""
    spatial = int(op.name[-2])
    is_max = op.name.startswith("max")
    dtype = g.dtype(op.dtypes)
    kernel = [g.randint(1, 3) for _ in range(spatial)]
    stride = [g.randint(1, 3) for _ in range(spatial)]
    dilation = [g.pick([1, 1, 2]) if is_max else 1 for _ in range(spatial)]
    padding = [g.randint(0, k // 2) for k in kernel]
    size = [g.randint(1, 6) for _ in range(spatial)]
    for i in range(spatial):
        span = dilation[i] * (kernel[i] - 1) + 1
        if size[i] + 2 * padding[i] < span:
            size[i] = span - 2 * padding[i] + g.randint(0, 2)
    batch = g.pick([1, 2, 2, 0])
    channels = g.randint(1, 4)
    shape = [batch, channels] + size
    if g.chance(0.25):
        shape = shape[1:]                        # unbatched
    ceil = g.chance(0.3)
    bad = None if ok else g.pick(["padding", "kernel", "dims", "stride", "size", "zero"])
    if bad == "padding":
        padding[0] = kernel[0] // 2 + 1
    elif bad == "kernel":
        kernel[0] = 0
    elif bad == "dims":
        shape = shape[-spatial:] if g.chance(0.5) else [1, 1] + shape
    elif bad == "stride":
        stride[0] = g.pick([0, -1])
    elif bad == "size":
        kernel[0] = size[0] + 2 * padding[0] + 2
    elif bad == "zero":
        shape[-1] = 0
    args = [_input(g, shape, dtype), _ints(g, kernel, spatial)]
    kwargs = []
    if g.chance(0.6):
        s = _ints(g, stride, spatial)
        if g.chance(0.5):
            args.append(s)
        else:
            kwargs.append(("stride", s))
    elif g.chance(0.2):
        kwargs.append(("stride", "None"))
    if any(padding) or g.chance(0.2):
        kwargs.append(("padding", _ints(g, padding, spatial)))
    if is_max and (any(d != 1 for d in dilation) or g.chance(0.1)):
        kwargs.append(("dilation", _ints(g, dilation, spatial)))
    if ceil or g.chance(0.1):
        kwargs.append(("ceil_mode", str(ceil)))
    if is_max and g.chance(0.4):
        kwargs.append(("return_indices", "True"))
    if not is_max:
        if g.chance(0.3):
            kwargs.append(("count_include_pad", g.pick(["True", "False"])))
        if spatial > 1 and g.chance(0.2):
            kwargs.append(("divisor_override", str(g.pick([1, 2, 3, -2] if ok else [0]))))
    return Call(op.name, args, kwargs)


def b_adaptive(g: Gen, op, ok: bool) -> Call:
    """F.adaptive_{avg,max}_pool{1,2,3}d(input, output_size[, return_indices])."""
    spatial = int(op.name[-2])
    is_max = "max" in op.name
    dtype = g.dtype(op.dtypes)
    size = [g.randint(1, 7) for _ in range(spatial)]
    shape = [g.pick([1, 2, 0]), g.randint(1, 4)] + size
    if g.chance(0.25):
        shape = shape[1:]
    out = [g.randint(1, 5) if g.chance(0.8) else 1 for _ in range(spatial)]
    bad = None if ok else g.pick(["negative", "count", "dims", "empty"])
    if bad == "negative":
        out[0] = -1
    elif bad == "count":
        out = out + [2]
    elif bad == "dims":
        shape = shape[-spatial:]
    elif bad == "empty":
        shape[-1] = 0
    if spatial == 1:
        osize = _ints(g, out, 1)
    elif g.chance(0.3) and len(set(out)) == 1:
        osize = str(out[0])
    else:
        items = [("None" if g.chance(0.2) else str(o)) for o in out]
        osize = "(%s)" % ", ".join(items) if g.chance(0.5) else "[%s]" % ", ".join(items)
    args = [_input(g, shape, dtype), osize]
    kwargs = []
    if is_max and g.chance(0.4):
        kwargs.append(("return_indices", "True"))
    return Call(op.name, args, kwargs)


# ----------------------------------------------------------- interpolate

_MODES = {1: ["nearest", "nearest-exact", "linear", "area"],
          2: ["nearest", "nearest-exact", "bilinear", "bicubic", "area"],
          3: ["nearest", "nearest-exact", "trilinear", "area"]}


def b_interpolate(g: Gen, op, ok: bool) -> Call:
    """F.interpolate(input, size=|scale_factor=, mode=, align_corners=, ...)."""
    spatial = g.randint(1, 3)
    mode = g.pick(_MODES[spatial])
    dtype = g.dtype(op.dtypes)
    size = [g.randint(1, 6) for _ in range(spatial)]
    shape = [g.pick([1, 2, 2, 0]), g.randint(1, 3)] + size
    kwargs = []
    bad = None if ok else g.pick(["both", "neither", "mode_dims", "align", "zero", "count", "aa"])
    if bad == "mode_dims":
        mode = g.pick([m for d, ms in _MODES.items() if d != spatial for m in ms
                       if m not in _MODES[spatial]] + ["bogus"])
    use_size = g.chance(0.5)
    if use_size or bad == "both":
        out = [g.randint(1, 9) for _ in range(spatial)]
        if bad == "zero":
            out[0] = 0
        if bad == "count":
            out = out + [2]
        if len(set(out)) == 1 and g.chance(0.4):
            kwargs.append(("size", str(out[0])))
        else:
            kwargs.append(("size", _lst(out) if g.chance(0.5) else "(%s)" % ", ".join(map(str, out))))
    if not use_size or bad == "both":
        factors = [g.pick([0.5, 1.5, 2, 2.0, 3, 0.75, 1.7, 1.05, 0.3]) for _ in range(spatial)]
        if bad == "zero":
            factors[0] = 0.1
        if len(set(factors)) == 1 and g.chance(0.5):
            kwargs.append(("scale_factor", str(factors[0])))
        else:
            kwargs.append(("scale_factor", "(%s)" % ", ".join(map(str, factors))))
        if g.chance(0.3):
            kwargs.append(("recompute_scale_factor", g.pick(["True", "False"])))
    if bad == "neither":
        kwargs = []
    kwargs.append(("mode", "'%s'" % mode))
    interpolating = mode in ("linear", "bilinear", "bicubic", "trilinear")
    if (interpolating and g.chance(0.5)) or bad == "align":
        kwargs.append(("align_corners", g.pick(["True", "False"])))
    if (mode in ("bilinear", "bicubic") and g.chance(0.3) and dtype in ("float32", "float64")) or bad == "aa":
        kwargs.append(("antialias", "True"))
    args = [_input(g, shape, dtype)]
    return Call(op.name, args, kwargs)


# ------------------------------------------------------------------ rows

# every op of the family is also spelled F.X / torch.nn.functional.X (and
# torch_eval resolves bare names to torch.nn.functional first, which is
# what mtk follows: F.max_pool2d's return_indices, F.interpolate)
FUNCTIONAL = {"conv%dd" % n for n in (1, 2, 3)} | {"conv_transpose%dd" % n for n in (1, 2, 3)} | \
    {"%s_pool%dd" % (k, n) for k in ("max", "avg", "adaptive_avg", "adaptive_max") for n in (1, 2, 3)} | \
    {"interpolate"}



def rows(Op) -> List:
    """This family's rows of gen.OPS (Op is gen.Op)."""
    out = []
    for n in (1, 2, 3):
        out.append(Op("conv%dd" % n, "conv", b_conv, dtypes=CONV_DTYPES, weight=1.5))
        out.append(Op("conv_transpose%dd" % n, "conv", b_conv, dtypes=CONV_DTYPES))
        out.append(Op("max_pool%dd" % n, "conv", b_pool, dtypes=MAX_DTYPES if n > 1 else POOL_DTYPES))
        out.append(Op("avg_pool%dd" % n, "conv", b_pool, dtypes=AVG_DTYPES))
        out.append(Op("adaptive_avg_pool%dd" % n, "conv", b_adaptive, dtypes=POOL_DTYPES))
        out.append(Op("adaptive_max_pool%dd" % n, "conv", b_adaptive, dtypes=POOL_DTYPES))
    out.append(Op("interpolate", "conv", b_interpolate, dtypes=INTERP_DTYPES, weight=2.0))
    return out
