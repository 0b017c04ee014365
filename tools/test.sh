#!/usr/bin/env bash
# Install what is missing, build (Release), run every test with ctest. GPU tests skip, with the
# reason printed, on a machine without a CUDA device.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
tools/build.sh "$@"
cd "${BUILD_DIR:-build}"
ctest --output-on-failure -j "$(nproc)" --timeout 900
