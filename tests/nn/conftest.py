"""Fixtures for the nn oracle: nn_probe (tests/nn/nn_probe.c) compiled
against the library of the build under test (the directory of $MTK_BIN,
default build/), with the same sanitizer flags when that build used them."""
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


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
def probe_bin(tmp_path_factory):
    build = build_dir()
    lib = build / "libmtk.a"
    if not lib.exists():
        pytest.fail(f"libmtk.a not found in {build}: build it first (make) or set MTK_BIN")
    cache = build / "CMakeCache.txt"
    sanitize = cache.exists() and re.search(r"^MTK_SANITIZE:BOOL=ON", cache.read_text(), re.M)
    flags = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer"] if sanitize else ["-O1"]
    cc = os.environ.get("CC") or shutil.which("cc") or "gcc"
    out = tmp_path_factory.mktemp("nn_probe") / "nn_probe"
    cmd = [cc, "-std=c11", "-D_GNU_SOURCE", *flags, "-I", str(REPO / "include"),
           str(REPO / "tests" / "nn" / "nn_probe.c"), str(lib), *pkg_config("--cflags", "--libs"),
           "-lm", "-lpthread", "-o", str(out)]
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        pytest.fail("cannot build nn_probe:\n" + " ".join(cmd) + "\n" + result.stderr)
    return str(out)


@pytest.fixture(scope="session")
def probe(probe_bin):
    """probe(lines) -> one parsed JSON object per 'SPEC | INPUTS | MODE' line."""
    import json

    def run(lines):
        text = "".join(line + "\n" for line in lines)
        result = subprocess.run([probe_bin], input=text, capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stderr
        answers = [json.loads(line) for line in result.stdout.splitlines()]
        assert len(answers) == len(lines), result.stdout + result.stderr
        return answers

    return run


@pytest.fixture(scope="session")
def mtk_summary():
    """mtk_summary(*args) -> CompletedProcess of `mtk summary ARGS` (text)."""
    binary = build_dir() / "mtk"
    if not binary.exists():
        pytest.fail(f"mtk binary not found at {binary}: build it first (make) or set MTK_BIN")

    def run(*args):
        return subprocess.run([str(binary), "summary", *args], capture_output=True, text=True, timeout=60)

    return run
