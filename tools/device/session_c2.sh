#!/usr/bin/env bash
# Second device call for issue 5 (session 4): build, every GPU test, the end-to-end runs that
# matter (880 slices and 8x / 16x; gesvda with its Jacobi fallback and jacobi) with the Python
# baselines in the same call, one verbose 16x run (timestamps of start-up and shutdown; perf
# when the machine has it), then compute-sanitizer memcheck + initcheck on the [sanitize] set.
set -uo pipefail
OUT=${OUT:-/tmp/out}
mkdir -p /tmp/c2
. tools/device/setup.sh || exit 1
t0=$SECONDS
timeout ${GPU_TEST_TIMEOUT:-150} build-dev/tests/gpu/imflow_gpu_tests > /tmp/c2/gpu_tests.log 2>&1
echo "gpu tests rc=$? $((SECONDS - t0)) s"; grep -a -E "real slices|test cases|assertions|FAILED" /tmp/c2/gpu_tests.log | tail -12
ONLY='^(gpu_batch64_png|gpu_batch128_png|gpu_batch64_png_rep2|gpu_batch64_png_rep3|gpu_batch64_jacobi_png|gpu_batch64_png_traced|x8_gpu_batch128_png|x16_gpu_batch64_png|x16_gpu_batch128_png|x16_gpu_batch64_jacobi_png|cpu_png)$' \
  SKIP=tests,bench timeout ${BENCH_TIMEOUT:-200} bash tools/bench_svd.sh build-dev /tmp/c2/svd datasets/data/mri/slices > /tmp/c2/svd_run.log 2>&1
echo "bench_svd rc=$?"; grep -E "slices/s|rc [0-9]" /tmp/c2/svd_run.log | head -30
# One verbose 16x run: where the time outside the summary's wall goes.
big=/tmp/c2/x16; for r in $(seq 1 16); do mkdir -p $big/r$r; ln -f datasets/data/mri/slices/*.png $big/r$r/; done
cat > /tmp/c2/x16.yaml <<YAML
input: {dir: $big, patterns: ["*.png"], recursive: true}
output: {dir: /tmp/c2/x16out, formats: [png, metrics], png_compression: 1}
device: cuda
steps:
  - normalize: {method: minmax}
  - svd_reconstruct: {rank: 50, solver: gpu}
YAML
( date +%T.%N; /usr/bin/time -v build-dev/imflow -v run /tmp/c2/x16.yaml --streams 4 --batch 128; date +%T.%N ) > /tmp/c2/x16_verbose.log 2>&1
grep -E "listed|written in|items:|Elapsed|Maximum resident" /tmp/c2/x16_verbose.log; head -1 /tmp/c2/x16_verbose.log; tail -1 /tmp/c2/x16_verbose.log
if command -v perf > /dev/null; then
  rm -rf /tmp/c2/x16out; perf record -o /tmp/c2/perf.data -g build-dev/imflow -q run /tmp/c2/x16.yaml --streams 4 --batch 128 > /dev/null 2>&1
  perf report -i /tmp/c2/perf.data --no-children --sort dso,sym 2>/dev/null | head -80 > /tmp/c2/perf_top.txt; rm -f /tmp/c2/perf.data
else echo "no perf on this machine"; fi
rm -rf $big /tmp/c2/x16out
SKIP_RACECHECK=1 MEM_LIMIT=${MEM_LIMIT:-100} SYNC_LIMIT=${SYNC_LIMIT:-40} INIT_LIMIT=${INIT_LIMIT:-80} bash tools/device/sanitize.sh build-dev /tmp/c2/san
echo "sanitize rc=$?"; cat /tmp/c2/san/summary.json 2>/dev/null | head -40
tar czf "$OUT/c2.tgz" -C /tmp c2
