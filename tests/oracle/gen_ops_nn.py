"""Oracle rows and builders of the nn op family (softmax, dropout,
normalization, attention, losses, rope); see gen.py for the protocol.

`rows(Op)` returns this family's rows of gen.OPS.  Expressions use the bare
op names; torch's top-level functions of the same names have other
signatures (torch.batch_norm(input, weight, bias, running_mean, ...),
torch.dropout(input, p, train), ...), so torch_eval must bind these names to
torch.nn.functional: TORCH_BINDINGS (name -> callable) is that binding, and
also defines `rope`, mtk's own op, as the Hugging Face composition it
stands for.

In "values" mode the builders keep to calls whose cpu values are
deterministic (no dropout with 0 < p < 1), give class targets in range and
binary_cross_entropy inputs in [0, 1]."""

from typing import List

from gen_inputs import FLOATS, INTS, Call, Gen, _lst, _numel

HALF = ("float16", "bfloat16")

# names that may also be spelled torch.nn.functional.X / F.X (not rope: mtk's own)
FUNCTIONAL = {"softmax", "log_softmax", "dropout", "dropout1d", "dropout2d", "dropout3d",
              "alpha_dropout", "feature_alpha_dropout", "layer_norm", "rms_norm", "group_norm",
              "batch_norm", "instance_norm", "scaled_dot_product_attention", "cross_entropy",
              "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
              "binary_cross_entropy", "binary_cross_entropy_with_logits"}
NN_FLOATS = ("float32", "float32", "float64", "float16", "bfloat16")

# ------------------------------------------------------------ torch side


def _torch_bindings():
    import torch
    import torch.nn.functional as F

    def rope(x, cos, sin, interleaved=False):
        """x * cos + rotate(x) * sin, Hugging Face's apply_rotary_pos_emb
        (rotate_half) or GPT-J's rotate_every_two; (B, S, D) cos/sin meet a
        4-D x after unsqueeze(1)."""
        if not isinstance(interleaved, bool):
            raise TypeError("rope(): argument 'interleaved' must be bool")
        if cos.dim() == 3 and x.dim() == 4:
            cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
        if cos.shape != sin.shape:
            raise RuntimeError("cos and sin must have the same shape")
        if x.shape[-1] % 2 or cos.shape[-1] not in (x.shape[-1], x.shape[-1] // 2):
            raise RuntimeError("bad rotary dim")
        if 2 * cos.shape[-1] == x.shape[-1]:  # gpt_oss's half-width tables: each frequency for two dims
            repeat = (lambda t: t.repeat_interleave(2, -1)) if interleaved else (lambda t: torch.cat((t, t), -1))
            cos, sin = repeat(cos), repeat(sin)
        if torch.broadcast_shapes(x.shape, cos.shape) != x.shape:
            raise RuntimeError("cos/sin do not fit x")
        if x.dtype == torch.bool:
            raise RuntimeError("rope needs numbers")
        if interleaved:
            x1, x2 = x[..., ::2], x[..., 1::2]
            rotated = torch.stack((-x2, x1), dim=-1).flatten(-2)
        else:
            half = x.shape[-1] // 2
            rotated = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
        return (x * cos + rotated * sin).clone(memory_format=torch.contiguous_format)

    names = ["softmax", "log_softmax", "dropout", "dropout1d", "dropout2d", "dropout3d",
             "alpha_dropout", "feature_alpha_dropout", "layer_norm", "rms_norm", "group_norm",
             "batch_norm", "instance_norm", "scaled_dot_product_attention", "cross_entropy",
             "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
             "binary_cross_entropy", "binary_cross_entropy_with_logits"]
    out = {n: getattr(F, n) for n in names}
    out["rope"] = rope
    return out


class _LazyBindings(dict):
    """name -> torch callable, built on first use (importing torch is slow)."""

    def _fill(self):
        if not dict.__len__(self):
            self.update(_torch_bindings())

    def __getitem__(self, k):
        self._fill()
        return dict.__getitem__(self, k)

    def __contains__(self, k):
        self._fill()
        return dict.__contains__(self, k)

    def get(self, k, default=None):
        self._fill()
        return dict.get(self, k, default)

    def keys(self):
        self._fill()
        return dict.keys(self)

    def items(self):
        self._fill()
        return dict.items(self)


TORCH_BINDINGS = _LazyBindings()

# ---------------------------------------------------------------- helpers


def _dtype(g: Gen, op, ok: bool) -> str:
    if ok or g.chance(0.5):
        return g.pick(list(op.dtypes))
    return g.pick([d for d in ["int64", "int32", "bool", "uint8"] if d not in op.dtypes] or ["int64"])


def _param_dtype(g: Gen, x_dtype: str) -> str:
    """A parameter's dtype: mostly the input's; float32 for a half input."""
    if x_dtype in HALF and g.chance(0.4):
        return "float32"
    return x_dtype


def _opt(g: Gen, p: float, text: str) -> str:
    return text if g.chance(p) else "None"


def _class_target(g: Gen, shape, classes: int) -> str:
    """Class indices in [0, classes) (some ignore_index -100 on values)."""
    n = _numel(shape)
    if not g.values:
        return "i64[%s]" % ",".join(map(str, shape))
    base = "remainder(arange(%d), %d)" % (n, max(classes, 1))
    if classes == 0:
        base = "zeros(%d, dtype=i64)" % n
    return "reshape(%s, %s)" % (base, _lst(shape))


def _reduction(g: Gen, ok: bool) -> List[tuple]:
    if not ok and g.chance(0.3):
        return [("reduction", "'foo'")]
    if g.chance(0.7):
        return [("reduction", g.pick(["'none'", "'mean'", "'sum'"]))]
    return []


# --------------------------------------------------------------- builders


def b_softmax(g: Gen, op, ok: bool) -> Call:
    dt = _dtype(g, op, ok)
    x = g.tensor(g.shape(0, 4), dt)
    nd = len(x.shape)
    kwargs = []
    if g.chance(0.3):
        kwargs.append(("dtype", g.dtype_text(g.pick(["float32", "float64", "float16", "bfloat16"]))))
    if g.chance(0.15):
        return Call(op.name, [x.text], kwargs)            # F.softmax's implicit dim
    d = g.dim(nd) if ok or g.chance(0.5) else g.bad_dim(nd)
    if g.chance(0.3):
        return Call(op.name, [x.text], [("dim", str(d))] + kwargs)
    return Call(op.name, [x.text, str(d)], kwargs)


def b_dropout(g: Gen, op, ok: bool) -> Call:
    lo = {"dropout1d": 2, "dropout2d": 2, "dropout3d": 1}.get(op.name, 0)
    hi = {"dropout1d": 3}.get(op.name, 5)
    if not ok and g.chance(0.3):
        lo, hi = 0, 5
    x = g.tensor(g.shape(lo, hi), _dtype(g, op, ok))
    args, kwargs = [x.text], []
    choices = ["0.0", "1.0", "0.5", "0.2"] if not g.values else ["0.0", "1.0"]
    p = g.pick(choices)
    if not ok and g.chance(0.4):
        p = g.pick(["-0.1", "1.5", "2"])
    training = g.pick(["True", "False"])
    if g.values and p not in ("0.0", "1.0"):
        training = "False"
    # in "values" mode p and training are keywords: the generic invalid
    # variant drops the last positional, which must not leave a random
    # dropout (p=0.5, training=True by default)
    if g.chance(0.5) and not g.values:
        args.append(p)
    else:
        kwargs.append(("p", p))
    if g.chance(0.7) or (g.values and training == "False"):
        kwargs.append(("training", training))
    return Call(op.name, args, kwargs)


def _stats_input(g: Gen, shape, dtype: str):
    """The input of a normalization that computes statistics.  In "values"
    mode no expand: a constant row/group has zero variance, where torch's
    float32 kernels answer rounding noise amplified by 1/sqrt(eps) (up to
    ~1e-4), not a value to compare with."""
    x = g.tensor(shape, dtype)
    if g.values and "expand(" in x.text:
        x = g.leaf(shape, dtype)
    return x


def _normalized(g: Gen, ok: bool, shape):
    k = g.randint(1, min(3, len(shape))) if shape else 1
    ns = list(shape[len(shape) - k:]) if shape else [g.randint(1, 3)]
    if not ok and g.chance(0.5):
        ns = g.pick([ns + [2], [s + 1 for s in ns], []])
    return ns


def b_layer_norm(g: Gen, op, ok: bool) -> Call:
    dt = _dtype(g, op, ok)
    shape = g.shape(1, 4)
    x = g.tensor(shape, dt) if op.name == "rms_norm" else _stats_input(g, shape, dt)
    ns = _normalized(g, ok, x.shape)
    pd = _param_dtype(g, dt)
    wshape = ns if ok or g.chance(0.5) else ns + [1]
    args = [x.text, _lst(ns)]
    w = _opt(g, 0.6, g.tensor(wshape, pd).text)
    if op.name == "rms_norm":
        args.append(w)
        if g.chance(0.4):
            args.append(g.pick(["None", "1e-5", "0.5"]))
        return Call(op.name, args)
    args += [w, _opt(g, 0.5, g.tensor(wshape, pd).text)]
    kwargs = [("eps", g.pick(["1e-5", "0.1"]))] if g.chance(0.3) else []
    return Call(op.name, args, kwargs)


def b_group_norm(g: Gen, op, ok: bool) -> Call:
    dt = _dtype(g, op, ok)
    groups = g.randint(1, 3)
    per = g.randint(1, 2)
    c = groups * per
    shape = [g.randint(1, 3), c] + [g.randint(1, 3) for _ in range(g.randint(0, 2))]
    if g.values and per * _numel(shape[2:]) == 1:
        shape.append(2)             # no 1-element groups (see _stats_input)
    if not ok and g.chance(0.5):
        groups = g.pick([c + 1, 0, -1, groups]) if c > 1 else 2
    x = _stats_input(g, shape, dt)
    pd = _param_dtype(g, dt)
    wc = c if ok or g.chance(0.5) else c + 1
    args = [x.text, str(groups), _opt(g, 0.6, g.tensor([wc], pd).text), _opt(g, 0.5, g.tensor([c], pd).text)]
    return Call(op.name, args)


def b_batch_norm(g: Gen, op, ok: bool) -> Call:
    dt = _dtype(g, op, ok)
    instance = op.name == "instance_norm"
    nd = g.randint(3, 5) if instance else g.randint(2, 5)
    shape = [g.randint(1, 3), g.randint(1, 3)] + [g.randint(1, 3) for _ in range(nd - 2)]
    training = g.chance(0.5) if not instance else g.chance(0.7)
    if training and ok:
        # more than one value per channel (batch_norm) / spatial element (instance_norm)
        if instance and _numel(shape[2:]) == 1:
            shape[2] = 2
        if not instance and shape[0] * _numel(shape[2:]) == 1:
            shape[0] = 2
    x = _stats_input(g, shape, dt) if training else g.tensor(shape, dt)
    c = shape[1]
    pd = _param_dtype(g, dt)
    stat_c = c if ok or g.chance(0.5) else c + 1
    have_stats = g.chance(0.7) or (not training and ok)
    rm = g.tensor([stat_c], pd).text if have_stats else "None"
    rv = g.tensor([stat_c], pd, nonzero=True).text if have_stats else "None"
    w = _opt(g, 0.5, g.tensor([c], pd).text)
    b = _opt(g, 0.5, g.tensor([c], pd).text)
    kwargs = [("use_input_stats" if instance else "training", str(training))]
    if g.chance(0.3):
        kwargs.append(("momentum", g.pick(["0.1", "0.5"])))
    if g.chance(0.3):
        kwargs.append(("eps", g.pick(["1e-5", "0.1"])))
    return Call(op.name, [x.text, rm, rv, w, b], kwargs)


def b_attention(g: Gen, op, ok: bool) -> Call:
    dt = _dtype(g, op, ok)
    nb = g.randint(0, 2)
    batch = [g.randint(1, 3) for _ in range(nb)]
    L, S, E, Ev = g.randint(1, 4), g.randint(1, 4), g.randint(1, 4), g.randint(1, 4)
    if g.chance(0.05):
        L, S, E = g.pick([(0, S, E), (L, 0, E), (L, S, 0)])
    gqa = nb >= 1 and g.chance(0.25)
    kb, vb = list(batch), list(batch)
    if gqa:
        hq = g.pick([2, 4, 6])
        batch[-1] = hq
        kb[-1] = g.pick([d for d in (1, 2, 3) if hq % d == 0])
        vb[-1] = kb[-1] if g.chance(0.7) else g.pick([d for d in (1, 2) if hq % d == 0])
    else:
        # broadcast batch dims
        if nb and g.chance(0.3):
            kb = [1 if g.chance(0.5) else s for s in kb]
        if nb and g.chance(0.3):
            vb = vb[g.randint(0, nb):]
    ek, sv = E, S
    if not ok and g.chance(0.6):
        if g.chance(0.5):
            ek = E + 1
        else:
            sv = S + 1
    q = g.tensor(batch + [L, E], dt)
    k = g.tensor(kb + [S, ek], dt)
    v = g.tensor(vb + [sv, Ev], dt)
    args, kwargs = [q.text, k.text, v.text], []
    r = g.rng.random()
    if r < 0.25:
        mshape = [L, S] if g.chance(0.6) else [1 if g.chance(0.5) else s for s in batch] + [L, S]
        mshape = [1 if g.chance(0.2) else s for s in mshape]
        mdt = "bool" if g.chance(0.5) else (dt if ok else g.pick(["float32", "int64"]))
        args.append(g.tensor(mshape, mdt).text)
        if not ok and g.chance(0.3):
            kwargs.append(("is_causal", "True"))
    elif r < 0.45:
        kwargs.append(("is_causal", "True"))
    if g.chance(0.25):
        kwargs.append(("scale", g.pick(["0.5", "1.0", "None"])))
    if gqa or (nb and g.chance(0.05)):
        kwargs.append(("enable_gqa", "True"))
    if not g.values and g.chance(0.1):
        kwargs.append(("dropout_p", g.pick(["0.0", "0.5"])))
    return Call(op.name, args, kwargs)


def b_class_loss(g: Gen, op, ok: bool) -> Call:
    dt = _dtype(g, op, ok)
    form = g.pick(["unbatched", "batched", "batched", "spatial"])
    c = g.randint(1, 4)
    n = g.randint(1, 3)
    if form == "unbatched":
        shape, tshape = [c], []
    elif form == "batched":
        shape, tshape = [n, c], [n]
    else:
        sp = [g.randint(1, 3) for _ in range(g.randint(1, 3))]
        shape, tshape = [n, c] + sp, [n] + sp
    x = g.tensor(shape, dt)
    probs = op.name == "cross_entropy" and g.chance(0.3)
    if probs:
        target = g.tensor(shape, _param_dtype(g, dt)).text
    else:
        if not ok and g.chance(0.5) and tshape:
            tshape = list(tshape)
            tshape[0] += 1
        target = _class_target(g, tshape, c)
    args, kwargs = [x.text, target], []
    if g.chance(0.3):
        wdt = dt if ok else g.pick(list(FLOATS))
        kwargs.append(("weight", g.tensor([c if ok or g.chance(0.5) else c + 1], wdt, nonzero=True).text))
    if not probs and g.chance(0.3):
        kwargs.append(("ignore_index", g.pick(["1", "0", "-100"])))
    kwargs += _reduction(g, ok)
    if op.name == "cross_entropy" and g.chance(0.3):
        kwargs.append(("label_smoothing", g.pick(["0.1", "0.5"]) if ok else "1.5"))
    return Call(op.name, args, kwargs)


def b_pointwise_loss(g: Gen, op, ok: bool) -> Call:
    dt = _dtype(g, op, ok)
    shape = g.shape(0, 4)
    same = op.name.startswith("binary_cross_entropy") or g.chance(0.7)
    tshape = shape if same else g.bcast_from(shape)
    if not ok and g.chance(0.4):
        shape, tshape = g.mismatched(shape)
    x = g.tensor(shape, dt)
    xt = "sigmoid(%s)" % x.text if op.name == "binary_cross_entropy" and g.values else x.text
    tdt = dt if g.chance(0.8) else g.pick(list(op.dtypes))
    y = g.tensor(tshape, tdt)
    yt = "sigmoid(%s)" % y.text if op.name.startswith("binary_cross_entropy") and g.values else y.text
    args, kwargs = [xt, yt], []
    # not l1_loss: under torch_eval's `with torch.device(...)` (a torch function
    # mode) F.l1_loss drops its weight (torch forwards no weight= there)
    if op.name in ("mse_loss", "huber_loss", "binary_cross_entropy",
                   "binary_cross_entropy_with_logits") and g.chance(0.25):
        wshape = shape if op.name not in ("binary_cross_entropy", "binary_cross_entropy_with_logits") \
            else g.bcast_from(shape)
        kwargs.append(("weight", g.tensor(wshape, dt).text))
    if op.name == "binary_cross_entropy_with_logits" and g.chance(0.25):
        kwargs.append(("pos_weight", g.tensor(g.bcast_from(shape), dt).text))
    if op.name == "smooth_l1_loss" and g.chance(0.3):
        kwargs.append(("beta", g.pick(["0.5", "2.0", "0.0"] if ok else ["-1.0"])))
    if op.name == "huber_loss" and g.chance(0.3):
        kwargs.append(("delta", g.pick(["0.5", "2.0"] if ok else ["-1.0", "0.0"])))
    kwargs += _reduction(g, ok)
    return Call(op.name, args, kwargs)


def b_rope(g: Gen, op, ok: bool) -> Call:
    dt = _dtype(g, op, ok)
    b, h, s, d = g.randint(1, 2), g.randint(1, 3), g.randint(1, 4), 2 * g.randint(1, 3)
    x = g.tensor([b, h, s, d], dt)
    form = g.pick(["sd", "bsd", "b1sd"])
    cshape = {"sd": [s, d], "bsd": [b, s, d], "b1sd": [b, 1, s, d]}[form]
    if not ok and g.chance(0.6):
        cshape = list(cshape)
        cshape[-1] += 1
    cdt = dt if g.chance(0.8) else "float32"
    args = [x.text, g.tensor(cshape, cdt).text, g.tensor(cshape, cdt).text]
    kwargs = [("interleaved", g.pick(["True", "False"]))] if g.chance(0.5) else []
    return Call(op.name, args, kwargs)


# ------------------------------------------------------------------ rows


def rows(Op) -> list:
    f = NN_FLOATS
    out = [
        Op("softmax", "nn", b_softmax, dtypes=f),
        Op("log_softmax", "nn", b_softmax, dtypes=f),
        Op("layer_norm", "nn", b_layer_norm, dtypes=f, weight=1.5),
        Op("rms_norm", "nn", b_layer_norm, dtypes=f, weight=1.5),
        Op("group_norm", "nn", b_group_norm, dtypes=f),
        Op("batch_norm", "nn", b_batch_norm, dtypes=f, weight=1.5),
        Op("instance_norm", "nn", b_batch_norm, dtypes=("float32", "float64")),
        Op("scaled_dot_product_attention", "nn", b_attention, dtypes=f, weight=2.0),
        Op("cross_entropy", "nn", b_class_loss, dtypes=f, weight=1.5),
        Op("nll_loss", "nn", b_class_loss, dtypes=f),
        Op("mse_loss", "nn", b_pointwise_loss, dtypes=f),
        Op("l1_loss", "nn", b_pointwise_loss, dtypes=f),
        Op("smooth_l1_loss", "nn", b_pointwise_loss, dtypes=f),
        Op("huber_loss", "nn", b_pointwise_loss, dtypes=f),
        Op("binary_cross_entropy", "nn", b_pointwise_loss, dtypes=("float32", "float64")),
        Op("binary_cross_entropy_with_logits", "nn", b_pointwise_loss, dtypes=f),
        Op("rope", "nn", b_rope, dtypes=f),
    ]
    for name in ("dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout",
                 "feature_alpha_dropout"):
        out.append(Op(name, "nn", b_dropout, dtypes=tuple(FLOATS) + tuple(INTS[:1]), weight=0.6))
    return out


__all__ = ["rows", "TORCH_BINDINGS", "FUNCTIONAL"]
