#!/usr/bin/env bash
# Build the libFuzzer targets with clang (build-fuzz/, IMFLOW_FUZZ=ON) and run each for SECONDS.
# Usage: tools/fuzz.sh [SECONDS=60] [targets...]   corpora: build-fuzz/corpus/<target>, crashes: build-fuzz/crashes/
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}; shift || true
targets=("${@:-fuzz_fits fuzz_png fuzz_nifti fuzz_yaml}"); targets=(${targets[*]})
CC=${CC:-clang-14} CXX=${CXX:-clang++-14} cmake -S . -B build-fuzz -DIMFLOW_FUZZ=ON -DIMFLOW_TESTS=OFF -DIMFLOW_CUDA=OFF -DIMFLOW_MPI=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build-fuzz -j"$(nproc)" --target "${targets[@]}"
seed() {  # seed corpora from the committed samples
  case $1 in
    fuzz_fits) ls datasets/samples/*.fits ;;
    fuzz_png) ls datasets/samples/mri/*.png ;;
    fuzz_yaml) ls config/*.yaml ;;
    fuzz_nifti) for f in datasets/samples/mri/*.nii.gz; do gzip -dc "$f" > "build-fuzz/corpus/$1/$(basename "$f" .gz)"; done ;;
  esac
}
for target in "${targets[@]}"; do
  mkdir -p "build-fuzz/corpus/$target" build-fuzz/crashes
  for f in $(seed "$target"); do cp "$f" "build-fuzz/corpus/$target/"; done
  echo "== $target for ${seconds}s"
  ASAN_OPTIONS=detect_leaks=0 "build-fuzz/tests/fuzz/$target" -max_total_time="$seconds" -max_len=262144 -rss_limit_mb=4096 \
    -artifact_prefix=build-fuzz/crashes/"$target"- "build-fuzz/corpus/$target" 2>&1 | tail -4
done
# Keep what they find: after the fix, copy each crasher into tests/fuzz/regressions/<target>/ (the
# target's name without fuzz_; NIfTI ones as the .nii bytes), where ctest fuzz_regressions replays it.
if compgen -G "build-fuzz/crashes/*" >/dev/null; then ls -l build-fuzz/crashes/; echo "keep them in tests/fuzz/regressions/ once fixed"; fi
