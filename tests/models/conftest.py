"""Fixtures for the zoo oracle: zoo_probe (tests/models/zoo_probe.c) compiled
against the library of the build under test (the directory of $MTK_BIN,
default build/), with the same sanitizer flags when that build used them,
and the mtk binary itself."""
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))


def build_dir():
    """The build directory under test: where $MTK_BIN (default build/mtk) is."""
    path = Path(os.environ.get("MTK_BIN", REPO / "build" / "mtk"))
    if not path.is_absolute():
        path = REPO / path
    return path.parent


def pkg_config(*args):
    out = subprocess.run(["pkg-config", *args, "libcjson", "openblas"], capture_output=True, text=True)
    return out.stdout.split() if out.returncode == 0 else ["-lcjson", "-lopenblas"]


@pytest.fixture(scope="session")
def zoo_probe_bin(tmp_path_factory):
    build = build_dir()
    lib = build / "libmtk.a"
    if not lib.exists():
        pytest.fail(f"libmtk.a not found in {build}: build it first (make) or set MTK_BIN")
    cache = build / "CMakeCache.txt"
    sanitize = cache.exists() and re.search(r"^MTK_SANITIZE:BOOL=ON", cache.read_text(), re.M)
    flags = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer"] if sanitize else ["-O1"]
    cc = os.environ.get("CC") or shutil.which("cc") or "gcc"
    out = tmp_path_factory.mktemp("zoo_probe") / "zoo_probe"
    cmd = [cc, "-std=c11", "-D_GNU_SOURCE", *flags, "-I", str(REPO / "include"),
           str(REPO / "tests" / "models" / "zoo_probe.c"), str(lib), *pkg_config("--cflags", "--libs"),
           "-lm", "-lpthread", "-o", str(out)]
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        pytest.fail("cannot build zoo_probe:\n" + " ".join(cmd) + "\n" + result.stderr)
    return str(out)


@pytest.fixture(scope="session")
def zoo_probe(zoo_probe_bin):
    """zoo_probe([(model, [shape, ...]), ...]) -> one parsed answer per model
    (see zoo_probe.c for the layout)."""

    def run(requests):
        lines = []
        for model, shapes in requests:
            inputs = ";".join("x".join(str(d) for d in s) for s in shapes)
            lines.append(f"{model} | {inputs}\n")
        result = subprocess.run([zoo_probe_bin], input="".join(lines), capture_output=True, text=True,
                                timeout=600)
        assert result.returncode == 0, result.stderr
        answers = [json.loads(line) for line in result.stdout.splitlines()]
        assert len(answers) == len(lines), result.stdout + result.stderr
        return answers

    return run


@pytest.fixture(scope="session")
def builtin_models(zoo_probe_bin):
    """{name: {"hf_id", "example_input", "config": dict}} of every built-in model."""
    result = subprocess.run([zoo_probe_bin, "--builtins"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    out = {}
    for entry in json.loads(result.stdout):
        entry["config"] = json.loads(entry["config"])
        out[entry["name"]] = entry
    return out


@pytest.fixture(scope="session")
def mtk():
    """mtk(*args) -> CompletedProcess of the mtk binary under test."""
    binary = build_dir() / "mtk"
    if not binary.exists():
        pytest.fail(f"mtk binary not found at {binary}: build it first (make) or set MTK_BIN")

    def run(*args):
        return subprocess.run([str(binary), *args], capture_output=True, text=True, timeout=120)

    return run
