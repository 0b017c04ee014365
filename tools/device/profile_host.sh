#!/usr/bin/env bash
# Where the host's time goes in the several-GPU runs: the multi_gpu.sh sets (astronomy and the
# batched MRI pipeline) on 1 and 2 GPUs, each once with summaries and once under `perf record`
# (cpu-clock sampling; Debian's perf carried in .pcarry/perf.tgz, as this host has none), with
# flat profiles by library, by symbol and by thread, and `perf stat` counts (page faults, context
# switches). Run: bash .xcarry/run.sh bash tools/device/profile_host.sh (carry .devdeps .mpicarry
# .xcarry .pcarry). DEVICES (default "0 0,1") and THREADS (default 32) for other machines.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
. tools/device/setup.sh || exit 1
imflow=$PWD/build-dev/imflow
. tools/device/multi_gpu_inputs.sh
tar xzf .pcarry/perf.tgz -C /tmp
perf() { LD_LIBRARY_PATH=/tmp/perfpkg/lib:$LD_LIBRARY_PATH /tmp/perfpkg/perf "$@"; }
(lscpu; grep -E "MemTotal|Hugepagesize" /proc/meminfo; nvidia-smi -L) > "$OUT/host.txt" 2>&1
$imflow -q run $MRI --input /tmp/mri_in --output /dev/shm/w --device cuda --devices 0 >/dev/null 2>&1; rm -rf /dev/shm/w
$imflow -q run config/astro.yaml --input /tmp/a2048 --output /dev/shm/w --device cuda --devices 0 >/dev/null 2>&1; rm -rf /dev/shm/w
run() {  # NAME PIPELINE INPUT DEVICES [PREFIX...]
  local name=$1 pipeline=$2 input=$3 devices=$4; shift 4
  rm -rf /dev/shm/o; sync
  "$@" $imflow -q run "$pipeline" --input "$input" --output /dev/shm/o --device cuda --devices "$devices" --threads "${THREADS:-32}" \
    --streams 8 --buffers-per-stream 4 --summary "/tmp/$name.json"
}
# The host's ceiling for the astronomy reads: page cache -> user memory, 1..THREADS threads.
python3 tools/device/read_ceiling.py /tmp/a2048 1 4 8 16 ${THREADS:-32} | tee "$OUT/read_ceiling.txt"
for set in astro mri; do
  pipeline=config/astro.yaml; input=/tmp/a2048
  if [ $set = mri ]; then pipeline=$MRI; input=/tmp/mri_in; fi
  for devices in ${DEVICES:-0 0,1}; do
    name=${set}_d${devices/,/_}
    run "$name" $pipeline $input $devices
    cp "/tmp/$name.json" "$OUT/$name.json"
    run "${name}_stat" $pipeline $input $devices perf stat -e task-clock,context-switches,cpu-migrations,page-faults,minor-faults -o "/tmp/${name}_perfstat.txt" --
    run "${name}_perf" $pipeline $input $devices perf record -e cpu-clock -F 1999 -o "/tmp/$name.data" --
    for sort in dso dso,sym comm; do  # one file per run: the tool brings back only so many
      echo "== sort by $sort"; perf report -i "/tmp/$name.data" --no-children --sort $sort --stdio 2>/dev/null | grep -E "^ +[0-9]" | head -80
    done > "$OUT/${name}_perf.txt"
    cat "/tmp/${name}_perfstat.txt" >> "$OUT/${name}_perf.txt"
  done
done
/usr/bin/python3 tools/device/summary_table.py "$OUT"
for f in "$OUT"/*_perf.txt; do echo "== $f"; head -14 "$f"; grep -E "task-clock|elapsed|page-faults" "$f"; done
