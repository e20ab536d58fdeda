"""mtk's command skeleton: global options, dispatch, help and exit statuses."""
import pathlib
import re

import pytest

CLI = pathlib.Path(__file__).resolve().parents[2] / "src" / "cli"
# every row of src/cli/commands.h
COMMANDS = re.findall(r"^MTK_CLI_COMMAND\((\w+),", (CLI / "commands.h").read_text(), re.M)


def accepted_options(command):
    """The long options a command's getopt table accepts (its source)."""
    source = (CLI / f"cli_{command}.c").read_text()
    if "cli_json_help_options(" in source:
        return {"json", "help"}
    return set(re.findall(r'\{ "([a-z][a-z-]*)", (?:no|required|optional)_argument', source))


def test_the_command_table_has_every_command():
    assert COMMANDS == ["eval", "ops", "summary", "models", "inspect", "convert", "load", "memory", "place", "shard", "run", "generate"]


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
def test_every_command_documents_each_option_it_accepts(run, command):
    help_text = run(command, "--help").stdout
    options = accepted_options(command)
    assert {"help"} < options
    documented = set(re.findall(r"^  (?:-\w, )?\s*--([a-z][a-z-]*)", help_text, re.M))
    assert documented == options, f"documented {sorted(documented)}, accepted {sorted(options)}"
    usage = help_text.split("\n\n")[0]  # the usage lines, up to the first blank one
    for option in options - {"help"}:
        assert f"--{option}" in usage, f"usage of {command} lacks --{option}"


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
