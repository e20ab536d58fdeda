"""The pipelines of the built-in DiTs as the Hub lays them out
(tests/diffusion/pipelines/<name>/: model_index.json and one config.json
per component folder, the published ones): every component builds in mtk
as the class model_index.json names, with the parameters diffusers or
transformers count for it on meta, and the transformer (and Lumina's text
encoder) is the built-in of that name."""
import json
from pathlib import Path

import pytest

from test_dit import _oracle_key, build_dir, builtins, probe  # noqa: F401 (fixtures)

HERE = Path(__file__).resolve().parent
PIPELINES = HERE / "pipelines"
CACHE_FILE = "dit_pipeline_oracle_cache.json"
BUILTIN_OF = {("sd-3.5-medium", "transformer"): "sd-3.5-medium-transformer",
              ("flux.1-dev", "transformer"): "flux.1-dev-transformer",
              ("lumina-image-2.0", "transformer"): "lumina-image-2.0-transformer",
              ("lumina-image-2.0", "text_encoder"): "lumina-image-2.0-text-encoder"}


def components():
    out = []
    for index in sorted(PIPELINES.glob("*/model_index.json")):
        for name, entry in sorted(json.loads(index.read_text()).items()):
            if name.startswith("_") or entry[0] is None or not (index.parent / name / "config.json").exists():
                continue
            out.append(pytest.param(index.parent.name, name, entry[0], entry[1], id=f"{index.parent.name}-{name}"))
    return out


@pytest.fixture(scope="module")
def counts():
    path = build_dir() / CACHE_FILE
    cache = json.loads(path.read_text()) if path.exists() else {}

    def get(library, cls, cfg):
        key = _oracle_key("count", [library, cls, cfg])
        if key not in cache:
            import dit_oracle
            cache[key] = dit_oracle.count(library, cls, cfg)
            path.write_text(json.dumps(cache, indent=0, sort_keys=True))
        return cache[key]

    return get


def test_every_pipeline_has_its_components():
    names = {p.name for p in PIPELINES.iterdir() if (p / "model_index.json").exists()}
    assert names == {"sd-3.5-medium", "flux.1-dev", "lumina-image-2.0"}
    for name in names:
        index = json.loads((PIPELINES / name / "model_index.json").read_text())
        for component in ("transformer", "vae", "text_encoder"):
            assert (PIPELINES / name / component / "config.json").exists(), (name, component)
            assert index[component][0] in ("diffusers", "transformers")


@pytest.mark.parametrize("pipeline,component,library,cls", components())
def test_component_builds_as_its_library_counts_it(pipeline, component, library, cls, probe, counts):
    path = PIPELINES / pipeline / component / "config.json"
    (got,) = probe([(str(path), None)])
    assert "error" not in got, got["error"]
    assert got["type"] == cls
    assert got["num_params"] == counts(library, cls, json.loads(path.read_text()))


@pytest.mark.parametrize("pipeline,component", sorted(BUILTIN_OF))
def test_the_builtin_is_the_pipelines_component(pipeline, component, builtins):
    path = PIPELINES / pipeline / component / "config.json"
    assert json.loads(path.read_text()) == builtins[BUILTIN_OF[(pipeline, component)]]


def summary(*args):
    import subprocess
    result = subprocess.run([str(build_dir() / "mtk"), "summary", *args, "--json"], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.parametrize("pipeline", ["sd-3.5-medium", "flux.1-dev", "lumina-image-2.0"])
def test_builtin_pipeline_is_its_hub_directory(pipeline):
    """The built-in's embedded configs are the directory's files: the same
    components, parameters and FLOPs per image."""
    builtin = summary(pipeline, "--image", "1024x1024", "--guidance")
    directory = summary(str(PIPELINES / pipeline), "--image", "1024x1024", "--guidance")
    keep = ("name", "class", "role", "dtype", "params", "flops_per_image")
    assert [{k: c[k] for k in keep} for c in builtin["components"]] == \
        [{k: c[k] for k in keep} for c in directory["components"]]
    index = json.loads((PIPELINES / pipeline / "model_index.json").read_text())
    assert {c["name"]: c["class"] for c in builtin["components"]} == \
        {name: index[name][1] for name in (c["name"] for c in builtin["components"])}


@pytest.mark.parametrize("pipeline,latents", [("sd-3.5-medium", [2, 16, 128, 128]), ("flux.1-dev", [1, 4096, 64]),
                                              ("lumina-image-2.0", [1, 16, 128, 128])])
def test_the_denoiser_predicts_its_latents_at_1024(pipeline, latents):
    (denoiser,) = [c for c in summary(pipeline, "--image", "1024x1024", "--guidance")["components"]
                   if c["role"] == "denoiser"]
    (call,) = denoiser["calls"]
    assert call["per_image"] == 50 * (1 if pipeline == "sd-3.5-medium" else 2)  # a batch of 2B, or a second call
    assert list(call["inputs"].values())[0]["shape"] == latents
    assert call["outputs"][0]["shape"] == latents

