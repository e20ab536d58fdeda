"""Fixtures of the distributed (MPI) tests: the mtk binary, and the
checkpoints of mpi_fixtures.py, cached in the build directory under the
hash of their generator and the library versions."""
import hashlib
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from mtk_binary import mtk_bin  # noqa: E402,F401 (fixture)
from probe_build import build_dir  # noqa: E402

from mpi_launch import mpirun_path  # noqa: E402


@pytest.fixture(scope="session")
def mpi():
    if mpirun_path() is None:
        pytest.skip("mpirun not found: OpenMPI is not installed (scripts/install-deps.sh installs openmpi-bin)")


@pytest.fixture(scope="session")
def checkpoints():
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    h = hashlib.sha256((HERE / "mpi_fixtures.py").read_bytes())
    h.update(f"{torch.__version__} {transformers.__version__}".encode())
    root = build_dir() / "mpi_fixtures" / h.hexdigest()[:16]
    if not (root / "done").exists():
        root.mkdir(parents=True, exist_ok=True)
        out = subprocess.run([sys.executable, str(HERE / "mpi_fixtures.py"), str(root)], capture_output=True,
                             text=True, timeout=600)
        assert out.returncode == 0, out.stderr[-2000:]
    return root
