#!/usr/bin/env bash
# One device call for issues 4 and 5: tools/device/astro_issue4.sh (build, all GPU tests, 2048^2
# kernel timings, CPU vs GPU catalogs, streams x buffers sweep), then tools/bench_svd.sh (batched
# SVD bench and end-to-end MRI runs). Few files back: the SVD results travel as svd.tgz.
set -uo pipefail
OUT=${OUT:-/tmp/out}
SWEEP=${SWEEP:-"4x2 4x4 4x8 8x2"} CPU_SWEEP=0 GPU_TEST_TIMEOUT=${GPU_TEST_TIMEOUT:-240} OUT=$OUT bash tools/device/astro_issue4.sh
export LD_LIBRARY_PATH=/opt/deps/usr/lib/x86_64-linux-gnu:/opt/deps/usr/lib/x86_64-linux-gnu/openblas-pthread:${LD_LIBRARY_PATH:-}
ninja -C build-dev -j 16 imflow_svd_bench > /tmp/svd_build.log 2>&1 || tail -20 /tmp/svd_build.log
SKIP=${SVD_SKIP:-tests,baselines} timeout 240 bash tools/bench_svd.sh build-dev /tmp/svd datasets/data/mri/slices > /tmp/svd_run.log 2>&1
echo "bench_svd rc=$?"; grep -E "slices/s|rc [0-9]" /tmp/svd_run.log | head -40
cp /tmp/svd_run.log /tmp/svd/ 2>/dev/null; tar czf "$OUT/svd.tgz" -C /tmp svd
