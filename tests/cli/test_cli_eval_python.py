"""mtk eval as a demanding PyTorch user and an attacker use it: Python's
operators, attributes and indexing printed as Python prints them; every
input that once crashed or ran away (deep chains under a small stack, huge
lines, absurd tensor lists, fuzzer finds) is a clear error with exit 1."""
import json
import resource
import subprocess

import pytest

from mtk_binary import mtk_path  # tests/ is on sys.path (conftest.py)


def run_limited(args, text=None, stack_kib=1024, timeout=60):
    """mtk under `ulimit -s stack_kib` (and a 4 GiB address-space cap on
    the release build, so runaway memory fails instead of swapping)."""
    def limits():
        resource.setrlimit(resource.RLIMIT_STACK, (stack_kib * 1024, stack_kib * 1024))
    return subprocess.run([str(mtk_path()), *args], input=text, capture_output=True, text=True,
                          timeout=timeout, preexec_fn=limits)


@pytest.mark.parametrize("expr, printed", [
    ("f32[3,4].shape", "torch.Size([3, 4])"),
    ("f32[3,4].size(1)", "4"),
    ("f32[3,4].t().stride()", "(1, 4)"),
    ("(f32[3,4].numel(), f32[3,4].dim(), f32[3,4].nbytes)", "(12, 2, 48)"),
    ("f32[3,4].dtype", "torch.float32"),
    ("f32[3,4][0, 1:3].shape", "torch.Size([2])"),
    ("f32[3,4][..., None].stride()", "(4, 1, 1)"),
    ("f32[3,4][:, ::2].stride()", "(4, 2)"),
    ("(f32[2,3] + f32[2,4] @ f32[4,3]).shape", "torch.Size([2, 3])"),
    ("-2 ** 2", "-4"),
    ("7 // 2, 7 % -2, 2 ** -1", "(3, -1, 0.5)"),
    ("f32[2].shape + (1,)", "torch.Size([2, 1])"),
])
def test_python_expressions_print_as_python(run, expr, printed):
    result = run("eval", "--", expr)
    assert result.returncode == 0, result.stderr
    assert result.stdout == printed + "\n"


def test_attribute_called_by_mistake_says_so(run):
    result = run("eval", "f32[3,4].shape(0)")
    assert result.returncode == 1
    assert "'torch.Size' object is not callable" in result.stderr
    assert "suggest" not in result.stderr and "x.shape(...)" not in result.stderr


CHAINS = [
    "f32[2]" + ".relu()" * 40000,
    "f32[2]" + ".t()" * 5000,
    "f32[2]" + "+f32[2]" * 50000,
    "f32[2]" + "[0:]" * 30000,
    "1" + "**1" * 50000,
    "-" * 100000 + "1",
    "(" * 100000 + "1" + ")" * 100000,
]


@pytest.mark.parametrize("index", range(len(CHAINS)))
def test_deep_chains_fail_cleanly_under_a_small_stack(index):
    result = run_limited(["eval", "--batch", "-"], CHAINS[index] + "\n")
    assert result.returncode == 1, result.stderr[-2000:]
    doc = json.loads(result.stdout)
    assert "nested too deeply" in doc["error"]["message"]


def test_batch_line_longer_than_the_limit_is_skipped_not_buffered():
    long_line = "[" + "1," * 600000 + "1]"     # 1.2 MB: over MTK_EVAL_MAX_TEXT
    result = run_limited(["eval", "--batch", "-"], long_line + "\n2\n")
    assert result.returncode == 1
    docs = [json.loads(line) for line in result.stdout.splitlines()]
    assert "limit of 1048576 bytes" in docs[0]["error"]["message"]
    assert docs[1] == {"scalar": 2}


def test_big_list_literal_is_refused_with_its_limit(run):
    result = run("eval", "--batch", "-", input="[" + "1," * 70000 + "1]\n")
    assert result.returncode == 1
    assert "more than 65536 items" in json.loads(result.stdout)["error"]["message"]


@pytest.mark.parametrize("expr", [
    "unbind(i8[1000000000])",
    "split(i8[1000000000], 1)",
    "chunk(i8[1000000000], 1000000000)",
    "tensor_split(i8[10], 1000000000)",
])
def test_absurd_tensor_lists_are_refused_before_memory(run, expr):
    result = run("eval", expr)
    assert result.returncode == 1
    assert "more than mtk's limit of 65536 tensors from one op" in result.stderr
    assert expr.split("(")[0] + ":" in result.stderr


@pytest.mark.parametrize("flags, expr, fragment", [
    # fuzzer finds: each once undefined behaviour, a crash or a timeout
    ((), "add(True, 8*0**6e6842738-6)**6e68", None),
    (("--json", "--values"),
     "inf/2036855675%5%-92080+++++-++to_empty(transpose(bf16[3,3,21,8547], 0, 1), device='cpu')",
     None),
])
def test_fuzzer_finds_stay_fixed(run, flags, expr, fragment):
    result = run("eval", *flags, "--", expr, timeout=20)
    assert result.returncode in (0, 1), result.stderr
    assert "runtime error" not in result.stderr
    if fragment:
        assert fragment in result.stderr


def test_help_states_the_limits(run):
    out = run("eval", "--help").stdout
    for limit in ("1048576 bytes", "256 levels", "65536 items", "4096 bytes", "65536 tensors",
                  "1048576 elements"):
        assert limit in out


def test_layouts(run):
    assert run("eval", "linspace(0, 1, 5, layout=torch.strided)").returncode == 0
    result = run("eval", "zeros(2, layout=torch.sparse_coo)")
    assert result.returncode == 1
    assert "layout=torch.sparse_coo is not supported" in result.stderr


def test_linspace_reads_a_0_dim_tensor_end_on_cpu(run):
    torch = pytest.importorskip("torch")
    result = run("eval", "--device", "cpu", "--json", "--values",
                 "linspace(full([], 2.5), 10, 4, dtype=f64)")
    assert result.returncode == 0, result.stderr
    want = torch.linspace(torch.full([], 2.5), 10, 4, dtype=torch.float64).tolist()
    assert json.loads(result.stdout)["values"] == want
