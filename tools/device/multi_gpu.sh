#!/usr/bin/env bash
# Several GPUs (a machine with 2 GPUs): throughput with --devices 0 against --devices 0,1 in one
# process, and `mpirun -n 2` (one GPU per rank, OpenMPI from the carried Debian packages in
# .mpicarry), on a GPU-bound astronomy set (512 2048x2048 float32 images made from the ISAAC frame,
# read from page cache) and on the MRI pipeline. Summaries under $OUT. Outputs go to $SCRATCH
# (default /dev/shm: RAM, so that the disk's write-back of earlier runs' outputs does not slow
# later runs), `sync` runs before each run, and the 1- and 2-GPU runs alternate.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
mkdir -p /opt/deps; for deb in .mpicarry/*.deb; do dpkg -x "$deb" /opt/deps; done 2>/dev/null
export OPAL_PREFIX=/opt/deps/usr PATH=/opt/deps/usr/bin:$PATH
export LD_LIBRARY_PATH=/opt/deps/usr/lib/x86_64-linux-gnu/openmpi/lib:/opt/deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
. tools/device/setup.sh || exit 1
grep -E "MPI|IMFLOW_HAVE" build-dev/CMakeCache.txt | grep -E "IMFLOW_MPI|MPI_C_FOUND|MPI_C_COMPILER:" | tee "$OUT/mpi_cmake.txt"
nvidia-smi -L | tee "$OUT/gpus.txt"
ASTRO_REPEAT=${ASTRO_REPEAT:-1}; BPS=${BPS:-2}; REPEAT=${REPEAT:-16}
. tools/device/multi_gpu_inputs.sh
imflow=$PWD/build-dev/imflow
$imflow -q run config/astro.yaml --input /tmp/a2048 --output /tmp/o --device cuda --devices 0,1 >/dev/null 2>&1  # warm-up
S=${SCRATCH:-/dev/shm}
for r in 1 2; do
  for devices in 0,1 0; do
    rm -rf $S/o; sync; $imflow -q run config/astro.yaml --input /tmp/a2048 --output $S/o --device cuda --devices $devices \
      --threads 32 --streams 8 --buffers-per-stream $BPS --summary "$OUT/astro_devices_${devices/,/_}_r$r.json"
    rm -rf $S/m; sync; $imflow -q run $MRI --input /tmp/mri_in --output $S/m --device cuda \
      --devices $devices --threads 32 --streams 8 --buffers-per-stream $BPS --summary "$OUT/mri_devices_${devices/,/_}_r$r.json"
  done
done
# MPI: 2 ranks, each its local GPU and 16 threads; rank 0 writes the merged summary.
MPIRUN="mpirun -n 2 --oversubscribe --allow-run-as-root --bind-to none"
for r in 1 2; do
  rm -rf $S/o; sync; $MPIRUN $imflow -q run config/astro.yaml --input /tmp/a2048 --output $S/o --device cuda --threads 16 \
    --streams 8 --buffers-per-stream $BPS --summary "$OUT/astro_mpirun2_r$r.json" > "$OUT/mpirun_astro_r$r.log" 2>&1; echo "mpirun astro rc=$?"
  rm -rf $S/m; sync; $MPIRUN $imflow -q run $MRI --input /tmp/mri_in --output $S/m --device cuda --threads 16 \
    --streams 8 --buffers-per-stream $BPS --summary "$OUT/mri_mpirun2_r$r.json" > "$OUT/mpirun_mri_r$r.log" 2>&1; echo "mpirun mri rc=$?"
done
tail -3 "$OUT/mpirun_astro_r1.log"
/usr/bin/python3 - "$OUT" <<'PY'
import json, glob, sys
for f in glob.glob(sys.argv[1] + "/*.json"):
    s = json.load(open(f)); s.pop("items", None); json.dump(s, open(f, "w"), indent=1)
PY
/usr/bin/python3 - "$OUT" <<'PY'
import json, sys, glob
for f in sorted(glob.glob(sys.argv[1] + "/*_devices_*.json") + glob.glob(sys.argv[1] + "/*_mpirun2_*.json")):
    s = json.load(open(f)); t = s["totals"]
    per = [(d["device"], d["items"], round(d["kernel_busy_seconds"], 2)) for d in s.get("gpu", {}).get("devices", [])]
    print(f"{f.split('/')[-1]:30} {t['items']:5} items {t['wall_seconds']:6.3f} s {t['images_per_second']:7.1f} img/s per-device {per}")
PY
