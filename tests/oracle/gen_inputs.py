"""Inputs of generated expressions: dtypes, shapes, scalars and tensor
expressions (literals, views of literals, tensors with data).  See gen.py."""

import random
from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Tuple

# ----------------------------------------------------------------- dtypes

FLOATS = ["float32", "float16", "bfloat16", "float64"]
INTS = ["int64", "int32", "int16", "int8", "uint8"]
BOOL = ["bool"]
ALL = FLOATS + INTS + BOOL
NUMERIC = FLOATS + INTS
INTEGRAL = INTS + BOOL

SHORT = {"float32": "f32", "float16": "f16", "bfloat16": "bf16", "float64": "f64",
         "int64": "i64", "int32": "i32", "int16": "i16", "int8": "i8", "uint8": "u8",
         "bool": "bool"}
# other spellings of a literal's dtype (float[2] is float32, int[2] int32)
ALIASES = {"float32": ["float", "float32"], "float16": ["half", "float16"],
           "float64": ["double", "float64"], "int64": ["long", "int64"],
           "int32": ["int", "int32"], "int16": ["short", "int16"],
           "bfloat16": ["bfloat16"], "int8": ["int8"], "uint8": ["uint8"], "bool": ["bool"]}
# other spellings of a dtype argument: as values, bare `float` and `int` are
# Python's types, which torch reads as float64 and int64
VALUE_ALIASES = {"float32": ["float32", "torch.float32", "torch.float"],
                 "float16": ["half", "torch.float16"], "float64": ["double", "float"],
                 "int64": ["long", "int", "torch.int64"], "int32": ["int32", "torch.int"],
                 "int16": ["short", "int16"], "bfloat16": ["bfloat16", "torch.bfloat16"],
                 "int8": ["int8"], "uint8": ["uint8", "torch.uint8"], "bool": ["bool", "torch.bool"]}


@dataclass
class Tx:
    """A generated tensor expression and what the generator believes it is."""
    text: str
    shape: Tuple[int, ...]
    dtype: str


@dataclass
class Call:
    """One op call: name, rendered positional args, rendered keyword args."""
    name: str
    args: List[str]
    kwargs: List[Tuple[str, str]] = field(default_factory=list)

    def __str__(self) -> str:
        parts = list(self.args) + ["%s=%s" % kv for kv in self.kwargs]
        return "%s(%s)" % (self.name, ", ".join(parts))


def _numel(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def _lst(items) -> str:
    return "[" + ", ".join(str(i) for i in items) + "]"


class Gen:
    """The random source and the helpers builders share."""

    def __init__(self, seed: int, mode: str = "meta"):
        assert mode in ("meta", "values")
        self.rng = random.Random(seed)
        self.values = mode == "values"
        self.max_dims = 4 if self.values else 5
        self.max_size = 4 if self.values else 5

    # -- basic choices
    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def pick(self, seq: Sequence, weights=None):
        if weights:
            return self.rng.choices(seq, weights=weights, k=1)[0]
        return self.rng.choice(seq)

    def randint(self, lo: int, hi: int) -> int:
        return self.rng.randint(lo, hi)

    # -- shapes and dtypes
    def ndim(self, lo: int = 0, hi: Optional[int] = None) -> int:
        hi = self.max_dims if hi is None else min(hi, self.max_dims)
        if lo > hi:
            return lo
        choices = list(range(lo, hi + 1))
        weights = [[2, 4, 5, 4, 2, 1][min(d, 5)] for d in choices]
        return self.pick(choices, weights)

    def size(self) -> int:
        sizes = list(range(0, self.max_size + 1))
        weights = [1, 4, 4, 4, 3, 3][: len(sizes)]
        return self.pick(sizes, weights)

    def shape(self, lo: int = 0, hi: Optional[int] = None) -> Tuple[int, ...]:
        return tuple(self.size() for _ in range(self.ndim(lo, hi)))

    def dtype(self, allowed: Sequence[str] = ALL) -> str:
        return self.pick(list(allowed))

    def dtype_text(self, dtype: str) -> str:
        """A spelling of a dtype as an argument value."""
        if self.chance(0.7):
            return SHORT[dtype]
        return self.pick(VALUE_ALIASES[dtype])

    def dim(self, ndim: int) -> int:
        """A valid dim of an ndim-D tensor, sometimes negative."""
        n = max(ndim, 1)
        d = self.randint(0, n - 1)
        return d - n if self.chance(0.3) else d

    def bad_dim(self, ndim: int) -> int:
        n = max(ndim, 1)
        return self.pick([n, n + 1, -n - 1, -n - 3])

    # -- broadcasting
    def bcast_from(self, out: Tuple[int, ...]) -> Tuple[int, ...]:
        """A shape that broadcasts to `out`: leading dims dropped, some set to 1."""
        drop = self.randint(0, len(out)) if self.chance(0.35) else 0
        return tuple(1 if self.chance(0.25) else s for s in out[drop:])

    def mismatched(self, shape: Tuple[int, ...]) -> Tuple[Tuple[int, ...], Tuple[int, ...]]:
        """Two shapes that do not broadcast, the first close to `shape`."""
        a = list(shape) or [2]
        b = list(a)
        i = self.randint(0, len(a) - 1)
        if a[i] == 1:
            a[i] = 2
            b[i] = 3
        else:
            b[i] = a[i] + 1 if a[i] != 0 else 2
        if self.chance(0.3):
            b = [self.randint(1, 3)] * (self.randint(0, 2)) + b
        return tuple(a), tuple(b)

    def reshape_target(self, shape: Tuple[int, ...]) -> List[int]:
        """A shape with the same numel, sometimes with one -1."""
        n = _numel(shape)
        nd = self.ndim(0, 5)
        if n == 0:
            nd = max(nd, 1)
            out = [self.randint(0, 4) for _ in range(nd)]
            out[self.randint(0, nd - 1)] = 0
        else:
            if n != 1:
                nd = max(nd, 1)
            out = [1] * nd
            m, p = n, 2
            while m > 1:
                while m % p == 0:
                    out[self.randint(0, nd - 1)] *= p
                    m //= p
                p += 1
        if out and self.chance(0.3):
            out[self.randint(0, len(out) - 1)] = -1
        return out

    # -- scalars
    def scalar(self, kind: Optional[str] = None, nonzero: bool = False) -> str:
        kind = kind or self.pick(["int", "float", "bool"], [4, 4, 1])
        if kind == "int":
            pool = [1, 2, 3, -1, -2, 7] if nonzero else [0, 1, 2, 3, -1, -2, 7]
            return str(self.pick(pool))
        if kind == "float":
            if not nonzero and self.chance(0.03):
                return self.pick(["inf", "-inf", "nan"])
            return self.pick(["0.5", "-1.5", "2.0", "0.25", "3.75", "-0.125", "1e-3"])
        return self.pick(["True", "False", "true", "false"] if not nonzero else ["True", "true"])

    # -- tensors
    def leaf(self, shape, dtype: str, nonzero: bool = False) -> Tx:
        """A contiguous tensor: a literal (meta) or a tensor with data (values)."""
        shape = tuple(shape)
        if not self.values:
            name = SHORT[dtype] if self.chance(0.85) else self.pick(ALIASES[dtype])
            sep = ", " if self.chance(0.3) else ","
            return Tx("%s[%s]" % (name, sep.join(str(s) for s in shape)), shape, dtype)
        return Tx(self.data_text(shape, dtype, nonzero), shape, dtype)

    def data_text(self, shape, dtype: str, nonzero: bool) -> str:
        n = _numel(shape)
        if dtype in FLOATS:
            lo = self.pick(["-3.0", "-1.0", "0.5", "-2.5"])
            hi = self.pick(["3.0", "1.5", "4.0", "2.25"])
            if nonzero:
                lo, hi = "0.5", "3.5"
            kw = "" if dtype == "float32" else ", dtype=%s" % SHORT[dtype]
            base = "linspace(%s, %s, %d%s)" % (lo, hi, n, kw)
        elif dtype == "bool":
            base = "gt(remainder(arange(%d), %d), %d)" % (n, self.randint(2, 4), 0)
            if nonzero:
                base = "ge(arange(%d), 0)" % n
        else:
            m = self.randint(3, 9)
            if nonzero:
                base = "add(remainder(arange(%d), %d), 1)" % (n, m)
            elif dtype == "uint8" or self.chance(0.3):
                base = "remainder(arange(%d), %d)" % (n, m)
            else:
                base = "sub(remainder(arange(%d), %d), %d)" % (n, m, m // 2)
            if dtype != "int64":
                base = "to(%s, %s)" % (base, SHORT[dtype])
        return "reshape(%s, %s)" % (base, _lst(shape))

    def tensor(self, shape=None, dtype: Optional[str] = None, nonzero: bool = False,
               depth: int = 0) -> Tx:
        """A tensor of the given shape and dtype, often a non-contiguous view."""
        shape = tuple(self.shape() if shape is None else shape)
        dtype = dtype or self.dtype()
        if depth >= 2 or self.chance(0.5):
            return self.leaf(shape, dtype, nonzero)
        nd = len(shape)
        kinds = ["narrow", "expand"] if nd >= 1 else ["select"]
        if nd >= 2:
            kinds += ["transpose", "permute", "movedim", "transpose"]
        if nd == 2:
            kinds += ["t", "t"]
        if nd < self.max_dims:
            kinds += ["select"]
        if 1 in shape:
            kinds += ["unsqueeze"]
        kind = self.pick(kinds)
        sub = lambda base: self.tensor(base, dtype, nonzero, depth + 1)  # noqa: E731
        if kind == "transpose":
            i, j = self.rng.sample(range(nd), 2)
            base = list(shape)
            base[i], base[j] = base[j], base[i]
            return Tx("transpose(%s, %d, %d)" % (sub(base).text, i, j), shape, dtype)
        if kind == "t":
            return Tx("t(%s)" % sub(shape[::-1]).text, shape, dtype)
        if kind == "permute":
            perm = list(range(nd))
            self.rng.shuffle(perm)
            base = [0] * nd
            for k, p in enumerate(perm):
                base[p] = shape[k]
            dims = [p - nd if self.chance(0.2) else p for p in perm]
            if self.chance(0.3):
                return Tx("permute(%s, %s)" % (sub(base).text, ", ".join(map(str, dims))),
                          shape, dtype)
            return Tx("permute(%s, %s)" % (sub(base).text, _lst(dims)), shape, dtype)
        if kind == "movedim":
            src, dst = self.randint(0, nd - 1), self.randint(0, nd - 1)
            base = list(shape)
            moved = base.pop(dst)
            base.insert(src, moved)
            return Tx("movedim(%s, %d, %d)" % (sub(base).text, src, dst), shape, dtype)
        if kind == "expand":
            lead = self.randint(0, min(2, nd)) if self.chance(0.4) else 0
            base = [1 if self.chance(0.4) else s for s in shape[lead:]]
            sizes = [(-1 if (k >= lead and base[k - lead] == s and self.chance(0.3)) else s)
                     for k, s in enumerate(shape)]
            return Tx("expand(%s, %s)" % (sub(base).text, _lst(sizes)), shape, dtype)
        if kind == "narrow":
            d = self.randint(0, nd - 1)
            extra = self.randint(1, 3)
            start = self.randint(0, extra)
            base = list(shape)
            base[d] += extra
            if self.chance(0.2) and start > 0:
                start -= base[d]          # the same start, counted from the end
            return Tx("narrow(%s, %d, %d, %d)" % (sub(base).text, d, start, shape[d]),
                      shape, dtype)
        if kind == "select":
            d = self.randint(0, nd)
            k = self.randint(1, 4)
            base = list(shape)
            base.insert(d, k)
            idx = self.randint(-k, k - 1)
            return Tx("select(%s, %d, %d)" % (sub(base).text, d, idx), shape, dtype)
        # unsqueeze: remove one size-1 dim from the base
        d = self.pick([k for k, s in enumerate(shape) if s == 1])
        base = list(shape)
        base.pop(d)
        return Tx("unsqueeze(%s, %d)" % (sub(base).text, d), shape, dtype)

    def operand(self, shape, dtype: str, nonzero: bool = False) -> str:
        """A tensor, a 0-dim tensor or a Python scalar of the dtype's kind."""
        r = self.rng.random()
        if r < 0.15:
            kind = "float" if dtype in FLOATS else "bool" if dtype == "bool" else "int"
            if self.chance(0.3):
                kind = self.pick(["int", "float", "bool"])
            return self.scalar(kind, nonzero)
        if r < 0.25:
            return self.tensor((), dtype, nonzero).text
        return self.tensor(shape, dtype, nonzero).text
