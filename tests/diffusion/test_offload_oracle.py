"""`mtk memory PIPELINE --offload model|sequential` against diffusers' own
offload hooks: a tiny random StableDiffusionPipeline, and a
StableDiffusionXLPipeline (two text encoders in the hook chain), saved by
save_pretrained, run for one image (32x32, 2 steps, classifier-free
guidance) under enable_model_cpu_offload and enable_sequential_cpu_offload
with the GPU simulated on the cpu (offload_oracle.py says how), traced for
which components are resident when each runs, the bytes moved host -> GPU
and back, and sequential offload's largest set of parameters on the GPU at
once while each component runs.  The oracle's answer is cached in the build directory,
keyed by its source and the library versions."""
import hashlib
import json
import shutil
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))
from probe_build import build_dir  # noqa: E402

CALL = {"height": 32, "width": 32, "steps": 2, "guidance": 7.5}
MTK_ARGS = ["--image", "32x32", "--steps", "2", "--guidance"]


@pytest.fixture(scope="module", params=["sd", "sdxl"])
def traced(request):
    from importlib.metadata import version
    h = hashlib.sha256((HERE / "offload_oracle.py").read_bytes())
    h.update(json.dumps([request.param, CALL, version("torch"), version("diffusers"), version("accelerate"),
                         version("transformers")]).encode())
    path = build_dir() / "offload_oracle" / h.hexdigest()[:24]
    if not (path / "oracle.json").exists():
        import offload_oracle
        tmp = path.with_suffix(".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        result = offload_oracle.oracle(str(tmp), request.param, **CALL)
        (tmp / "oracle.json").write_text(json.dumps(result))
        shutil.rmtree(path, ignore_errors=True)
        tmp.replace(path)
    return path, json.loads((path / "oracle.json").read_text())


def plan(mtk, path, mode):
    return json.loads(mtk("memory", str(path), *MTK_ARGS, "--offload", mode, "--json").stdout)


def test_each_stage_runs_as_often_as_diffusers_calls_it(mtk, traced):
    path, oracle = traced
    got = {s["component"]: s["calls_per_image"] for s in plan(mtk, path, "model")["stages"] if s["method"] == "forward"}
    assert got == oracle["model"]["calls"]


def test_model_offload_residency_matches_accelerates_hook_chain(mtk, traced):
    path, oracle = traced
    want, sizes = oracle["model"], oracle["model"]["bytes"]
    got = plan(mtk, path, "model")
    resident = {name: on_gpu for name, on_gpu in want["resident"]}
    for stage in got["stages"]:
        on_gpu = resident[stage["component"]]
        assert sorted(stage["resident"].split(" + ")) == on_gpu, stage
        assert stage["weights_bytes"] == sum(sizes[n] for n in on_gpu), stage


def test_model_offload_moves_the_bytes_accelerate_moves(mtk, traced):
    path, oracle = traced
    mode = {m["mode"]: m for m in plan(mtk, path, "model")["offload_modes"]}["model"]
    assert mode["bytes_moved_per_image"] == oracle["model"]["moved_in"]
    assert mode["bytes_to_host_per_image"] == oracle["model"]["moved_out"]


def test_sequential_offload_moves_each_called_modules_parameters(mtk, traced):
    path, oracle = traced
    want = oracle["sequential"]
    got = plan(mtk, path, "sequential")
    mode = {m["mode"]: m for m in got["offload_modes"]}["sequential"]
    assert mode["bytes_moved_per_image"] == want["moved_in"]
    assert mode["bytes_to_host_per_image"] == 0  # accelerate sets the weights back on meta: no copy back
    for stage in got["stages"]:
        assert stage["sequential_moved_per_call"] * stage["calls_per_image"] == want["per_component"][stage["component"]], stage


def test_sequential_offload_gpu_weights_are_the_most_resident_at_once(mtk, traced):
    path, oracle = traced
    want = oracle["sequential"]
    for stage in plan(mtk, path, "sequential")["stages"]:
        assert stage["weights_bytes"] == want["buffers_on_exec"] + want["peak_params"][stage["component"]], stage
