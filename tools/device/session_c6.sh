#!/usr/bin/env bash
# Device call (session 4): the GPU tests after the pinned allocator's huge-page path, then
# session_c5.sh again (SEP vs imflow GPU in steady state on 480 x 4096^2).
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p /tmp/c6
SETUP_LOGS=/tmp/c6 . tools/device/setup.sh || exit 1
timeout 150 build-dev/tests/gpu/imflow_gpu_tests > /tmp/c6/gpu_tests.log 2>&1
echo "gpu tests rc=$?"; grep -a -E "test cases|assertions|FAILED" /tmp/c6/gpu_tests.log | tail -6
cp /tmp/c6/gpu_tests.log "$OUT/"
bash tools/device/session_c5.sh
