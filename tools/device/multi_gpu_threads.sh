#!/usr/bin/env bash
# Several GPUs, host threads: is the 2-GPU slowdown the host's cores? The MRI set of multi_gpu.sh
# (REPEAT x the carried slices) and the astronomy set (ASTRO_REPEAT copies), 1 and 2 GPUs with
# 16, 24 and 32 TBB threads on the 32-core host; outputs in /dev/shm. Summaries (no items) in $OUT.
# Run: bash .xcarry/run.sh bash tools/device/multi_gpu_threads.sh (carry .devdeps .mpicarry .xcarry)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
. tools/device/setup.sh || exit 1
imflow=$PWD/build-dev/imflow
. tools/device/multi_gpu_inputs.sh
$imflow -q run $MRI --input /tmp/mri_in --output /dev/shm/w --device cuda --devices 0,1 >/dev/null 2>&1; rm -rf /dev/shm/w  # warm-up
for t in 32 24 16; do
  for devices in 0,1 0; do
    rm -rf /dev/shm/m; sync; $imflow -q run $MRI --input /tmp/mri_in --output /dev/shm/m --device cuda --devices $devices \
      --threads $t --streams 8 --summary "$OUT/mri_d${devices/,/_}_t$t.json"
    rm -rf /dev/shm/o; sync; $imflow -q run config/astro.yaml --input /tmp/a2048 --output /dev/shm/o --device cuda \
      --devices $devices --threads $t --streams 8 --buffers-per-stream 4 --summary "$OUT/astro_d${devices/,/_}_t$t.json"
  done
done
/usr/bin/python3 tools/device/summary_table.py "$OUT"
