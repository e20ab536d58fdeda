"""mtk ops: the op table as text and JSON."""
import json

import pytest


def test_ops_json_is_an_array_of_named_signatures(run):
    result = run("ops", "--json")
    assert result.returncode == 0
    ops = json.loads(result.stdout)
    assert isinstance(ops, list)
    for op in ops:
        assert set(op) == {"name", "signature", "cpu", "flags"}
        assert op["signature"].startswith(op["name"] + "(")
        assert isinstance(op["cpu"], bool)
    assert len({op["name"] for op in ops}) == len(ops), "op names are unique"


def test_ops_text_lists_one_signature_per_op(run):
    text = run("ops")
    ops = json.loads(run("ops", "--json").stdout)
    assert text.returncode == 0
    assert text.stdout.splitlines() == [op["signature"] for op in ops]


def test_ops_pattern_filters_by_name(run, op_names):
    if not op_names:
        pytest.skip("the op table is empty")
    name = sorted(op_names)[0]
    result = run("ops", "--json", name)
    assert result.returncode == 0
    assert all(name in op["name"] for op in json.loads(result.stdout))
    assert name in {op["name"] for op in json.loads(result.stdout)}


def test_ops_pattern_without_match_fails(run):
    result = run("ops", "no_op_has_this_name")
    assert result.returncode == 1
    assert result.stderr.startswith("mtk: error: no op name contains 'no_op_has_this_name'")


def test_ops_takes_at_most_one_pattern(run):
    assert run("ops", "a", "b").returncode == 2


def test_no_match_with_json_is_the_one_error_shape(run):
    result = run("ops", "--json", "no_op_has_this_name")
    assert result.returncode == 1 and result.stderr == ""
    assert result.stdout == ('{"error":{"code":"unknown_op","message":"no op name contains '
                             "'no_op_has_this_name' (mtk ops lists them all)\"}}\n")
