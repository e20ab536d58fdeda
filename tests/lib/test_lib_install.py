"""A prefix install of the build works for a program outside the tree, as
the README says: pkg-config gives the flags to compile and link against
libmtk.so (found through an rpath or LD_LIBRARY_PATH) or libmtk.a (with
--static for its dependencies), and find_package(mtk) gives mtk::mtk and
mtk::mtk_static.  tests/lib/consumer builds a meta tensor and a model on
meta and prints them."""
import os
import shutil
import subprocess
from pathlib import Path

import pytest

CONSUMER = Path(__file__).resolve().parent / "consumer"
EXPECTED = ["matmul (2, 4) on meta",
            "gpt2: 124439808 parameters, transformer.wte.weight (50257, 768) on meta"]


def run(cmd, env=None, **kw):
    result = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300, **kw)
    assert result.returncode == 0, f"{' '.join(map(str, cmd))} failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout


@pytest.fixture(scope="module")
def prefix(build_dir, tmp_path_factory):
    """The build installed into a fresh prefix (a copy of what is built)."""
    dest = tmp_path_factory.mktemp("install") / "prefix"
    run(["cmake", "--install", str(build_dir), "--prefix", str(dest)])
    return dest


def pkg_config(prefix, *args):
    (pc,) = prefix.glob("lib*/**/pkgconfig/mtk.pc")  # lib/, lib64/ or lib/<triplet>/
    env = dict(os.environ, PKG_CONFIG_PATH=str(pc.parent))
    return run(["pkg-config", *args, "mtk"], env=env).split()


def cc():
    return os.environ.get("CC") or shutil.which("cc") or "gcc"


def needed(binary):
    """The shared libraries `binary` names (readelf -d NEEDED)."""
    out = run(["readelf", "-d", str(binary)])
    return [line.split("[", 1)[1].rstrip("]") for line in out.splitlines() if "(NEEDED)" in line]


def compile_consumer(out, flags):
    run([cc(), "-std=c11", "-Wall", "-Wextra", "-Werror", "-o", str(out), str(CONSUMER / "main.c"), *flags])
    return out


def test_pkg_config_points_into_the_prefix_it_was_installed_to(prefix, tmp_path):
    cflags = pkg_config(prefix, "--cflags")
    assert f"-I{(prefix / 'include').resolve()}" in [f"-I{Path(f[2:]).resolve()}" for f in cflags]
    (libdir,) = pkg_config(prefix, "--variable=libdir")
    assert (Path(libdir) / "libmtk.so").exists()
    # prefix-relative: the tree still works after it is moved
    moved = tmp_path / "moved"
    shutil.copytree(prefix, moved, symlinks=True)
    (libdir,) = pkg_config(moved, "--variable=libdir")
    assert Path(libdir).resolve().parent == moved.resolve()


def test_shared_program_built_with_pkg_config_runs_with_rpath_or_ld_library_path(prefix, tmp_path):
    (libdir,) = pkg_config(prefix, "--variable=libdir")
    flags = pkg_config(prefix, "--cflags", "--libs")
    prog = compile_consumer(tmp_path / "consumer_rpath", [*flags, f"-Wl,-rpath,{libdir}"])
    assert "libmtk.so.0" in needed(prog)
    assert run([str(prog)]).splitlines() == EXPECTED
    plain = compile_consumer(tmp_path / "consumer", flags)
    env = dict(os.environ, LD_LIBRARY_PATH=libdir)
    assert run([str(plain)], env=env).splitlines() == EXPECTED


def test_static_program_links_libmtk_a_with_the_static_flags_of_pkg_config(prefix, tmp_path):
    # -l:libmtk.a picks the archive beside libmtk.so; every other flag,
    # the private dependencies included, is what --static gives
    libs = ["-l:libmtk.a" if f == "-lmtk" else f for f in pkg_config(prefix, "--static", "--libs")]
    assert "-l:libmtk.a" in libs
    prog = compile_consumer(tmp_path / "consumer_static", [*pkg_config(prefix, "--cflags"), *libs])
    assert not [lib for lib in needed(prog) if lib.startswith("libmtk")]
    assert run([str(prog)]).splitlines() == EXPECTED


def test_cmake_project_finds_mtk_and_links_mtk_mtk(prefix, tmp_path):
    build = tmp_path / "build"
    run(["cmake", "-S", str(CONSUMER), "-B", str(build), f"-DCMAKE_PREFIX_PATH={prefix}",
         "-DCMAKE_BUILD_TYPE=Release"])
    run(["cmake", "--build", str(build)])
    assert "libmtk.so.0" in needed(build / "consumer")
    assert not [lib for lib in needed(build / "consumer_static") if lib.startswith("libmtk")]
    for prog in ("consumer", "consumer_static"):
        assert run([str(build / prog)]).splitlines() == EXPECTED
