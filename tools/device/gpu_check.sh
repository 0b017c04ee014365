#!/usr/bin/env bash
# One device call: build with CUDA, run every test (GPU tests included), run the astronomy
# pipeline on the real ESO images on the CPU and on the GPU and compare the catalogs, then time
# a streams sweep over many copies of the directory with a trace. Logs and JSON go to $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
. tools/device/setup.sh || exit 1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
(cd build-dev && ctest --output-on-failure -j 4 --timeout 120 -E "reference") > "$OUT/ctest.log" 2>&1; echo "ctest rc=$?"; tail -15 "$OUT/ctest.log"
imflow=build-dev/imflow
data=datasets/data/astro
$imflow -q run config/astro.yaml --input $data --output "$OUT/cpu" --device cpu --threads 16; echo "cpu rc=$?"
$imflow -q run config/astro.yaml --input $data --output "$OUT/gpu" --device cuda --trace "$OUT/trace_real.json"; echo "gpu rc=$?"
/usr/bin/python3 tools/device/compare_catalogs.py "$OUT/cpu" "$OUT/gpu"
# Throughput: 40 copies of the real directory (hard links), CPU vs GPU with 1..8 streams.
big=/tmp/astro_x40; mkdir -p $big
for i in $(seq 1 40); do mkdir -p $big/c$i; for f in $data/*.fits; do ln -f "$f" $big/c$i/; done; done
$imflow -q run config/astro.yaml --input $big --output /tmp/warm --device cuda > /dev/null 2>&1
for t in 16; do $imflow -q run config/astro.yaml --input $big --output /tmp/o --device cpu --threads $t --summary "$OUT/sweep_cpu_t$t.json"; done
for s in 1 2 4 8; do
  $imflow -q run config/astro.yaml --input $big --output /tmp/o --device cuda --threads 16 --streams $s --summary "$OUT/sweep_gpu_s$s.json" --trace "$OUT/trace_s$s.json"
done
/usr/bin/python3 - "$OUT" <<'PY'
import json, sys, glob
for f in sorted(glob.glob(sys.argv[1] + "/sweep_*.json")):
    s = json.load(open(f)); t = s["totals"]; g = s.get("gpu", {})
    print(f"{f.split('/')[-1]:24} {t['items']:5} items {t['wall_seconds']:7.3f} s {t['images_per_second']:8.1f} img/s "
          f"{t['megabytes_per_second']:8.1f} MB/s overlap {g.get('copy_overlap_fraction', 0):.2f} busy {json.dumps({k: round(v, 2) for k, v in t['stage_busy_seconds'].items()})}")
PY
