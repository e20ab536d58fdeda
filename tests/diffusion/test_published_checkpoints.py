"""The DiT built-in pipelines against the checkpoints their Hub repos
publish: each component's state dict (parameters and persistent buffers,
as `mtk summary` counts them) at the dtype the checkpoint is stored in must
have the size the Hub's file listing shows for its safetensors shards,
within the listing's rounding (three significant digits, 1 GB = 10^9
bytes; a safetensors header adds well under 0.1 %).

Sources (the "Files and versions" listings, read with the search tool on
2026-11-27; FLUX.1-dev is gated, its diffusers files are mirrored
unchanged at camenduru/FLUX.1-dev-diffusers):
  huggingface.co/stabilityai/stable-diffusion-3.5-medium (mirrors
    frankjoshua/ and ckpt/stable-diffusion-3.5-medium, commit "SD3.5 Medium
    Public Release"): text_encoder 247 MB, text_encoder_2 1.39 GB,
    text_encoder_3 4.99 + 4.53 GB, transformer 4.94 GB, vae 168 MB (fp16)
  huggingface.co/camenduru/FLUX.1-dev-diffusers: text_encoder 246 MB,
    text_encoder_2 4.99 + 4.53 GB, transformer 9.98 + 9.95 + 3.87 GB,
    vae 168 MB (bf16)
  huggingface.co/Alpha-VLLM/Lumina-Image-2.0: text_encoder 4.99 + 4.98 +
    0.481 GB, transformer 9.96 + 0.482 GB, vae 335 MB (float32: the text
    encoder too, which is why its config's torch_dtype is float32)."""
import json

import pytest

GB, MB = 10 ** 9, 10 ** 6

# (pipeline, component): (bytes per stored element, published shard sizes)
PUBLISHED = {
    ("sd-3.5-medium", "text_encoder"): (2, [247 * MB]),
    ("sd-3.5-medium", "text_encoder_2"): (2, [1.39 * GB]),
    ("sd-3.5-medium", "text_encoder_3"): (2, [4.99 * GB, 4.53 * GB]),
    ("sd-3.5-medium", "transformer"): (2, [4.94 * GB]),
    ("sd-3.5-medium", "vae"): (2, [168 * MB]),
    ("flux.1-dev", "text_encoder"): (2, [246 * MB]),
    ("flux.1-dev", "text_encoder_2"): (2, [4.99 * GB, 4.53 * GB]),
    ("flux.1-dev", "transformer"): (2, [9.98 * GB, 9.95 * GB, 3.87 * GB]),
    ("flux.1-dev", "vae"): (2, [168 * MB]),
    ("lumina-image-2.0", "text_encoder"): (4, [4.99 * GB, 4.98 * GB, 481 * MB]),
    ("lumina-image-2.0", "transformer"): (4, [9.96 * GB, 482 * MB]),
    ("lumina-image-2.0", "vae"): (4, [335 * MB]),
}


def rounding(sizes):
    """Half a unit of the third significant digit of each listed size."""
    total = 0.0
    for s in sizes:
        unit = 10 ** (len(str(int(s))) - 3)
        total += unit / 2
    return total


@pytest.fixture(scope="module")
def components(mtk):
    out = {}
    for pipeline in {p for p, _ in PUBLISHED}:
        doc = json.loads(mtk("summary", pipeline, "--image", "1024x1024", "--json").stdout)
        for c in doc["components"]:
            out[(pipeline, c["name"])] = c
    return out


@pytest.mark.parametrize("key", sorted(PUBLISHED), ids=lambda k: "%s-%s" % k)
def test_state_dict_has_the_published_checkpoint_size(key, components):
    element, shards = PUBLISHED[key]
    c = components[key]
    size = {"float32": 4, "float16": 2, "bfloat16": 2}[c["dtype"]]
    # the buffers: SD3's pos_embed table (persistent); CLIP's position_ids (616 bytes, not saved) is noise here
    stored = (c["params"] + c["buffer_bytes"] // size) * element
    published = sum(shards)
    assert abs(stored - published) <= rounding(shards) + published * 0.001, (c["dtype"], stored, published)


def test_lumina_text_encoder_is_float32_as_published(components):
    assert components[("lumina-image-2.0", "text_encoder")]["dtype"] == "float32"
