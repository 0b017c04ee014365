#!/usr/bin/env bash
# ASan + UBSan build of the CPU code and its tests (build-asan/), then ctest; not run in CI by default.
# Usage: tools/sanitize.sh [ctest args...]   (e.g. -R unit)
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-asan -DIMFLOW_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo -DIMFLOW_SANITIZE=address,undefined
cmake --build build-asan -j"$(nproc)"
# detect_leaks=0: TBB's and CFITSIO's process-lifetime allocations are reported as leaks.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1} UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
ctest --test-dir build-asan --output-on-failure "$@"
