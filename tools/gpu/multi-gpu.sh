#!/usr/bin/env bash
# Scale-out on a host with two GPUs (docs/scaling.md): one GPU against two in one process
# (--devices 0 vs 0,1, alternating, two runs each) and `mpirun -n 2` (one GPU and half the
# threads per rank), on four workloads:
#   astro     config/astro.yaml as shipped, 2,048 float32 2048x2048 images from the page cache
#   astro_psf the same with a 41x41 Moffat matched filter (FWHM 6 px, beta 2.5; not separable, so
#             the general 2-D convolution) on the detection image: GPU-bound
#   mri       the batched all-GPU MRI pipeline (PNG + metrics out), 56,320 real slices
#   mri_rank  the same with metrics only and rank 100: GPU-bound
# WORKLOADS="astro_psf mri_rank" runs only those; ASTRO_REPEAT (4) and REPEAT (64) set the input
# counts (copies of 512 images and of the 880 slices, hard links: one page-cache copy).
# Needs the carried .devdeps (tools/gpu/make-deps.sh), datasets/data/astro and
# datasets/data/mri/slices. Summaries (items dropped) under $OUT, all of them in $OUT/multi-gpu.json;
# a table on stdout.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PATH=/opt/deps/usr/bin:$PATH
. tools/gpu/setup.sh || exit 1
command -v mpirun >/dev/null && echo "mpirun: $(command -v mpirun)" || echo "no mpirun on this machine"
grep -E "IMFLOW_HAVE_MPI|MPI_C_FOUND:" build-dev/CMakeCache.txt | tee "$OUT/mpi_cmake.txt"
nvidia-smi -L | tee "$OUT/gpus.txt"; nproc | tee -a "$OUT/gpus.txt"
ASTRO_REPEAT=${ASTRO_REPEAT:-4}; BPS=${BPS:-4}; REPEAT=${REPEAT:-64}
rm -rf /tmp/a2048 /tmp/mri_in
python3 tools/gpu/make-astro-2048.py datasets/data/astro/ISAAC*.fits /tmp/a2048/r1
for r in $(seq 2 "$ASTRO_REPEAT"); do cp -al /tmp/a2048/r1 /tmp/a2048/r$r; done
echo "astronomy inputs: $(find /tmp/a2048 -name '*.fits' | wc -l) files"
for r in $(seq 1 "$REPEAT"); do mkdir -p /tmp/mri_in/r$r; ln -f datasets/data/mri/slices/*.png /tmp/mri_in/r$r/; done
echo "MRI inputs: $(find /tmp/mri_in -name '*.png' | wc -l) files"
MRI=/tmp/mri-batched.yaml
sed -e 's/solver: auto, reconstruct: auto, svd_solver: auto, reconstruct_kernel: auto/solver: gpu/' \
    -e 's/patterns: \["\*.png"\]/patterns: ["*.png"]\n  recursive: true/' config/mri-gpu.yaml > $MRI
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
import json, glob, os, sys
runs = {}  # every run's summary by run name, also in one file: $OUT/multi-gpu.json
for f in sorted(glob.glob(sys.argv[1] + "/*_devices_*.json") + glob.glob(sys.argv[1] + "/*_mpirun2_*.json")):
    s = json.load(open(f)); s.pop("items", None); json.dump(s, open(f, "w"), indent=1)
    runs[os.path.basename(f)[:-5]] = s
    t = s["totals"]
    per = [(d["device"], d["items"], round(d["kernel_busy_seconds"], 2)) for d in s.get("gpu", {}).get("devices", [])]
    print(f"{f.split('/')[-1]:32} {t['items']:6} items {t['wall_seconds']:7.3f} s {t['images_per_second']:8.1f} img/s failed {t['failed']} per-device {per}")
json.dump({"runs": runs}, open(sys.argv[1] + "/multi-gpu.json", "w"), indent=1)
PY
