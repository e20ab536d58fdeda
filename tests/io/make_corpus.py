#!/usr/bin/env python3
"""Writes the malformed-file corpus of tests/io/corpus (committed; rerun
this script after changing it):

    python3 tests/io/make_corpus.py

bad_*.safetensors break one rule of the format each; good_*.safetensors are
valid (the first ones written by Python's safetensors).  expected.json maps
each bad file to a phrase of the error mtk must give.  The same files seed
the fuzzer (make fuzz).  Every file is small: the "header too large" and
"length past the end" cases only *claim* big sizes.
"""
import json
import struct
from pathlib import Path

CORPUS = Path(__file__).resolve().parent / "corpus"


def image(header, data=b"", length=None):
    """8-byte little-endian length, header (str or bytes), data."""
    raw = header.encode() if isinstance(header, str) else header
    return struct.pack("<Q", len(raw) if length is None else length) + raw + data


def entry(dtype, shape, begin, end):
    return {"dtype": dtype, "shape": shape, "data_offsets": [begin, end]}


def one(name="w", dtype="F32", shape=(2,), begin=0, end=8):
    return json.dumps({name: entry(dtype, list(shape), begin, end)}, separators=(",", ":"))


VALID = one()  # {"w": F32 [2] at [0, 8]}

# name -> (file bytes, phrase of the expected error)
BAD = {
    "empty": (b"", "the file is empty"),
    "short_length": (b"\x08\x00\x00", "too short for the 8-byte header length"),
    "truncated_header": (image(VALID, b"\0" * 8)[:30], "runs past the end of the file"),
    "truncated_data": (image(VALID, b"\0" * 8)[:-3], "run past the end of the data (5 bytes)"),
    "length_past_end": (image("{}", length=1 << 20), "the header length 1048576 runs past the end of the file"),
    "header_too_large": (image("{}", length=100_000_001), "larger than the format's limit of 100000000 bytes"),
    "length_max": (image("{}", length=(1 << 64) - 1), "the header length 18446744073709551615 is larger"),
    "not_json": (image("{this is not json}"), "the header is not valid JSON"),
    "not_json_truncated": (image('{"w":{"dtype":"F32"'), "the header is not valid JSON"),
    "not_object_array": (image("[1,2,3]"), "the header is not a JSON object (it starts with '[')"),
    "not_object_string": (image('"hello"'), "the header is not a JSON object"),
    "empty_header": (image(""), "the header is empty"),
    "deep_nesting": (image('{"a":' + "[" * 5000 + "]" * 5000 + "}"), "nests deeper than 16 levels"),
    "deep_nesting_unclosed": (image("{" + '"a":{' * 3000), "nests deeper than 16 levels"),
    "overlap": (image(json.dumps({"a": entry("F32", [2], 0, 8), "b": entry("F32", [2], 4, 12)}), b"\0" * 12),
                "tensor 'b': data_offsets [4, 12] overlap tensor 'a' [0, 8]"),
    "gap": (image(json.dumps({"a": entry("F32", [1], 0, 4), "b": entry("F32", [1], 8, 12)}), b"\0" * 12),
            "tensor 'b': data_offsets [8, 12] leave a hole: bytes [4, 8) belong to no tensor"),
    "gap_at_start": (image(one(begin=4, end=12), b"\0" * 12), "leave a hole: bytes [0, 4)"),
    "offsets_past_end": (image(one(shape=(4,), end=16), b"\0" * 8), "run past the end of the data (8 bytes)"),
    "offsets_huge": (image(one(begin=1 << 40, end=(1 << 40) + 8), b"\0" * 8), "run past the end of the data"),
    "offsets_reversed": (image(one(shape=(0,), begin=8, end=4), b"\0" * 8), "are reversed (end before begin)"),
    "offsets_negative": (image(one(begin=-8, end=0), b"\0" * 8), "data_offsets[0] is negative"),
    "offsets_three": (image('{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,4,8]}}', b"\0" * 8),
                      "data_offsets must be [begin, end]"),
    "offsets_missing": (image('{"w":{"dtype":"F32","shape":[2]}}', b"\0" * 8), "tensor 'w': no \"data_offsets\""),
    "size_mismatch": (image(one(shape=(3,), end=8), b"\0" * 8), "shape [3] of F32 is 12 bytes but data_offsets [0, 8] hold 8"),
    "shape_overflow": (image(one(shape=(1 << 32, 1 << 32), end=8), b"\0" * 8),
                       "shape [4294967296, 4294967296] of F32 overflows"),
    "shape_overflow_bytes": (image(one(dtype="F64", shape=(1 << 31, 1 << 31, 4), end=8), b"\0" * 8), "overflows"),
    "negative_dim": (image(one(shape=(2, -1), end=8), b"\0" * 8), "shape[1] is negative (-1)"),
    "fractional_dim": (image('{"w":{"dtype":"F32","shape":[2.5],"data_offsets":[0,8]}}', b"\0" * 8),
                       "shape[0] is 2.5, not an integer"),
    "huge_dim": (image('{"w":{"dtype":"F32","shape":[1e30],"data_offsets":[0,8]}}', b"\0" * 8), "shape[0] is too large"),
    "string_dim": (image('{"w":{"dtype":"F32","shape":["2"],"data_offsets":[0,8]}}', b"\0" * 8),
                   "shape[0] is a string, not a non-negative integer"),
    "too_many_dims": (image(one(shape=(1,) * 17, end=4), b"\0" * 4), "shape has 17 dimensions"),
    "shape_not_array": (image('{"w":{"dtype":"F32","shape":2,"data_offsets":[0,8]}}', b"\0" * 8), "shape is a number"),
    "unknown_dtype": (image(one(dtype="F128"), b"\0" * 8), "tensor 'w': unknown dtype 'F128'"),
    "lowercase_dtype": (image(one(dtype="f32"), b"\0" * 8), "unknown dtype 'f32'"),
    "dtype_not_string": (image('{"w":{"dtype":4,"shape":[2],"data_offsets":[0,8]}}', b"\0" * 8),
                         "dtype is a number, not a string"),
    "missing_dtype": (image('{"w":{"shape":[2],"data_offsets":[0,8]}}', b"\0" * 8), "tensor 'w': no \"dtype\""),
    "duplicate_field": (image('{"w":{"dtype":"F32","dtype":"F32","shape":[2],"data_offsets":[0,8]}}', b"\0" * 8),
                        "\"dtype\" appears twice"),
    "entry_not_object": (image('{"w":[0,8]}', b"\0" * 8), "tensor 'w': its entry is an array, not an object"),
    "metadata_number": (image('{"__metadata__":{"format":"pt","step":3}}'), "__metadata__ value of 'step' is a number"),
    "metadata_nested": (image('{"__metadata__":{"a":{"b":"c"}}}'), "__metadata__ value of 'a' is an object"),
    "metadata_not_object": (image('{"__metadata__":"pt"}'), "__metadata__ is a string"),
    "metadata_duplicate_key": (image('{"__metadata__":{"k":"1","k":"2"}}'), "__metadata__ has the key 'k' twice"),
    "metadata_twice": (image('{"__metadata__":{},"__metadata__":{}}'), "__metadata__ appears twice"),
    "duplicate_names": (image('{"w":' + json.dumps(entry("F32", [1], 0, 4)) + ',"w":' + json.dumps(entry("F32", [1], 4, 8)) + "}",
                              b"\0" * 8), "tensor 'w' appears twice in the header"),
    "trailing_bytes": (image(VALID, b"\0" * 12), "4 trailing bytes after the last tensor"),
    "trailing_bytes_no_tensors": (image("{}", b"junk"), "4 trailing bytes after the last tensor"),
    "header_trailing_garbage": (image(VALID + " x", b"\0" * 8), "the header has bytes after its JSON object"),
    "header_nul_padding": (image(VALID + "\0\0\0", b"\0" * 8), "the header has bytes after its JSON object"),
    "invalid_utf8": (image(b'{"w\xff":' + json.dumps(entry("F32", [2], 0, 8)).encode() + b"}", b"\0" * 8),
                     "the header is not valid UTF-8 (byte 0xff"),
    "invalid_utf8_overlong": (image(b'{"w\xc0\xaf":' + json.dumps(entry("F32", [2], 0, 8)).encode() + b"}", b"\0" * 8),
                              "not valid UTF-8 (byte 0xc0"),
    "invalid_utf8_surrogate": (image(b'{"w\xed\xa0\x80":' + json.dumps(entry("F32", [2], 0, 8)).encode() + b"}",
                                     b"\0" * 8), "not valid UTF-8 (byte 0xed"),
    "invalid_utf8_truncated": (image(b'{"w":' + json.dumps(entry("F32", [2], 0, 8)).encode() + b"}\xe2\x82", b"\0" * 8),
                               "not valid UTF-8"),
    "lone_surrogate_escape": (image('{"w\\ud800":' + json.dumps(entry("F32", [2], 0, 8)) + "}", b"\0" * 8),
                              "the header is not valid JSON"),
    "nul_in_name": (image('{"w\\u0000x":' + json.dumps(entry("F32", [2], 0, 8)) + "}", b"\0" * 8), "NUL character"),
    "control_char_in_name": (image('{"w\x07":' + json.dumps(entry("F32", [2], 0, 8)) + "}", b"\0" * 8),
                             "raw control character 0x07"),
}


def good_files():
    """Valid files: every dtype from Python's safetensors, and edge cases."""
    import torch
    from safetensors.torch import save

    dtypes = [torch.bool, torch.uint8, torch.int8, torch.float8_e5m2, torch.float8_e4m3fn, torch.int16,
              torch.uint16, torch.float16, torch.bfloat16, torch.int32, torch.uint32, torch.float32,
              torch.float64, torch.int64, torch.uint64]
    tensors = {}
    for i, dtype in enumerate(dtypes):
        name = str(dtype).removeprefix("torch.")
        tensors[name] = torch.arange(6, dtype=torch.float64).reshape(2, 3).add(i).to(dtype)
    tensors["scalar"] = torch.tensor(2.5)
    tensors["empty"] = torch.zeros(0, 4, dtype=torch.float16)
    return {
        "all_dtypes": save(tensors, metadata={"format": "pt"}),
        "no_tensors": save({}),
        "metadata_only": save({}, metadata={"format": "pt", "note": "caf\u00e9 \"quoted\"\n"}),
        "unicode_names": save({"\u00e9t\u00e9.poids": torch.ones(1), "\U0001F600": torch.zeros(2)}),
        "extra_fields_and_whitespace": image(' {"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":[1]}}\t \n',
                                             b"\0" * 8),
    }


def main():
    CORPUS.mkdir(exist_ok=True)
    for old in CORPUS.glob("*.safetensors"):
        old.unlink()
    expected = {}
    for name, (data, phrase) in BAD.items():
        (CORPUS / f"bad_{name}.safetensors").write_bytes(data)
        expected[f"bad_{name}.safetensors"] = phrase
    for name, data in good_files().items():
        (CORPUS / f"good_{name}.safetensors").write_bytes(data)
    (CORPUS / "expected.json").write_text(json.dumps(expected, indent=1, sort_keys=True) + "\n")
    total = sum(p.stat().st_size for p in CORPUS.iterdir())
    print(f"wrote {len(BAD)} bad and {len(good_files())} good files ({total} bytes) to {CORPUS}")


if __name__ == "__main__":
    main()
