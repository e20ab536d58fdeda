"""Under a memory limit every command exits: one without BLAS work starts
no BLAS threads (OpenBLAS is opened on first use), and one with BLAS work
either runs or fails with an out-of-memory error (OpenBLAS's workers used
to retry their 128 MB buffer forever, so `mtk eval 'f32[2]'` printed its
result and hung at exit)."""
import os
import subprocess

import pytest


def _sanitized(mtk_bin):
    out = subprocess.run(["ldd", mtk_bin], capture_output=True, text=True).stdout
    return "libasan" in out or "libubsan" in out


def _limited(mtk_bin, kib, *args):
    script = 'ulimit -v %d; exec "$@"' % kib
    return subprocess.run(["bash", "-c", script, "bash", mtk_bin, *args], capture_output=True, text=True,
                          timeout=60)


@pytest.fixture
def plain_bin(mtk_bin):
    if _sanitized(mtk_bin):
        pytest.skip("sanitizer builds reserve terabytes of address space: no ulimit -v")
    return mtk_bin


def test_meta_eval_exits_under_a_memory_limit(plain_bin):
    proc = _limited(plain_bin, 100000, "eval", "f32[2]")
    assert proc.returncode == 0, proc.stderr
    assert "size=(2,)" in proc.stdout


def test_blas_work_under_a_tight_limit_is_an_error_not_a_hang(plain_bin):
    proc = _limited(plain_bin, 100000, "eval", "--device", "cpu", "matmul(ones(2, 3), ones(3, 2))")
    assert proc.returncode == 1
    assert "out of memory" in proc.stderr and "OpenBLAS" in proc.stderr


def test_blas_work_runs_when_one_buffer_fits(plain_bin):
    proc = _limited(plain_bin, 600000, "eval", "--device", "cpu", "matmul(ones(2, 3), ones(3, 2))")
    assert proc.returncode == 0, proc.stderr
    assert "3., 3." in proc.stdout


def test_commands_without_blas_work_do_not_load_openblas(mtk_bin):
    env = dict(os.environ, LD_DEBUG="files")
    proc = subprocess.run([mtk_bin, "eval", "matmul(f32[2,3], f32[3,4])"], capture_output=True, text=True,
                          env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "libopenblas" not in proc.stderr
    proc = subprocess.run([mtk_bin, "eval", "--device", "cpu", "matmul(ones(2, 3), ones(3, 4))"],
                          capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0
    assert "libopenblas" in proc.stderr  # loaded when needed
