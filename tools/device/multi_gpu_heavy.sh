#!/usr/bin/env bash
# Several GPUs (2-GPU machine), session 13: one GPU against two (one process, --devices 0 vs 0,1,
# alternating, 2 runs each) and `mpirun -n 2`, on the multi_gpu.sh sets (2,048 astronomy images
# of 2048^2 float32 from page cache; 28,160 MRI slices) in two forms each:
#   astro     config/astro.yaml as shipped (kappa-sigma background, 5 sigma, 4-connected; CSV+FITS)
#   astro_psf the same with a matched filter: a 41x41 Moffat PSF (FWHM 6 px, beta 2.5; not
#             separable, so the general 2-D convolution) on the detection image
#   mri       the batched all-GPU MRI pipeline (PNG + metrics out), as multi_gpu.sh
#   mri_rank  the same with metrics only and the GPU SVD's rank 100 (no PNG encoding on the host)
# WORKLOADS="astro_psf mri_rank" runs only those. Summaries (items dropped) under $OUT; the table
# on stdout.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PATH=/opt/deps/usr/bin:$PATH
. tools/device/setup.sh || exit 1
command -v mpirun >/dev/null && echo "mpirun: $(command -v mpirun)" || echo "no mpirun on this machine"
grep -E "IMFLOW_HAVE_MPI|MPI_C_FOUND:" build-dev/CMakeCache.txt | tee "$OUT/mpi_cmake.txt"
nvidia-smi -L | tee "$OUT/gpus.txt"; nproc | tee -a "$OUT/gpus.txt"
ASTRO_REPEAT=${ASTRO_REPEAT:-4}; BPS=${BPS:-4}; REPEAT=${REPEAT:-64}
. tools/device/multi_gpu_inputs.sh
/usr/bin/python3 - > /tmp/psf.yaml <<'PY'
import math
size, fwhm, beta = 41, 6.0, 2.5
alpha = fwhm / (2 * math.sqrt(2 ** (1 / beta) - 1))
c = size // 2
rows = [[(1 + ((x - c) ** 2 + (y - c) ** 2) / alpha ** 2) ** -beta for x in range(size)] for y in range(size)]
total = sum(map(sum, rows))
print("  - convolve: {apply_to: detection, kernel: [" + ", ".join(
    "[" + ", ".join(f"{v / total:.6e}" for v in row) + "]" for row in rows) + "]}")
PY
sed -n '1,/^steps:/p' config/astro.yaml > /tmp/astro_psf.yaml; cat /tmp/psf.yaml >> /tmp/astro_psf.yaml
sed -n '/^steps:/,$p' config/astro.yaml | tail -n +2 >> /tmp/astro_psf.yaml
sed -e 's/formats: \[png, metrics\]/formats: [metrics]/' -e 's/rank: 50,/rank: 100,/' "$MRI" > /tmp/mri_rank.yaml
grep -c convolve /tmp/astro_psf.yaml; grep -E "formats|rank" /tmp/mri_rank.yaml
imflow=$PWD/build-dev/imflow
declare -A PIPE=([astro]=config/astro.yaml [astro_psf]=/tmp/astro_psf.yaml [mri]=$MRI [mri_rank]=/tmp/mri_rank.yaml)
declare -A IN=([astro]=/tmp/a2048 [astro_psf]=/tmp/a2048 [mri]=/tmp/mri_in [mri_rank]=/tmp/mri_in)
S=${SCRATCH:-/dev/shm}
WORKLOADS=${WORKLOADS:-astro astro_psf mri mri_rank}
for w in $WORKLOADS; do  # warm-up: page cache, CUDA, both GPUs
  rm -rf $S/o; $imflow -q run ${PIPE[$w]} --input ${IN[$w]} --output $S/o --device cuda --devices 0,1 > "$OUT/warm_$w.log" 2>&1 || tail -3 "$OUT/warm_$w.log"
done
for r in 1 2; do
  for w in $WORKLOADS; do
    for devices in 0,1 0; do
      rm -rf $S/o; sync; $imflow -q run ${PIPE[$w]} --input ${IN[$w]} --output $S/o --device cuda --devices $devices \
        --threads 32 --streams 8 --buffers-per-stream $BPS --summary "$OUT/${w}_devices_${devices/,/_}_r$r.json"
    done
  done
done
if command -v mpirun >/dev/null; then
  MPIRUN="mpirun -n 2 --oversubscribe --allow-run-as-root --bind-to none"
  for r in 1 2; do
    for w in $WORKLOADS; do
      rm -rf $S/o; sync; $MPIRUN $imflow -q run ${PIPE[$w]} --input ${IN[$w]} --output $S/o --device cuda --threads 16 \
        --streams 8 --buffers-per-stream $BPS --summary "$OUT/${w}_mpirun2_r$r.json" > "$OUT/mpirun_${w}_r$r.log" 2>&1 || tail -3 "$OUT/mpirun_${w}_r$r.log"
    done
  done
fi
/usr/bin/python3 - "$OUT" <<'PY'
import json, glob, sys
rows = []
for f in sorted(glob.glob(sys.argv[1] + "/*_devices_*.json") + glob.glob(sys.argv[1] + "/*_mpirun2_*.json")):
    s = json.load(open(f)); s.pop("items", None); json.dump(s, open(f, "w"), indent=1)
    t = s["totals"]
    per = [(d["device"], d["items"], round(d["kernel_busy_seconds"], 2)) for d in s.get("gpu", {}).get("devices", [])]
    print(f"{f.split('/')[-1]:32} {t['items']:6} items {t['wall_seconds']:7.3f} s {t['images_per_second']:8.1f} img/s failed {t['failed']} per-device {per}")
PY
