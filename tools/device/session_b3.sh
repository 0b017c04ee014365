#!/usr/bin/env bash
# One short device call: build, the GPU tiling tests, the peers side by side (tools/peers/device.sh).
set -uo pipefail
OUT=${OUT:-/tmp/out}
. tools/device/setup.sh || exit 1
timeout 60 build-dev/tests/gpu/imflow_gpu_tests "[tiling]" > /tmp/gpu_tiling.log 2>&1; echo "gpu tiling tests rc=$?"; tail -3 /tmp/gpu_tiling.log
PEERS_CARRY=.kcarry/peers PEERS_NO_DEPS=1 IMFLOW=build-dev/imflow IMAGES=32 \
  BENCH_ARGS="--sweep streams=4,8 --buffers-per-stream 4" OUT=/tmp/peers timeout 200 bash tools/peers/device.sh > /tmp/peers.log 2>&1
echo "peers rc=$?"; tail -30 /tmp/peers.log; cp /tmp/peers.log /tmp/gpu_tiling.log /tmp/peers/ 2>/dev/null; tar czf "$OUT/peers.tgz" -C /tmp peers
