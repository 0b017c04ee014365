#!/usr/bin/env bash
# One device call that checks the whole tree on the GPU machine: build, every test (GPU tests
# included; the SciPy reference tests need Debian's python3-scipy and run in CI instead), the
# CPU and GPU `imflow bench` sweeps on the real astronomy data, and the MRI pipeline end to end
# on the CPU, the hybrid and all-GPU. Results under $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
t0=$(date +%s); stamp() { echo "== $1 at $(( $(date +%s) - t0 )) s"; }
. tools/device/setup.sh || exit 1
stamp built
(cd build-dev && ctest --output-on-failure -j 4 --timeout 200 -E "reference") > "$OUT/ctest.log" 2>&1; echo "ctest rc=$?"
grep -E "tests passed|Failed|\*\*\*" "$OUT/ctest.log" | head -12
stamp tested
bash tools/device/bench_device.sh astro > "$OUT/bench_astro.log" 2>&1; echo "bench rc=$?"; grep -E "rc=" "$OUT/bench_astro.log"
stamp bench
imflow=build-dev/imflow
for mode in cpu hybrid gpu; do
  case $mode in
    cpu) cfg=config/mri.yaml; dev=cpu ;;
    hybrid) cfg=config/mri-gpu.yaml; dev=cuda ;;
    gpu) sed 's/solver: auto, reconstruct: auto, svd_solver: auto/solver: gpu, reconstruct: gpu, svd_solver: gesvdj/' config/mri-gpu.yaml > /tmp/mri-allgpu.yaml; cfg=/tmp/mri-allgpu.yaml; dev=cuda ;;
  esac
  $imflow -q run $cfg --input datasets/data/mri/slices --output /tmp/mri-warm --device $dev --threads 16 >/dev/null 2>&1
  rm -rf /tmp/mri-$mode
  $imflow -q run $cfg --input datasets/data/mri/slices --output /tmp/mri-$mode --device $dev --threads 16 --streams 8 \
    --summary "$OUT/mri_$mode.json"; echo "mri $mode rc=$?"
done
/usr/bin/python3 - "$OUT" <<'PY'
import json, sys
for mode in ("cpu", "hybrid", "gpu"):
    try: t = json.load(open(f"{sys.argv[1]}/mri_{mode}.json"))["totals"]
    except Exception as e: print(mode, "missing", e); continue
    print(f"mri {mode:7} {t['items']} slices {t['wall_seconds']:.3f} s {t['images_per_second']:.0f} slices/s busy "
          + json.dumps({k: round(v, 2) for k, v in t['stage_busy_seconds'].items()}))
PY
stamp done
