#!/usr/bin/env bash
# ASan + UBSan (and LeakSanitizer) build of the CPU code and its tests (build-asan/), then every
# ctest test that needs no GPU; any sanitizer report, even from a child process whose exit code
# a test tolerates, fails the run. Run by `tools/test.sh --sanitize` (CI, after the normal suite).
# Usage: tools/sanitize.sh [ctest args...]   (e.g. -R unit)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${SANITIZE_BUILD_DIR:-build-asan}
generator=(); command -v ninja >/dev/null && generator=(-G Ninja)
launcher=(); command -v ccache >/dev/null && launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
# -O1 -g1: cheaper to compile than -O2 -g (the build is most of the time on 2 cores), and line
# numbers in every stack; a unity build, as tools/test.sh's.
cmake -S . -B "$build" "${generator[@]}" "${launcher[@]}" -DIMFLOW_CUDA=OFF -DIMFLOW_FUZZ=OFF -DCMAKE_UNITY_BUILD=ON \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DIMFLOW_SANITIZE=address,undefined >/dev/null
cmake --build "$build" -j"$(nproc)"

# Every report goes to a file under $logs as well as failing the process that made it: shell and
# Python tests run the CLI and some of them expect it to fail (bad inputs, kill -9, signals), so an
# exit code alone could hide a report. Leak detection is on; tools/lsan.supp names the only
# process-lifetime allocations that are not freed at exit (see the comments there).
logs=$PWD/$build/sanitizer-logs
rm -rf "$logs"; mkdir -p "$logs"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=1:strict_string_checks=1:check_initialization_order=1:log_path=$logs/asan${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export LSAN_OPTIONS="suppressions=$PWD/tools/lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:log_path=$logs/ubsan${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
command -v llvm-symbolizer >/dev/null && export ASAN_SYMBOLIZER_PATH=${ASAN_SYMBOLIZER_PATH:-$(command -v llvm-symbolizer)}

# Not run under the sanitizers: gpu (needs a CUDA device, not built here with IMFLOW_CUDA=OFF;
# tools/gpu/sanitize.sh runs the GPU tests under compute-sanitizer instead).
# Run on their own below, each with one ASan option changed (when no ctest arguments are given):
#  - bounded_memory asserts that peak RSS does not grow with the number of inputs; ASan's
#    quarantine of freed memory (256 MB) fills with the number of items and made it fail
#    (157 -> 411 MB); with quarantine_size_mb=0 it measures imflow again (90 -> 100 MB), with
#    every other check on (use-after-free is checked by the rest of the suite).
#  - mpi: Open MPI's leaks (tools/lsan.supp) are only recognisable with full stack unwinding on
#    every malloc (fast_unwind_on_malloc=0), too slow for the rest of the suite.
status=0
ctest --test-dir "$build" --output-on-failure -j "$(nproc)" --timeout 900 -E '^(gpu|bounded_memory|mpi)$' "$@" || status=$?
if [ $# -eq 0 ]; then
  ASAN_OPTIONS="$ASAN_OPTIONS:quarantine_size_mb=0" ctest --test-dir "$build" --output-on-failure --timeout 900 -R '^bounded_memory$' || status=$?
  ASAN_OPTIONS="$ASAN_OPTIONS:fast_unwind_on_malloc=0" ctest --test-dir "$build" --output-on-failure --timeout 900 -R '^mpi$' || status=$?
fi
if compgen -G "$logs/*" >/dev/null; then
  echo "Sanitizer reports ($logs):" >&2
  for f in "$logs"/*; do echo "==== $f" >&2; head -60 "$f" | cut -c1-400 >&2; done
  exit 1
fi
exit $status
