#!/usr/bin/env bash
# Mosaics on a GPU host (docs/tiling.md), one call: build, the tiling tests (CPU + GPU), a 32,000 x
# 32,000 float32 mosaic (datasets/make_mosaic.py: real ESO cells when datasets/data/astro is
# carried, else synthetic) read from the page cache through background, segment, label, measure:
# CPU (16 threads) and GPU (tile and streams sweep), megapixels/s, copy/compute overlap, CPU vs
# GPU catalogs; then the 16,500 x 16,300 real mosaic tiled vs whole on the GPU.
# JSON to $OUT, logs in $OUT/logs.tar.gz. SWEEP="TILExSTREAMS ..." (default "4096x4 4096x8 8192x4").
# usage: OUT=DIR bash tools/gpu/mosaic.sh   (with .devdeps and datasets/data/astro present)
set -uo pipefail
OUT=${OUT:-/tmp/out}; L=/tmp/logs; mkdir -p "$OUT" $L
t0=$(date +%s); stamp() { echo "== $1 at $(( $(date +%s) - t0 )) s"; }
# tools/gpu/setup.sh, only the targets this needs.
TARGETS="imflow_cli imflow_gpu_tests imflow_tests" SETUP_LOGS=$L . tools/gpu/setup.sh || exit 1
stamp built; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $L/gpu.txt
imflow=build-dev/imflow
timeout 120 build-dev/tests/gpu/imflow_gpu_tests "[tiling]" > $L/gpu_tiling_tests.log 2>&1; echo "gpu tiling tests rc=$?"; tail -3 $L/gpu_tiling_tests.log
timeout 120 build-dev/tests/imflow_tests "[tiling]" > $L/cpu_tiling_tests.log 2>&1; echo "cpu tiling tests rc=$?"; tail -2 $L/cpu_tiling_tests.log
stamp tests

kind=--synthetic; [ -f datasets/data/astro/ISAAC.2006-04-13T06-32-38.944.fits ] && kind="--from datasets/data/astro"
mkdir -p /tmp/m32/in /tmp/m16/in
python3 datasets/make_mosaic.py /tmp/m32/in/mosaic.fits --size 32000x32000 $kind
cat /tmp/m32/in/mosaic.fits > /dev/null  # into the page cache
stamp data
cfg=config/astro.yaml
rm -rf /tmp/o; $imflow -q run $cfg --input /tmp/m32/in --output /tmp/o-cpu --device cpu --threads 16 --summary $OUT/mosaic32k_cpu_t16.json
for ts in ${SWEEP:-4096x4 4096x8 8192x4}; do
  tile=${ts%x*}; streams=${ts#*x}
  rm -rf /tmp/o; $imflow -q run $cfg --input /tmp/m32/in --output /tmp/o --device cuda --threads 16 --tile $tile --streams $streams \
    --summary $OUT/mosaic32k_gpu_tile${tile}_s${streams}.json --trace $L/trace_tile${tile}_s${streams}.json
done
/usr/bin/python3 tools/compare_tiled.py /tmp/o-cpu /tmp/o | tee $L/compare_cpu_gpu.txt
stamp mosaic32k
/usr/bin/python3 - $OUT <<'PY' | tee $OUT/mosaic32k.txt
import glob, json, sys
for f in sorted(glob.glob(sys.argv[1] + "/mosaic32k_*.json")):
    s = json.load(open(f)); t = s["totals"]; g = s.get("gpu", {}); i = s["items"][0]
    print(f"{f.split('/')[-1]:34} {t['wall_seconds']:7.3f} s {t['megapixels'] / t['wall_seconds']:8.1f} Mpix/s "
          f"sources {i.get('nsources')} prepass {i['tiles']['background_prepass_seconds']:.3f} s "
          f"({i['tiles']['background_passes']} passes) rss {t['peak_rss_megabytes']:.0f} MB")
    print("    busy", json.dumps({k: round(v, 3) for k, v in t["stage_busy_seconds"].items()}))
    if g: print("    gpu", json.dumps({k: (round(v, 3) if isinstance(v, float) else v) for k, v in g["devices"][0].items()}))
PY
# The real 16,500 x 16,300 mosaic, tiled vs whole image on the GPU (needs datasets/data/astro).
if [ "$kind" != --synthetic ]; then
  python3 datasets/make_mosaic.py /tmp/m16/in/mosaic.fits --from datasets/data/astro
  MOSAIC_WORK=/tmp/m16 KEEP_MOSAIC=1 timeout 200 bash tools/mosaic_compare.sh $imflow $OUT/mosaic16k_gpu cuda > $L/mosaic16k.log 2>&1
  echo "mosaic16k tiled vs whole on the GPU rc=$?"; tail -3 $L/mosaic16k.log
fi
stamp done
tar czf $OUT/logs.tar.gz -C $L --exclude='trace_*.json' . 2>/dev/null
cp $L/trace_tile4096_s4.json $OUT/ 2>/dev/null; ls -la $OUT
