"""Fixtures for the diffusion oracle: the mtk binary of the build under test,
zoo_probe (tests/models/zoo_probe.c) for state dicts, and diffusers' side
cached in the build directory, keyed by the oracle's source, the configs and
calls, and the library versions."""
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(HERE))
from mtk_binary import mtk_path  # noqa: E402
from probe_build import build_dir, build_probe  # noqa: E402

CACHE_FILE = "diffusers_oracle_cache.json"


@pytest.fixture(scope="session")
def mtk():
    binary = mtk_path()

    def run(*args, check=True):
        result = subprocess.run([str(binary), *args], capture_output=True, text=True, timeout=300)
        if check:
            assert result.returncode == 0, result.stderr
        return result

    return run


@pytest.fixture(scope="session")
def zoo_probe(tmp_path_factory):
    binary = build_probe(tmp_path_factory, "tests/models/zoo_probe.c", "zoo_probe")

    def run(paths):
        text = "".join(f"{p} | \n" for p in paths)
        result = subprocess.run([binary], input=text, capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stderr
        return [json.loads(line) for line in result.stdout.splitlines()]

    return run


@pytest.fixture(scope="session")
def diffusers_side():
    """diffusers_side(cfg, calls) -> diffusers_oracle.describe, cached."""
    import diffusers
    import torch
    import transformers
    path = build_dir() / CACHE_FILE
    cache = json.loads(path.read_text()) if path.exists() else {}

    def get(cfg, calls):
        h = hashlib.sha256((HERE / "diffusers_oracle.py").read_bytes())
        h.update(json.dumps([cfg, calls, torch.__version__, diffusers.__version__, transformers.__version__],
                            sort_keys=True).encode())
        key = h.hexdigest()
        if key not in cache:
            import diffusers_oracle
            cache[key] = diffusers_oracle.describe(cfg, calls)
            path.write_text(json.dumps(cache, sort_keys=True))
        return cache[key]

    return get
