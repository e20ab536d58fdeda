#!/usr/bin/env bash
# `make run`: a short tour of mtk on the meta device — the examples of
# PyTorch's meta-tensor guide, answered without allocating any data.
set -euo pipefail
mtk=${1:-build/mtk}

show() {
    printf '\n$ mtk eval "%s"\n' "$1"
    "$mtk" eval "$1" || true
}

echo "mtk $("$mtk" --version 2>/dev/null | awk '{print $NF}') — tensors without their data"
echo
echo "A meta tensor has a shape, a dtype and strides, and no storage:"
show 'zeros(3, 4)'
show 'ones(2, 3, dtype=f16)'
echo
echo "Ops compute shapes, dtypes and strides exactly as PyTorch does:"
show 'matmul(f32[3,4], f32[4,5])'
show 'add(f32[8,1,6], i64[7,1])'
printf '\n$ mtk eval --json %q\n' 'transpose(f32[2,3,4], 0, 2)'
"$mtk" eval --json 'transpose(f32[2,3,4], 0, 2)'
echo
echo "A small network's output shape (Linear 10->20, ReLU, Linear 20->5, batch 32):"
show 'linear(relu(linear(f32[32,10], f32[20,10], f32[20])), f32[5,20], f32[5])'
echo
echo "Data-dependent calls fail early, in PyTorch's words, with the fix:"
show "to(f32[3,4], 'cpu')"
show 'item(f32[])'
show 'nonzero(f32[3])'
echo
echo "The same expression on real cpu tensors:"
printf '\n$ mtk eval --device cpu %q\n' 'add(reshape(arange(6.), [2, 3]), 1)'
"$mtk" eval --device cpu 'add(reshape(arange(6.), [2, 3]), 1)' || true
