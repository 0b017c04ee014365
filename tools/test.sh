#!/usr/bin/env bash
# Install what is missing, build (Release, with the Python module), run every test with ctest. GPU
# tests skip, with the reason printed, on a machine without a CUDA device.
# tools/test.sh --sanitize [ctest args...]: instead, every test that needs no GPU under ASan, UBSan
# and LeakSanitizer in build-asan/ (tools/sanitize.sh); CI runs it after the normal suite.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
if [ "${1:-}" = "--sanitize" ]; then shift; exec tools/sanitize.sh "$@"; fi
tools/install-python-deps.sh  # the Python package's module and tests (ctest's `python`)
# Unity build: each target's sources compiled in batches of 8, which spares the headers' parsing
# and template instantiation they share (a clean build takes about a third less CPU time).
tools/build.sh -DCMAKE_UNITY_BUILD=ON -DIMFLOW_PYTHON=ON -DPython_EXECUTABLE="$(command -v python3)" "$@"
cd "${BUILD_DIR:-build}"
ctest --output-on-failure -j "$(nproc)" --timeout 900
# ctest hides a skipped test's output: say why the GPU tests were skipped.
if [ -x tests/gpu/imflow_gpu_tests ]; then tests/gpu/imflow_gpu_tests 2>&1 | grep -m1 SKIPPED || true; fi
