"""Runs mtk under mpirun (OpenMPI from Debian, installed by
scripts/install-deps.sh) on this machine: as root it needs
OMPI_ALLOW_RUN_AS_ROOT(_CONFIRM), and more ranks than cores need
--oversubscribe.  A sanitizer build of mtk gets OpenMPI's own
allocations-until-exit suppressed (lsan_openmpi.supp)."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from probe_build import build_dir  # noqa: E402


def mpirun_path():
    """mpirun's path, or None when OpenMPI is not installed."""
    return shutil.which("mpirun")


def mpi_env():
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1",
               # shared memory between the ranks; no network probing
               OMPI_MCA_btl="self,vader", OMPI_MCA_btl_vader_single_copy_mechanism="none",
               # components stay loaded at exit, so that LeakSanitizer can
               # name their allocations (and lsan_openmpi.supp match them)
               OMPI_MCA_mca_base_component_disable_dlclose="1")
    # OpenMPI's libraries lack frame pointers: the slow unwinder reaches
    # them, so that the suppressions match
    env["ASAN_OPTIONS"] = ":".join(filter(None, [env.get("ASAN_OPTIONS"), "fast_unwind_on_malloc=0"]))
    supp = f"suppressions={HERE / 'lsan_openmpi.supp'}"
    env["LSAN_OPTIONS"] = f"{env['LSAN_OPTIONS']}:{supp}" if env.get("LSAN_OPTIONS") else supp
    return env


def mpirun(mtk_bin, np, *args, timeout=300):
    """`mpirun -np NP mtk ARGS...` -> CompletedProcess (text)."""
    cmd = [mpirun_path(), "--oversubscribe", "--bind-to", "none", "-np", str(np), mtk_bin, *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=mpi_env())


def sanitized_build():
    """True when the build under test is the sanitizer build (make
    test-asan): there every mpirun costs ~13 s, so the tests keep one run
    per kind of plan (memory errors are about code paths, and the release
    run covers every world size)."""
    cache = build_dir() / "CMakeCache.txt"
    return cache.exists() and "MTK_SANITIZE:BOOL=ON" in cache.read_text()
