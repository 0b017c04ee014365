#!/usr/bin/env bash
# Final device check (session 4): build everything and run every GPU test, the compute-sanitizer
# memcheck/initcheck set and the CLI memcheck, with the MRI slices carried (the real-slice tests).
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p /tmp/c7
SETUP_LOGS=/tmp/c7 . tools/device/setup.sh || exit 1
timeout 200 build-dev/tests/gpu/imflow_gpu_tests > /tmp/c7/gpu_tests.log 2>&1
echo "gpu tests rc=$?"; grep -a -E "real slices|real images|test cases|assertions|FAILED" /tmp/c7/gpu_tests.log | tail -10
SKIP_RACECHECK=1 MEM_LIMIT=100 SYNC_LIMIT=40 INIT_LIMIT=80 bash tools/device/sanitize.sh build-dev /tmp/c7/san > /tmp/c7/san.log 2>&1
echo "sanitize rc=$?"; grep -E "clean=" /tmp/c7/san.log
tar czf "$OUT/c7.tgz" -C /tmp c7
