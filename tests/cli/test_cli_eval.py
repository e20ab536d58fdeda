import sys
import os
"""mtk eval: text and JSON output, errors and exit statuses, batch mode.

Expected reprs are torch's own (repr(torch.empty(3, 4, device='meta')) is
"tensor(..., device='meta', size=(3, 4))"); tests of op calls compare
with torch on the meta device and skip when this build lacks the op.
"""
import json
import re
import resource
import subprocess

import pytest

def tensor_doc(shape, dtype, stride, device="meta", offset=0):
    return {"shape": shape, "dtype": dtype, "stride": stride, "storage_offset": offset,
            "device": device}


# ------------------------------------------------------------- text output

@pytest.mark.parametrize("expr, out", [
    ("f32[3,4]", "tensor(..., device='meta', size=(3, 4))"),
    ("f16[2]", "tensor(..., device='meta', size=(2,), dtype=torch.float16)"),
    ("bf16[]", "tensor(..., device='meta', size=(), dtype=torch.bfloat16)"),
    ("i64[2,0]", "tensor(..., device='meta', size=(2, 0), dtype=torch.int64)"),
    ("(f32[2], i64[3])", "(tensor(..., device='meta', size=(2,)), "
                         "tensor(..., device='meta', size=(3,), dtype=torch.int64))"),
])
def test_tensors_print_as_torch_repr(run, expr, out):
    result = run("eval", expr)
    assert result.returncode == 0, result.stderr
    assert result.stdout == out + "\n"


@pytest.mark.parametrize("expr, out", [
    ("f32[2,2]", "tensor([[0., 0.],\n        [0., 0.]])"),
    ("i32[2]", "tensor([0, 0], dtype=torch.int32)"),
])
def test_cpu_literals_are_zero_filled_and_print_their_values(run, expr, out):
    result = run("eval", "--device", "cpu", expr)
    assert result.returncode == 0, result.stderr
    assert result.stdout == out + "\n"


@pytest.mark.parametrize("expr, out", [
    ("3", "3"), ("-7", "-7"), ("2.5", "2.5"), ("1e-5", "1e-05"), ("1e16", "1e+16"),
    ("True", "True"), ("false", "False"), ("None", "None"), ("'cpu'", "'cpu'"),
    ("(1,)", "(1,)"), ("[1, (2.0, 'a')]", "[1, (2.0, 'a')]"), ("torch.float16", "torch.float16"),
    ("float('inf')", "inf"),
])
def test_values_print_as_python_repr(run, expr, out):
    result = run("eval", expr)
    assert result.returncode == 0, result.stderr
    assert result.stdout == out + "\n"


def test_several_operands_are_joined_with_spaces(run):
    result = run("eval", "--json", "f32[2,", "3]")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == tensor_doc([2, 3], "float32", [3, 1])


def test_expression_starting_with_minus_is_not_an_option(run):
    assert run("eval", "-1").stdout == "-1\n"
    assert run("eval", "--", "-1").stdout == "-1\n"
    assert run("eval", "--json", "-2.5").stdout == '{"scalar":-2.5}\n'
    result = run("eval", "-x", "1")
    assert result.returncode == 2
    assert result.stderr.startswith("mtk: error: unrecognized option '-x'")


def test_error_column_counts_from_the_expression_as_typed(run):
    result = run("eval", "-1 2")
    assert result.stderr.startswith("mtk: error: syntax error at column 4:")


def test_error_goes_to_stderr_with_exit_1(run):
    result = run("eval", "f32[2,-1]")
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.startswith(
        "mtk: error: f32[2,-1]: Trying to create tensor with negative dimension -1: [2, -1]")


def test_syntax_error_names_the_column_and_points_at_it(run):
    result = run("eval", "zeros(3, 4")
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert lines[0] == "mtk: error: syntax error at column 6: '(' was never closed"
    assert lines[1] == "  zeros(3, 4"
    assert lines[2] == "       ^"


@pytest.mark.parametrize("expr, fragment", [
    ("", "empty expression"),
    ("f32[3", "'[' was never closed"),
    ("(1, 2]", "does not match"),
    ("f32[3])", "unmatched ')'"),
    ("3 4", "expected end of input"),
    ("1 +", "expected an expression"),
    ("99999999999999999999", "does not fit in int64"),
    ("nosuchop(1)", "unknown op 'nosuchop'"),
    ("foo", "name 'foo' is not defined"),
    ("(" * 5000 + "1" + ")" * 5000, "nested too deeply"),
])
def test_malformed_input_fails_cleanly(run, expr, fragment):
    result = run("eval", "--", expr)
    assert result.returncode == 1
    assert result.stderr.startswith("mtk: error: ")
    assert fragment in result.stderr


# ------------------------------------------------------------- JSON output

def test_json_of_a_tensor(run):
    result = run("eval", "--json", "f32[3,5]")
    assert result.returncode == 0
    assert result.stdout.count("\n") == 1
    assert json.loads(result.stdout) == tensor_doc([3, 5], "float32", [5, 1])


def test_json_of_a_tuple_is_an_array(run):
    result = run("eval", "--json", "(bf16[], i64[2,0], 3, 2.5, True, None)")
    assert json.loads(result.stdout) == [
        tensor_doc([], "bfloat16", []),
        tensor_doc([2, 0], "int64", [1, 1]),
        {"scalar": 3}, {"scalar": 2.5}, {"scalar": True}, None,
    ]


def test_json_of_numbers_keeps_python_types(run):
    assert json.loads(run("eval", "--json", "2.0").stdout) == {"scalar": 2.0}
    assert isinstance(json.loads(run("eval", "--json", "2.0").stdout)["scalar"], float)
    assert isinstance(json.loads(run("eval", "--json", "2").stdout)["scalar"], int)
    assert json.loads(run("eval", "--json", "9223372036854775807").stdout) == {"scalar": 2**63 - 1}


def test_json_values_for_cpu_tensors_only(run):
    cpu = run("eval", "--device", "cpu", "--json", "--values", "(f32[2,2], bool[1])")
    assert json.loads(cpu.stdout) == [
        {**tensor_doc([2, 2], "float32", [2, 1], device="cpu"), "values": [0.0] * 4},
        {**tensor_doc([1], "bool", [1], device="cpu"), "values": [False]},
    ]
    meta = run("eval", "--json", "--values", "f32[2]")
    assert "values" not in json.loads(meta.stdout)
    no_flag = run("eval", "--device", "cpu", "--json", "f32[2]")
    assert "values" not in json.loads(no_flag.stdout)


def test_json_error_document_with_exit_1(run):
    result = run("eval", "--json", "f32[3,")
    assert result.returncode == 1
    doc = json.loads(result.stdout)
    assert set(doc) == {"error"}
    assert doc["error"]["code"] == "syntax_error"
    assert "never closed" in doc["error"]["message"]


def test_json_error_codes(run):
    def code(expr):
        return json.loads(run("eval", "--json", expr).stdout)["error"]["code"]
    assert code("nosuchop(1)") == "unknown_op"
    assert code("f32[-1]") == "shape_error"
    assert code("f33[1]") == "dtype_error"
    assert code("1 2") == "syntax_error"
    assert code("99999999999999999999") == "overflow"


# ------------------------------------------------------------ usage errors

@pytest.mark.parametrize("args", [
    ["eval"],
    ["eval", "--json"],
    ["eval", "--device", "cuda", "1"],
    ["eval", "--device"],
    ["eval", "--batch", "-", "1"],
    ["eval", "--json=yes", "1"],
])
def test_usage_errors_exit_2(run, args):
    result = run(*args)
    assert result.returncode == 2
    assert result.stderr.startswith("mtk: error: ")
    assert "mtk eval --help" in result.stderr


# -------------------------------------------------------------- batch mode

def batch(run, text, *flags):
    result = run("eval", *flags, "--batch", "-", input=text)
    return result, [json.loads(line) for line in result.stdout.splitlines()]


def test_batch_prints_one_json_line_per_input_line_in_order(run):
    lines = ["f32[3,4]", "nosuchop(1)", "(1, 2.5)", "f32[", "i64[2]"]
    result, docs = batch(run, "\n".join(lines) + "\n")
    assert len(docs) == len(lines)
    assert docs[0] == tensor_doc([3, 4], "float32", [4, 1])
    assert docs[1]["error"]["code"] == "unknown_op"
    assert docs[2] == [{"scalar": 1}, {"scalar": 2.5}]
    assert docs[3]["error"]["code"] == "syntax_error"
    assert docs[4] == tensor_doc([2], "int64", [1])
    assert result.returncode == 1, "any failed line makes the exit status 1"


def test_batch_exit_status_is_0_when_every_line_succeeds(run):
    result, docs = batch(run, "f32[1]\n2\n")
    assert result.returncode == 0
    assert len(docs) == 2


def test_batch_blank_line_is_an_error_line(run):
    result, docs = batch(run, "1\n\n2\n")
    assert [d.get("error", {}).get("code") if isinstance(d, dict) else None for d in docs] == \
        [None, "syntax_error", None]
    assert "empty expression" in docs[1]["error"]["message"]
    assert result.returncode == 1


def test_batch_handles_crlf_and_a_last_line_without_newline(run):
    result, docs = batch(run, "f32[2]\r\n3")
    assert result.returncode == 0
    assert docs == [tensor_doc([2], "float32", [1]), {"scalar": 3}]


def test_batch_errors_do_not_leak_into_later_lines(run):
    result, docs = batch(run, "f32[-1]\nf32[1]\n")
    assert "error" in docs[0]
    assert docs[1] == tensor_doc([1], "float32", [1])


def test_batch_values_on_cpu(run):
    result, docs = batch(run, "i64[2]\n", "--device", "cpu", "--values")
    assert docs == [{**tensor_doc([2], "int64", [1], device="cpu"), "values": [0, 0]}]


def test_batch_reads_a_file(run, tmp_path):
    path = tmp_path / "exprs.txt"
    path.write_text("f32[1]\nf32[2]\n")
    result = run("eval", "--batch", str(path))
    assert result.returncode == 0
    assert [json.loads(l)["shape"] for l in result.stdout.splitlines()] == [[1], [2]]


def test_batch_missing_file_is_an_error(run, tmp_path):
    result = run("eval", "--batch", str(tmp_path / "missing.txt"))
    assert result.returncode == 1
    assert result.stderr.startswith("mtk: error: cannot open")


def test_batch_answers_each_line_before_the_next_arrives(mtk_bin):
    """A caller that writes a line and waits for its answer must not hang."""
    proc = subprocess.Popen([mtk_bin, "eval", "--batch", "-"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, bufsize=1)
    try:
        for n in (1, 2, 3):
            proc.stdin.write(f"f32[{n}]\n")
            proc.stdin.flush()
            assert json.loads(proc.stdout.readline())["shape"] == [n]
        proc.stdin.close()
        assert proc.wait(timeout=10) == 0
    finally:
        proc.kill()


def test_batch_long_line(run):
    expr = "[" + ",".join(["1"] * 65536) + "]"
    result, docs = batch(run, expr + "\n2\n")
    assert len(docs) == 2
    assert len(docs[0]) == 65536
    assert docs[1] == {"scalar": 2}


def peak_rss_kib(mtk_bin, args, text):
    """Peak RSS of one mtk run, measured in a fresh parent process whose only
    child is mtk (RUSAGE_CHILDREN of this pytest process would also count
    every other child it ever ran).  ASan's quarantine is capped so that a
    sanitizer build measures mtk, not the quarantine."""
    code = ("import resource, subprocess, sys\n"
            "p = subprocess.run(sys.argv[1:], stdin=sys.stdin, stdout=subprocess.DEVNULL)\n"
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, p.returncode)\n")
    env = dict(os.environ)
    env["ASAN_OPTIONS"] = (env.get("ASAN_OPTIONS", "") + ":quarantine_size_mb=4").lstrip(":")
    out = subprocess.run([sys.executable, "-c", code, mtk_bin, *args], input=text, text=True,
                         capture_output=True, env=env, timeout=300)
    peak, status = out.stdout.split()
    assert status == "0" or status == "1", out.stderr
    return int(peak)


def test_batch_memory_stays_bounded_over_100k_lines(mtk_bin):
    unit = "f32[3,4]\nnosuchop(1)\n(i64[2], [1, 2])\n"
    small = peak_rss_kib(mtk_bin, ["eval", "--device", "cpu", "--batch", "-"], unit * 3400)
    large = peak_rss_kib(mtk_bin, ["eval", "--device", "cpu", "--batch", "-"], unit * 34000)
    # 10x the lines may not cost more than a few MiB: every line's memory is freed
    assert large - small < 8 * 1024, f"peak RSS {small} KiB for 10k lines, {large} KiB for 100k"


# ------------------------------------------- op calls, compared with torch

CALLS = [
    ("zeros(3, 4)", "torch.zeros(3, 4, device='meta')"),
    ("torch.ones(2, 3, dtype=torch.float16)", "torch.ones(2, 3, dtype=torch.float16, device='meta')"),
    ("matmul(f32[3,4], f32[4,5])", "torch.matmul(E(3,4), E(4,5))"),
    ("add(f32[8,1,6], i64[7,1])", "torch.add(E(8,1,6), E(7,1, dtype=torch.int64))"),
    ("transpose(f32[2,3,4], 0, 2)", "torch.transpose(E(2,3,4), 0, 2)"),
    ("f32[3,4].view(12)", "E(3,4).view(12)"),
    ("F.relu(f32[2,3])", "torch.nn.functional.relu(E(2,3))"),
]


def meta_doc(t):
    return tensor_doc(list(t.shape), str(t.dtype).removeprefix("torch."), list(t.stride()),
                      device=t.device.type, offset=t.storage_offset())


@pytest.mark.parametrize("expr, reference", CALLS)
def test_op_calls_match_torch(run, op_names, expr, reference):
    torch = pytest.importorskip("torch")
    needed = {name.split(".")[-1] for name in re.findall(r"([\w.]+)\(", expr)}
    missing = needed - op_names
    if missing:
        pytest.skip(f"ops not in this build yet: {sorted(missing)}")

    def E(*shape, dtype=torch.float32):
        return torch.empty(shape, dtype=dtype, device="meta")

    want = eval(reference, {"torch": torch, "E": E})
    result = run("eval", "--json", expr)
    assert result.returncode == 0, result.stdout + result.stderr
    assert json.loads(result.stdout) == meta_doc(want)
