"""Fixtures for the CLI tests: the mtk binary (env MTK_BIN, default build/mtk)."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from mtk_binary import mtk_bin, run  # noqa: E402,F401 (fixtures)


@pytest.fixture(scope="session")
def op_names(run):
    """Names of the ops in this build's table (tests of calls skip without them)."""
    import json
    result = run("ops", "--json")
    assert result.returncode == 0, result.stderr
    return {op["name"] for op in json.loads(result.stdout)}
