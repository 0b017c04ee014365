#!/usr/bin/env bash
# The whole check on a GPU host, in one go: build with CUDA (tools/gpu/setup.sh), every ctest
# that the host can run (the GPU tests included; those needing SciPy, SEP or SExtractor run in CI
# on a Debian host instead), the GPU tests and the CLI under compute-sanitizer
# (tools/gpu/sanitize.sh), then the real files through --device cpu and --device cuda with the
# catalogs, failures and MRI metrics compared (tools/gpu/compare-backends.sh).
# Logs under $OUT (default /tmp/gpu-check); exit 0 only when every part passed.
# usage: [OUT=DIR] [SKIP_SANITIZE=1] [SWEEP=DIR] bash tools/gpu/check.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/gpu-check}; mkdir -p "$OUT"
t0=$SECONDS; stamp() { echo "== check.sh: $1 at $((SECONDS - t0)) s"; }
SETUP_LOGS=$OUT . tools/gpu/setup.sh || exit 1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
stamp built
status=0
# Needs Debian's python3-scipy / PyPI's sep and its source / source-extractor and SWarp, which an offline
# GPU host lacks.
excluded="reference|sep_background|sep_deblend|sep_photometry|sep_test_suite|wcs_reference|ldac_peers|ldac_photometry_peers|weight_peers|weight_photometry_peers"
# The CLI tests make their inputs with Python: with astropy (the test Python setup.sh chose), and
# with Debian's /usr/bin/python3 and NumPy. A host without them runs those in CI only; say which.
test_python=$(sed -n 's/^SYSTEM_PYTHON:[A-Z]*=//p' build-dev/CMakeCache.txt)
if ! "$test_python" -c "import astropy" 2>/dev/null; then
  excluded="$excluded|bad_inputs|fuzz_regressions|mpi|tiling_cli"
  echo "check.sh: not run here (no astropy in $test_python): bad_inputs fuzz_regressions mpi tiling_cli" | tee "$OUT/not-run.txt"
fi
if ! /usr/bin/python3 -c "import numpy" 2>/dev/null; then
  excluded="$excluded|kill_resume|signals|disk_full"
  echo "check.sh: not run here (no NumPy in /usr/bin/python3): kill_resume signals disk_full" | tee -a "$OUT/not-run.txt"
fi
(cd build-dev && ctest --output-on-failure -j 4 --timeout 300 -E "$excluded") > "$OUT/ctest.log" 2>&1 || status=1
grep -E "tests passed|Failed|\*\*\*|Not Run" "$OUT/ctest.log" | head -20
build-dev/tests/gpu/imflow_gpu_tests 2>&1 | tail -2 | tee "$OUT/gpu-tests.txt"
stamp tested
if [ -z "${SKIP_SANITIZE:-}" ]; then
  bash tools/gpu/sanitize.sh build-dev "$OUT/sanitize" || status=1
  stamp sanitized
fi
OUT=$OUT/backends bash tools/gpu/compare-backends.sh || status=1
stamp "backends compared"
echo "check.sh: $([ $status -eq 0 ] && echo passed || echo FAILED)"
exit $status
