"""Builds a C probe program of the Python test suites (tests/nn/nn_probe.c,
tests/models/zoo_probe.c) against the library of the build under test: the
directory of $MTK_BIN (default build/), with the same sanitizer flags when
that build used them."""
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def build_dir():
    """The build directory under test: where $MTK_BIN (default build/mtk) is."""
    path = Path(os.environ.get("MTK_BIN", REPO / "build" / "mtk"))
    if not path.is_absolute():
        path = REPO / path
    return path.parent


def pkg_config(*args):
    out = subprocess.run(["pkg-config", *args, "libcjson", "openblas"], capture_output=True, text=True)
    return out.stdout.split() if out.returncode == 0 else ["-lcjson", "-lopenblas"]


def build_probe(tmp_path_factory, source, name):
    """Compiles `source` (a path under the repo) into a temporary `name`
    linked with the build's libmtk.a; returns the binary's path.  Fails the
    test session (never skips) when the library or the compile is missing."""
    build = build_dir()
    lib = build / "libmtk.a"
    if not lib.exists():
        pytest.fail(f"libmtk.a not found in {build}: build it first (make) or set MTK_BIN")
    cache = build / "CMakeCache.txt"
    sanitize = cache.exists() and re.search(r"^MTK_SANITIZE:BOOL=ON", cache.read_text(), re.M)
    flags = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer"] if sanitize else ["-O1"]
    cc = os.environ.get("CC") or shutil.which("cc") or "gcc"
    out = tmp_path_factory.mktemp(name) / name
    cmd = [cc, "-std=c11", "-D_GNU_SOURCE", *flags, "-I", str(REPO / "include"), str(REPO / source),
           str(lib), *pkg_config("--cflags", "--libs"), "-lm", "-lpthread", "-o", str(out)]
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        pytest.fail(f"cannot build {name}:\n" + " ".join(cmd) + "\n" + result.stderr)
    return str(out)
