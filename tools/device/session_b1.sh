#!/usr/bin/env bash
# One device call for issues 7 and 5: build everything (tools/device/setup.sh), the GPU tests under
# compute-sanitizer (tools/device/sanitize.sh, shortened limits), then the end-to-end MRI runs of
# tools/bench_svd.sh (880 slices, and 8x / 16x the slices for the steady state). Few files back.
set -uo pipefail
OUT=${OUT:-/tmp/out}
. tools/device/setup.sh || exit 1
RACE_LIMIT=${RACE_LIMIT:-240} MEM_LIMIT=${MEM_LIMIT:-110} SYNC_LIMIT=50 INIT_LIMIT=70 bash tools/device/sanitize.sh build-dev /tmp/san
echo "sanitize rc=$?"; cat /tmp/san/summary.json | head -60
tar czf "$OUT/sanitize.tgz" -C /tmp san
SKIP=tests,bench,baselines timeout 150 bash tools/bench_svd.sh build-dev /tmp/svd datasets/data/mri/slices > /tmp/svd_run.log 2>&1
echo "bench_svd rc=$?"; grep -E "slices/s|rc [0-9]" /tmp/svd_run.log | head -40
cp /tmp/svd_run.log /tmp/svd/ 2>/dev/null; tar czf "$OUT/svd_e2e.tgz" -C /tmp svd
