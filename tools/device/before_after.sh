#!/usr/bin/env bash
# Host-side changes measured on one machine instance: the committed tree (build-dev) against an
# older commit carried as .xcarry/old.tgz (built into /tmp/old/build-dev, imflow only), on the
# multi_gpu.sh sets (astronomy from page cache, batched MRI), REPEATS alternating runs each on
# DEVICES with THREADS threads, outputs in /dev/shm; each process timed whole (the run's wall
# is in its summary). Also the page-cache read ceiling (read_ceiling.py). Summaries (no items)
# and a table under $OUT. Run: bash .xcarry/run.sh bash tools/device/before_after.sh
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
. tools/device/setup.sh || exit 1
. tools/device/multi_gpu_inputs.sh
rm -rf /tmp/old && mkdir -p /tmp/old && tar xzf "${OLD_TGZ:-.xcarry/old.tgz}" -C /tmp/old && cp -r .devdeps /tmp/old/
(cd /tmp/old && TARGETS=imflow_cli SETUP_LOGS=/tmp . tools/device/setup.sh) || exit 1
python3 tools/device/read_ceiling.py /tmp/a2048 1 4 8 ${THREADS:-16} | tee "$OUT/read_ceiling.txt"
DEVICES=${DEVICES:-0}; THREADS=${THREADS:-16}
for build in new old; do  # warm-up
  imflow=$PWD/build-dev/imflow; [ $build = old ] && imflow=/tmp/old/build-dev/imflow
  $imflow -q run config/astro.yaml --input /tmp/a2048 --output /dev/shm/w --device cuda --devices $DEVICES >/dev/null 2>&1; rm -rf /dev/shm/w
done
for r in $(seq 1 "${REPEATS:-3}"); do
  for build in old new; do
    imflow=$PWD/build-dev/imflow; [ $build = old ] && imflow=/tmp/old/build-dev/imflow
    for set in astro mri; do
      pipeline=config/astro.yaml; input=/tmp/a2048
      if [ $set = mri ]; then pipeline=$MRI; input=/tmp/mri_in; fi
      rm -rf /dev/shm/o; sync
      start=$EPOCHREALTIME
      $imflow -q run $pipeline --input $input --output /dev/shm/o --device cuda --devices $DEVICES --threads $THREADS \
        --streams 8 --buffers-per-stream 4 --summary "$OUT/${set}_${build}_r$r.json"
      echo "${set}_${build}_r$r process seconds $(awk "BEGIN{print $EPOCHREALTIME - $start}")" | tee -a "$OUT/process_seconds.txt"
    done
  done
done
/usr/bin/python3 tools/device/summary_table.py "$OUT" | tee "$OUT/table.txt"
