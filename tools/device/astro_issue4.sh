#!/usr/bin/env bash
# Issue 4 on the lent GPU machine, one call: build, GPU + convolve tests, 2048x2048 kernel timings,
# CPU vs GPU catalogs on every real image, a streams sweep over 512 2048x2048 float32 FITS, the
# lesson's CuPy baseline (LESSON=1), compute-sanitizer (SANITIZE=1); SWEEP="SxB ..." streams x buffers; JSON to $OUT, logs in $OUT/logs.tar.gz.
set -uo pipefail
OUT=${OUT:-/tmp/out}; L=/tmp/logs; mkdir -p "$OUT" $L
t0=$(date +%s); stamp() { echo "== $1 at $(( $(date +%s) - t0 )) s"; }
# Real images: astro is carried as is; calib and astro-fz travel fpacked (lossless) in .kcarry.
mkdir -p datasets/data/calib datasets/data/astro-fz
cp .kcarry/calib/* datasets/data/calib/ 2>/dev/null; cp .kcarry/astro-fz/* datasets/data/astro-fz/ 2>/dev/null
# tools/device/setup.sh, only the targets this needs.
TARGETS="imflow_cli imflow_gpu_tests imflow_tests" SETUP_LOGS=$L . tools/device/setup.sh || exit 1
stamp built; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee $L/gpu.txt
T=build-dev/tests/gpu/imflow_gpu_tests; imflow=build-dev/imflow
IMFLOW_BENCH_JSON=$OUT/astro_kernels_2048.json $T "[astro2048]" > $L/bench2048.log 2>&1; cat $L/bench2048.log | head -30
timeout ${GPU_TEST_TIMEOUT:-150} $T > $L/gpu_tests.log 2>&1; echo "gpu tests rc=$?"; grep -E "seed|real images|passed|failed|FAILED" $L/gpu_tests.log | head -20
timeout 60 build-dev/tests/imflow_tests "[convolve]" > $L/cpu_convolve.log 2>&1; echo "cpu convolve rc=$?"; tail -3 $L/cpu_convolve.log
stamp tests
for d in astro calib astro-fz; do
  $imflow -q run config/astro.yaml --input datasets/data/$d --output /tmp/cmp_cpu/$d --device cpu --threads 16
  $imflow -q run config/astro.yaml --input datasets/data/$d --output /tmp/cmp_gpu/$d --device cuda
  /usr/bin/python3 tools/device/compare_catalogs.py /tmp/cmp_cpu/$d /tmp/cmp_gpu/$d | tee -a $L/compare.log | head -8
done
stamp compare
# 512 images of 2048x2048 float32: the ISAAC frame tiled 2x2, rolled differently for each of 64
# files, hard-linked 8 times (page cache holds one copy: 1 GiB).
python3 tools/device/make_astro_2048.py datasets/data/astro/ISAAC*.fits /tmp/a2048
stamp data
$imflow -q run config/astro.yaml --input /tmp/a2048 --output /tmp/o --device cuda --streams 4 > /dev/null 2>&1  # warm-up
for sb in ${SWEEP:-1x2 2x2 4x2 8x2 4x4 8x4}; do
  s=${sb%x*}; b=${sb#*x}
  rm -rf /tmp/o; $imflow -q run config/astro.yaml --input /tmp/a2048 --output /tmp/o --device cuda --threads 16 --streams $s \
    --buffers-per-stream $b --summary $OUT/astro_stream_s${s}b$b.json --trace $L/trace_s${s}b$b.json
done
[ "${CPU_SWEEP:-1}" = 1 ] && { rm -rf /tmp/o; $imflow -q run config/astro.yaml --input /tmp/a2048 --output /tmp/o --device cpu --threads 16 --summary $L/astro_stream_cpu_t16.json; }
/usr/bin/python3 - $L $OUT <<'PY' | tee $L/sweep.txt
import json, sys, glob
for f in sorted(glob.glob(sys.argv[1] + "/astro_stream_*.json") + glob.glob(sys.argv[2] + "/astro_stream_*.json")):
    s = json.load(open(f)); t = s["totals"]; g = s.get("gpu", {})
    print(f"{f.split('/')[-1]:26} {t['items']:4} items {t['wall_seconds']:6.3f} s {t['images_per_second']:7.1f} img/s "
          f"overlap {g.get('copy_overlap_fraction', 0):.2f} busy {json.dumps({k: round(v, 2) for k, v in t['stage_busy_seconds'].items()})}")
    if g: print("   ", json.dumps({k: (round(v, 3) if isinstance(v, float) else v) for k, v in g["devices"][0].items()}))
PY
stamp sweep
[ "${LESSON:-0}" = 1 ] && PYTHONUNBUFFERED=1 timeout 100 python3 tools/baselines/lesson_cupy.py --json $OUT/astro_lesson_cupy.json datasets/data/astro datasets/data/calib > $L/lesson.log 2>&1; echo "lesson rc=$?"; cat $L/lesson.log
stamp lesson
[ "${SANITIZE:-0}" = 1 ] || { tar czf $OUT/logs.tar.gz -C $L --exclude='trace_s*.json' . 2>/dev/null; exit 0; }
CS=compute-sanitizer
timeout 60 $CS --tool memcheck --error-exitcode 9 $T "[convolve],[label],[pipeline]~[real]" > $L/memcheck.log 2>&1; echo "memcheck rc=$?"; tail -4 $L/memcheck.log
timeout 50 $CS --tool racecheck --error-exitcode 9 $T "GPU convolution matches the CPU,GPU labels equal the CPU labels on patterns" > $L/racecheck.log 2>&1; echo "racecheck rc=$?"; tail -4 $L/racecheck.log
stamp sanitizers
tar czf $OUT/logs.tar.gz -C $L --exclude='trace_s*.json' . 2>/dev/null; ls -la $OUT
