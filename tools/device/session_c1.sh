#!/usr/bin/env bash
# One device call for issue 5 (session 4): build, every GPU test (the batched SVD with gesvda's
# Jacobi fallback, the pinned slab allocator), then tools/bench_svd.sh: the batched solvers alone,
# the end-to-end runs on 880 / 7,040 / 14,080 slices and the Python baselines in the same call.
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p /tmp/c1
. tools/device/setup.sh || exit 1
t0=$SECONDS
timeout ${GPU_TEST_TIMEOUT:-200} build-dev/tests/gpu/imflow_gpu_tests ${TESTS:-} > /tmp/c1/gpu_tests.log 2>&1
echo "gpu tests rc=$? $((SECONDS - t0)) s"; grep -E "real slices|failed|passed|FAILED" /tmp/c1/gpu_tests.log | tail -12
SKIP=tests timeout ${BENCH_TIMEOUT:-330} bash tools/bench_svd.sh build-dev /tmp/c1/svd datasets/data/mri/slices > /tmp/c1/svd_run.log 2>&1
echo "bench_svd rc=$?"; grep -E "slices/s|rc [0-9]|seconds|s \(" /tmp/c1/svd_run.log | head -60
tar czf "$OUT/c1.tgz" -C /tmp c1
