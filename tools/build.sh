#!/usr/bin/env bash
# Configure and build imflow (Release) into BUILD_DIR (default build/). Extra arguments go to cmake.
# CUDA is built when nvcc is found (IMFLOW_CUDA=AUTO); pass -DIMFLOW_CUDA=OFF to skip it.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
if [ ! -f "$build_dir/CMakeCache.txt" ]; then
  cmake -S . -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release "$@"
elif [ $# -gt 0 ]; then
  cmake -S . -B "$build_dir" "$@"
fi
cmake --build "$build_dir" -j "$(nproc)"
