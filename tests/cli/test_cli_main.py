"""mtk's command skeleton: global options, dispatch, help and exit statuses."""
import re

import pytest

COMMANDS = ["eval", "ops"]


def test_no_arguments_prints_usage_to_stderr_and_exits_2(run):
    result = run()
    assert result.returncode == 2
    assert result.stdout == ""
    assert "usage: mtk" in result.stderr


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help_lists_every_command_and_exits_0(run, flag):
    result = run(flag)
    assert result.returncode == 0
    assert result.stdout.startswith("usage: mtk")
    for command in COMMANDS + ["help"]:
        assert re.search(rf"^  {command}\s", result.stdout, re.M), command


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version_prints_name_and_semver(run, flag):
    result = run(flag)
    assert result.returncode == 0
    assert re.fullmatch(r"mtk \d+\.\d+\.\d+\n", result.stdout)


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help(run, command):
    result = run(command, "--help")
    assert result.returncode == 0
    assert result.stdout.startswith(f"usage: mtk {command}")
    assert result.stderr == ""


@pytest.mark.parametrize("command", COMMANDS)
def test_help_command_shows_the_commands_help(run, command):
    assert run("help", command).stdout == run(command, "--help").stdout


def test_help_without_command_shows_the_main_usage(run):
    result = run("help")
    assert result.returncode == 0
    assert result.stdout == run("--help").stdout


def test_help_of_an_unknown_command_is_a_usage_error(run):
    result = run("help", "frobnicate")
    assert result.returncode == 2
    assert result.stderr.startswith("mtk: error: unknown command 'frobnicate'")


def test_unknown_command_lists_the_commands(run):
    result = run("frobnicate")
    assert result.returncode == 2
    assert result.stdout == ""
    first = result.stderr.splitlines()[0]
    assert first.startswith("mtk: error: unknown command 'frobnicate'")
    for command in COMMANDS:
        assert command in first


def test_unknown_global_option_is_a_usage_error(run):
    result = run("--frobnicate")
    assert result.returncode == 2
    assert result.stderr.startswith("mtk: error: unrecognized option '--frobnicate'")


@pytest.mark.parametrize("command", COMMANDS)
def test_unknown_command_option_is_a_usage_error(run, command):
    result = run(command, "--no-such-option")
    assert result.returncode == 2
    assert result.stderr.startswith("mtk: error: unrecognized option '--no-such-option'")
    assert f"mtk {command} --help" in result.stderr
