#!/usr/bin/env bash
# Rebuild wheels/llama_cpp_python-<version>-py3-none-linux_x86_64.whl, the llama.cpp that `make install`
# installs for tests/test_llamacpp.py (README, "llama.cpp"): llama-cpp-python's sdist compiled for a
# portable x86-64-v3 (AVX2, FMA, F16C, BMI2; not -march=native), no multimodal library (LLAVA_BUILD=OFF),
# then slimmed: the binding loads only libllama.so and libggml.so from llama_cpp/lib, which need the ggml
# libraries under their SONAMEs; the duplicate copies, headers and llama.cpp's `common` library go.
# Measured on the project's shared 2-core machine (nice -n 19, load 8-18): 28 min; the wheel is 2.5 MB.
set -euo pipefail
cd "$(dirname "$0")/../.."
VERSION="${1:-0.3.36}"
PY="${PYTHON:-.venv/bin/python}"
export CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_SSE42=ON -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON -DLLAVA_BUILD=OFF"
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
start=$(date +%s)
nice -n 19 "$PY" -m pip wheel "llama-cpp-python==${VERSION}" --no-deps --no-binary llama-cpp-python -w "$work/full"
"$PY" -m wheel unpack "$work"/full/llama_cpp_python-*.whl -d "$work/tree"
tree=$(echo "$work"/tree/llama_cpp_python-*)
rm -rf "$tree/lib" "$tree/include" "$tree/bin"
(cd "$tree/llama_cpp/lib" && find . -maxdepth 1 -type f ! -name libllama.so ! -name libggml.so ! -name 'libggml*.so.0' -delete)
mkdir -p wheels
rm -f wheels/llama_cpp_python-*.whl
"$PY" -m wheel pack "$tree" -d wheels
echo "built in $(( $(date +%s) - start )) s:"
ls -l wheels/llama_cpp_python-*.whl
