#!/usr/bin/env bash
# Third device call (session 4): build, every GPU test (after the GPU-stage refactor and the CPU
# mesh/label speed-ups that the GPU tests compare against), then the peers side by side on
# 4096x4096 fields (tools/peers/device.sh: SEP, SExtractor, imflow GPU and imflow on one CPU thread).
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p /tmp/c3
SETUP_LOGS=/tmp/c3 . tools/device/setup.sh || exit 1
t0=$SECONDS
timeout ${GPU_TEST_TIMEOUT:-150} build-dev/tests/gpu/imflow_gpu_tests > /tmp/c3/gpu_tests.log 2>&1
echo "gpu tests rc=$? $((SECONDS - t0)) s"; grep -a -E "real slices|test cases|assertions|FAILED" /tmp/c3/gpu_tests.log | tail -12
PEERS_CARRY=.kcarry/peers PEERS_NO_DEPS=1 IMFLOW=build-dev/imflow IMAGES=${IMAGES:-48} \
  BENCH_ARGS="${BENCH_ARGS:---sweep streams=4,8}" OUT=/tmp/c3/peers timeout ${PEERS_TIMEOUT:-300} bash tools/peers/device.sh > /tmp/c3/peers.log 2>&1
echo "peers rc=$?"; tail -40 /tmp/c3/peers.log
tar czf "$OUT/c3.tgz" -C /tmp c3
