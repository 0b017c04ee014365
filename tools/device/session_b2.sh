#!/usr/bin/env bash
# One device call for issues 4, 10 and 11: build everything, all GPU tests, the peers side by side
# (tools/peers/device.sh: SEP vs imflow on 4096^2 fields) and the mosaic bench
# (tools/device/mosaic_bench.sh). Each part's outputs travel as one .tgz.
set -uo pipefail
OUT=${OUT:-/tmp/out}
. tools/device/setup.sh || exit 1
timeout 150 build-dev/tests/gpu/imflow_gpu_tests > /tmp/gpu_tests.log 2>&1; echo "gpu tests rc=$?"
grep -a -E "seed|worst|test cases|All tests" /tmp/gpu_tests.log | tail -12; gzip -c /tmp/gpu_tests.log > "$OUT/gpu_tests.log.gz"
PEERS_CARRY=.kcarry/peers PEERS_NO_DEPS=1 IMFLOW=build-dev/imflow IMAGES=32 \
  BENCH_ARGS="--sweep streams=4,8 --buffers-per-stream 4" OUT=/tmp/peers timeout 150 bash tools/peers/device.sh > /tmp/peers.log 2>&1
echo "peers rc=$?"; tail -25 /tmp/peers.log; cp /tmp/peers.log /tmp/peers/ 2>/dev/null; tar czf "$OUT/peers.tgz" -C /tmp peers
OUT=/tmp/mosaic timeout 230 bash tools/device/mosaic_bench.sh > /tmp/mosaic.log 2>&1
echo "mosaic rc=$?"; tail -30 /tmp/mosaic.log; cp /tmp/mosaic.log /tmp/mosaic/ 2>/dev/null; tar czf "$OUT/mosaic.tgz" -C /tmp mosaic
