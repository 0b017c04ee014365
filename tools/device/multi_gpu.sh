#!/usr/bin/env bash
# Several GPUs in one process (a machine with 2 GPUs): throughput with --devices 0 against
# --devices 0,1 on a GPU-bound astronomy set (512 2048x2048 float32 images made from the ISAAC
# frame, read from page cache) and on the all-GPU MRI pipeline. Summaries under $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
. tools/device/setup.sh || exit 1
nvidia-smi -L | tee "$OUT/gpus.txt"
python3 tools/device/make_astro_2048.py .mgcarry/ISAAC*.fits /tmp/a2048
imflow=build-dev/imflow
sed 's/solver: auto, reconstruct: auto, svd_solver: auto/solver: gpu, reconstruct: gpu, svd_solver: gesvdj/' config/mri-gpu.yaml > /tmp/mri-allgpu.yaml
$imflow -q run config/astro.yaml --input /tmp/a2048 --output /tmp/o --device cuda --devices 0,1 >/dev/null 2>&1  # warm-up
for devices in 0 0,1; do
  for r in 1 2; do
    rm -rf /tmp/o; $imflow -q run config/astro.yaml --input /tmp/a2048 --output /tmp/o --device cuda --devices $devices \
      --threads 32 --streams 8 --summary "$OUT/astro_devices_${devices/,/_}_r$r.json"
    rm -rf /tmp/m; $imflow -q run /tmp/mri-allgpu.yaml --input datasets/data/mri/slices --output /tmp/m --device cuda \
      --devices $devices --threads 32 --streams 8 --summary "$OUT/mri_devices_${devices/,/_}_r$r.json"
  done
done
/usr/bin/python3 - "$OUT" <<'PY'
import json, sys, glob
for f in sorted(glob.glob(sys.argv[1] + "/*_devices_*.json")):
    s = json.load(open(f)); t = s["totals"]
    per = [(d["device"], d["items"], round(d["kernel_busy_seconds"], 2)) for d in s.get("gpu", {}).get("devices", [])]
    print(f"{f.split('/')[-1]:30} {t['items']:5} items {t['wall_seconds']:6.3f} s {t['images_per_second']:7.1f} img/s per-device {per}")
PY
