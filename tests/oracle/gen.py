"""Seeded random expressions for the oracle tests, in `mtk eval`'s language.

`generate(seed, count)` returns `count` expressions; `generate_for_op(...)`
returns expressions of one op.  Every op is one row of the OPS table at the
bottom (name, family, builder, valid dtypes, flags); a new op slots in as a
new row, usually reusing a builder.  The op library's families keep their
builders and rows in tests/oracle/gen_ops_<family>.py (`rows(Op)` returns
them); every such module present is imported, in sorted order, and its
rows appended to OPS.

A builder gets the generator `g`, its row and `ok` (whether to try a valid
call) and returns a Call.  About a quarter of the cases are invalid: the
builder's own invalid variants (mismatched shapes, bad dims, refused dtypes)
or a generic mutation of a valid call (a wrong argument type, a missing or
extra argument, an unknown keyword).  Validity is only the generator's
intent: torch decides what is an error.

Inputs are built inside the expression.  In "meta" mode they are literals
(`f32[3,4]`) or views of literals that make them non-contiguous
(transpose, permute, t, expand, narrow, select, movedim, unsqueeze).  In
"values" mode literals are replaced by tensors with real data
(`reshape(linspace(-3, 3, 12), [3, 4])`, `reshape(remainder(arange(12), 7), ...)`)
so cpu values can be compared.
"""

import glob
import importlib
import os
import sys
from dataclasses import dataclass, field
from typing import Callable, List, Optional, Sequence

from gen_builders import (  # the builders the table names
    b_activation,
    b_arange,
    b_as,
    b_binary,
    b_clamp,
    b_copy_,
    b_expand,
    b_eye,
    b_flatten,
    b_item,
    b_like,
    b_linear,
    b_linspace,
    b_masked_select,
    b_matmul,
    b_mm,
    b_movedim,
    b_narrow,
    b_nonzero,
    b_permute,
    b_repeat,
    b_select,
    b_sized_creation,
    b_slice,
    b_split,
    b_squeeze,
    b_t,
    b_to,
    b_to_empty,
    b_transpose,
    b_unary_tensor,
    b_unflatten,
    b_unique,
    b_unsqueeze,
    b_view,
    b_where,
)
from gen_inputs import ALL, FLOATS, INTEGRAL, NUMERIC, Call, Gen


# ============================================================ the op table

@dataclass
class Op:
    name: str
    family: str
    build: Callable
    dtypes: Sequence[str] = tuple(ALL)   # what a valid call draws from
    data_dependent: bool = False         # an error on meta by design
    has_values: bool = True              # cpu values are defined (not `empty`)
    weight: float = 1.0
    extra: dict = field(default_factory=dict)  # builder-specific: keyword choices


UNARY = {  # op: dtypes a valid call draws from (torch's cpu kernels)
    "neg": NUMERIC, "abs": NUMERIC, "exp": ALL, "log": ALL, "sqrt": ALL, "rsqrt": ALL,
    "sin": ALL, "cos": ALL, "tanh": ALL, "sigmoid": ALL, "relu": NUMERIC,
    "floor": NUMERIC, "ceil": NUMERIC, "round": NUMERIC, "trunc": NUMERIC,
    "sign": ALL, "logical_not": ALL, "bitwise_not": INTEGRAL, "isnan": ALL,
    "isinf": ALL, "isfinite": ALL, "reciprocal": ALL,
    "acos": ALL, "asin": ALL, "atan": ALL, "cosh": ALL, "sinh": ALL, "tan": ALL,
    "erf": ALL, "erfc": ALL, "exp2": ALL, "expm1": ALL, "log10": ALL, "log1p": ALL,
    "log2": ALL, "square": ALL, "negative": NUMERIC, "positive": NUMERIC,
}

ACTIVATIONS = {  # F.op(x, ...): keyword -> values a call may pass
    "gelu": {"approximate": ["'none'", "'tanh'"]},
    "silu": {}, "mish": {}, "selu": {}, "relu6": {}, "hardsigmoid": {}, "hardswish": {},
    "elu": {"alpha": ["1.0", "0.5", "2"]},
    "leaky_relu": {"negative_slope": ["0.01", "0.2", "1"]},
    "softplus": {"beta": ["1", "2", "0.5"], "threshold": ["20", "1", "5.5"]},
    "hardtanh": {"min_val": ["-1.0", "-2.0", "0"], "max_val": ["1.0", "3", "0.5"]},
}

BINARY = {
    "add": ALL, "sub": NUMERIC, "mul": ALL, "div": ALL, "pow": NUMERIC,
    "remainder": NUMERIC, "floor_divide": NUMERIC, "maximum": ALL, "minimum": ALL,
    "eq": ALL, "ne": ALL, "lt": ALL, "le": ALL, "gt": ALL, "ge": ALL,
    "logical_and": ALL, "logical_or": ALL, "logical_xor": ALL,
    "bitwise_and": INTEGRAL, "bitwise_or": INTEGRAL, "bitwise_xor": INTEGRAL,
    "atan2": ALL, "fmod": NUMERIC, "true_divide": ALL, "rsub": NUMERIC,
}

MATMUL_DTYPES = ("float32", "float32", "float64", "float16", "bfloat16", "int64", "int32")

OPS: List[Op] = [
    # creation
    Op("empty", "creation", b_sized_creation, has_values=False),
    Op("zeros", "creation", b_sized_creation),
    Op("ones", "creation", b_sized_creation),
    Op("full", "creation", b_sized_creation),
    Op("arange", "creation", b_arange, dtypes=("int64", "int32", "float32", "float64", "int16")),
    Op("linspace", "creation", b_linspace, dtypes=("float32", "float64", "float16", "int64")),
    Op("eye", "creation", b_eye),
    # views and shape ops
    Op("view", "view", b_view),
    Op("reshape", "view", b_view),
    Op("transpose", "view", b_transpose),
    Op("t", "view", b_t),
    Op("permute", "view", b_permute),
    Op("expand", "view", b_expand),
    Op("squeeze", "view", b_squeeze),
    Op("unsqueeze", "view", b_unsqueeze),
    Op("flatten", "view", b_flatten),
    Op("movedim", "view", b_movedim),
    Op("narrow", "view", b_narrow),
    Op("select", "view", b_select),
    Op("contiguous", "view", b_unary_tensor),
    Op("repeat", "view", b_repeat),
    Op("swapaxes", "view", b_transpose),
    Op("swapdims", "view", b_transpose),
    Op("moveaxis", "view", b_movedim),
    Op("unflatten", "view", b_unflatten),
    Op("slice", "view", b_slice),
    Op("chunk", "view", b_split),
    Op("split", "view", b_split),
    Op("unbind", "view", b_split),
    Op("expand_as", "view", b_as),
    Op("view_as", "view", b_as),
    Op("reshape_as", "view", b_as),
    Op("type_as", "convert", b_as),
    Op("clone", "convert", b_like),
    Op("empty_like", "creation", b_like, has_values=False),
    Op("zeros_like", "creation", b_like),
    Op("ones_like", "creation", b_like),
    Op("full_like", "creation", b_like),
] + [
    Op(name, "elementwise", b_unary_tensor, dtypes=dts) for name, dts in UNARY.items()
] + [
    Op(name, "elementwise", b_binary, dtypes=dts, weight=1.5) for name, dts in BINARY.items()
] + [
    Op(name, "elementwise", b_activation, dtypes=FLOATS, extra=kw) for name, kw in ACTIVATIONS.items()
] + [
    Op("where", "elementwise", b_where, weight=1.5),
    Op("clamp", "elementwise", b_clamp, dtypes=NUMERIC),
    Op("clip", "elementwise", b_clamp, dtypes=NUMERIC),
    # linalg
    Op("matmul", "linalg", b_matmul, dtypes=MATMUL_DTYPES, weight=2.0),
    Op("mm", "linalg", b_mm, dtypes=MATMUL_DTYPES),
    Op("bmm", "linalg", b_mm, dtypes=MATMUL_DTYPES),
    Op("dot", "linalg", b_mm, dtypes=MATMUL_DTYPES),
    Op("mv", "linalg", b_mm, dtypes=MATMUL_DTYPES),
    Op("linear", "linalg", b_linear, dtypes=("float32", "float64", "float16", "bfloat16"),
       weight=1.5),
    # convert
    Op("to", "convert", b_to, weight=1.5),
    Op("to_empty", "convert", b_to_empty, has_values=False),
    Op("item", "convert", b_item),
    Op("nonzero", "convert", b_nonzero, data_dependent=True),
    Op("masked_select", "convert", b_masked_select, data_dependent=True),
    Op("unique", "convert", b_unique, data_dependent=True),
    Op("copy_", "convert", b_copy_),
]

# ------------------------------------------------ the op library's families

FAMILY_FUNCTIONAL: set = set()   # family ops also spelled F.X / torch.nn.functional.X


def _family_modules():
    """Every op family's generator module, tests/oracle/gen_ops_*.py, in
    sorted order (none is fine).  Each defines builders and `rows(Op)`
    returning its rows of OPS; optionally FUNCTIONAL, the names that may
    also be spelled torch.nn.functional.X (family ops are otherwise always
    spelled by their bare name), and TORCH_BINDINGS (see torch_eval)."""
    here = os.path.dirname(os.path.abspath(__file__))
    if here not in sys.path:
        sys.path.insert(0, here)
    for path in sorted(glob.glob(os.path.join(here, "gen_ops_*.py"))):
        yield importlib.import_module(os.path.basename(path)[:-3])


FAMILY_OPS: List[Op] = []
for _module in _family_modules():
    FAMILY_OPS.extend(_module.rows(Op))
    FAMILY_FUNCTIONAL |= set(getattr(_module, "FUNCTIONAL", ()))
OPS += FAMILY_OPS
# Families whose ops are in mtk's table but do not yet agree with torch on
# every case: the default run leaves them out so that it stays a true gate
# for everything else; name them to test them (MTK_ORACLE_FAMILIES=nn
# python3 tests/oracle/harness.py ...).  None today: every family is in.
PENDING_FAMILIES: set = set()

if os.environ.get("MTK_ORACLE_FAMILIES"):   # e.g. "view,linalg": test only these families
    OPS = [op for op in OPS if op.family in os.environ["MTK_ORACLE_FAMILIES"].split(",")]
else:
    OPS = [op for op in OPS if op.family not in PENDING_FAMILIES]

OPS_BY_NAME = {op.name: op for op in OPS}

# ------------------------------------------------------- generic mutations

WRONG_VALUES = ["'x'", "1.5", "[1, 2]", "None", "True", "f32[2]", "(2, 'a')", "[]"]


def mutate(g: Gen, call: Call) -> Call:
    """A generic invalid variant of a valid call."""
    args, kwargs = list(call.args), list(call.kwargs)
    kinds = ["replace", "replace", "replace", "drop", "extra", "keyword", "unknown"]
    if call.name in ACTIVATIONS or call.name in ("add", "sub", "relu", "addcmul", "addcdiv"):
        # no extra positional where torch reads one as something else:
        # F.silu(x, 'x') and F.relu(x, 7) are a truthy `inplace` (Python
        # wrappers do not check its type); sub(x, 2.0, y) is the
        # deprecated sub(input, alpha, other); so are addcmul/addcdiv(input,
        # value, tensor1, tensor2)
        kinds.remove("extra")
    v = g.pick(kinds)
    if v == "replace" and args:
        args[g.randint(0, len(args) - 1)] = g.pick(WRONG_VALUES)
    elif v == "drop" and args:
        args.pop()
    elif v == "extra":
        args.append(g.pick(["7", "'x'", "f32[2]"]))
    elif v == "keyword":
        kwargs.append((g.pick(["bogus", "dimm", "out_dtype"]), "1"))
    elif v == "unknown":
        return Call(call.name + "_nope", args, kwargs)
    else:
        args.append("None")
    return Call(call.name, args, kwargs)


# ------------------------------------------------------------ entry points

INVALID_SHARE = 0.25


# never spelled torch.X: Tensor methods only in PyTorch, and ops whose
# method form (sizes as separate ints) the expressions use
METHOD_ONLY = {"view", "expand", "repeat", "to", "to_empty", "item", "contiguous", "copy_",
               "reshape", "permute", "slice", "expand_as", "view_as", "reshape_as", "type_as"}
# also spelled torch.nn.functional.X / F.X; the activations only that way
FUNCTIONAL = {"linear", "relu"} | set(ACTIVATIONS)


_FAMILY_NAMES = {op.name for op in FAMILY_OPS}


def _spell(g: Gen, call: Call) -> Call:
    """Now and then the qualified spelling of the op's name (a family's op
    only as F.X, where its module allows: torch.batch_norm is not
    F.batch_norm)."""
    if call.name in FUNCTIONAL | FAMILY_FUNCTIONAL and g.chance(0.1):
        call.name = g.pick(["torch.nn.functional.", "F."]) + call.name
    elif call.name not in METHOD_ONLY | FUNCTIONAL | _FAMILY_NAMES and g.chance(0.04):
        call.name = "torch." + call.name
    return call


def build_case(g: Gen, op: Op, ok: Optional[bool] = None) -> str:
    """One expression of `op`: valid with probability 1 - INVALID_SHARE."""
    if ok is None:
        ok = not g.chance(INVALID_SHARE)
    if ok:
        return str(_spell(g, op.build(g, op, True)))
    if g.chance(0.35):
        return str(mutate(g, op.build(g, op, True)))
    return str(_spell(g, op.build(g, op, False)))


def ops_of(families: Optional[Sequence[str]] = None) -> List[Op]:
    """The table's rows of some families (all rows for None)."""
    return [op for op in OPS if families is None or op.family in families]


def generate(seed: int, count: int, mode: str = "meta",
             ops: Optional[Sequence[Op]] = None) -> List[str]:
    """`count` expressions over the table (or `ops`), ops drawn by weight."""
    g = Gen(seed, mode)
    ops = list(ops or OPS)
    weights = [op.weight for op in ops]
    return [build_case(g, g.pick(ops, weights)) for _ in range(count)]


def generate_for_op(op: Op, seed: int, count: int, mode: str = "meta",
                    invalid_share: float = INVALID_SHARE) -> List[str]:
    """`count` expressions of one op."""
    g = Gen(seed * 7919 + sum(map(ord, op.name)), mode)
    return [build_case(g, op, not g.chance(invalid_share)) for _ in range(count)]


if __name__ == "__main__":
    import sys
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    mode = sys.argv[2] if len(sys.argv) > 2 else "meta"
    for line in generate(int(sys.argv[3]) if len(sys.argv) > 3 else 1, n, mode):
        print(line)
