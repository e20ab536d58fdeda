"""Builders of the in-place fills and raw views (fill_, zero_, as_strided)
and their rows of the op table: `rows(Op)` returns them.  Same protocol as
gen_builders.py: (g, op, ok) -> Call, inputs from gen_inputs.Gen.

as_strided draws geometries that mostly stay inside the input's elements
(so that the cpu storage check passes); invalid variants mismatch the
lengths, use a negative stride, offset or size, or reach past the end."""

from gen_inputs import ALL, Call, Gen, _lst, _numel

# number values fill_ draws: some overflow small integer types and float16
FILL_NUMBERS = ["0", "1", "-1", "3", "1.5", "-2.25", "True", "False", "300", "70000", "1e6", "-129", "255"]


def b_fill_(g: Gen, op, ok: bool) -> Call:
    """self.fill_(value) or fill_(self, value): a number or a 0-dim tensor."""
    x = g.tensor(g.shape(), g.dtype(op.dtypes))
    if ok:
        value = g.pick(FILL_NUMBERS) if g.chance(0.7) else g.tensor((), g.dtype()).text
    else:
        value = g.tensor((g.randint(1, 3),), g.dtype()).text
    if g.chance(0.2):
        return Call(op.name, [x.text], [("value", value)])
    return Call(op.name, [x.text, value])


def b_zero_(g: Gen, op, ok: bool) -> Call:
    x = g.tensor(g.shape(), g.dtype(op.dtypes))
    return Call(op.name, [x.text] if ok else [x.text, "0"])


def b_as_strided(g: Gen, op, ok: bool) -> Call:
    """as_strided(x, size, stride[, storage_offset])."""
    x = g.tensor(g.shape(), g.dtype(op.dtypes))
    n = _numel(x.shape)
    nd = g.randint(0, 3)
    size = [g.randint(0, 3) for _ in range(nd)]
    stride = [g.randint(0, 4) for _ in range(nd)]
    offset = None if g.chance(0.5) else g.randint(0, 3)
    if ok and n > 0 and g.chance(0.7):
        # shrink into the input's elements: offset + sum((s - 1) * st) < n
        offset = None if offset is None else min(offset, n - 1)
        budget = n - 1 - (offset or 0)
        for i in range(nd):
            if size[i] > 1 and (size[i] - 1) * stride[i] > budget:
                stride[i] = budget // (size[i] - 1)
            budget -= max(size[i] - 1, 0) * stride[i]
    if not ok:
        v = g.pick(["length", "stride", "offset", "size", "far"])
        if v == "length":
            stride = stride + [1]
        elif v == "stride" and nd:
            stride[g.randint(0, nd - 1)] = -1
        elif v == "offset":
            offset = -1
        elif v == "size" and nd:
            size[g.randint(0, nd - 1)] = -1
        else:
            size, stride, offset = size + [2], stride + [n + 1], offset
    args = [x.text, _lst(size), _lst(stride)]
    kwargs = []
    if offset is not None:
        if g.chance(0.3):
            kwargs.append(("storage_offset", str(offset)))
        else:
            args.append(str(offset))
    elif g.chance(0.1):
        args.append("None")
    return Call(op.name, args, kwargs)


def rows(Op):
    return [
        Op("fill_", "convert", b_fill_, dtypes=tuple(ALL)),
        Op("zero_", "convert", b_zero_, dtypes=tuple(ALL), weight=0.5),
        Op("as_strided", "view", b_as_strided, dtypes=tuple(ALL)),
    ]
