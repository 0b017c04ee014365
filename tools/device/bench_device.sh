#!/usr/bin/env bash
# One device call per part: build (CUDA, else CPU-only), then `imflow bench` sweeps on the real
# data; bench.json/bench.csv (and a few traces) go to $OUT/<name>. Usage: bench_device.sh build|astro|more
# (Written for the lead; not yet run on the device as of 2026-11-23.)
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export CMAKE_PREFIX_PATH=/opt/deps/usr PKG_CONFIG_PATH=/opt/deps/usr/lib/x86_64-linux-gnu/pkgconfig:/opt/deps/usr/share/pkgconfig
export LD_LIBRARY_PATH=/opt/deps/usr/lib/x86_64-linux-gnu:/opt/deps/usr/lib/x86_64-linux-gnu/openblas-pthread:${LD_LIBRARY_PATH:-}
export PKG_CONFIG_SYSROOT_DIR=/opt/deps
imflow=build-dev/imflow
case "${1:-build}" in
build)
  if ! (. tools/device/setup.sh); then
    echo "CUDA build failed; building CPU-only"; cp "$OUT/build.log" "$OUT/build-cuda-failed.log" 2>/dev/null
    cmake -S . -B build-dev -G Ninja -DCMAKE_BUILD_TYPE=Release -DIMFLOW_CUDA=OFF -DIMFLOW_MPI=OFF -DCMAKE_CXX_FLAGS=-I/opt/deps/usr/include \
      > "$OUT/cmake-cpu.log" 2>&1 && ninja -C build-dev -j 16 > "$OUT/build-cpu.log" 2>&1 || { tail -30 "$OUT/build-cpu.log"; exit 1; }
  fi
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
  $imflow --version ;;
astro)
  $imflow -q bench config/astro.yaml --input datasets/data/astro --device cpu --images 320 --buffers 32 \
    --sweep threads=1,2,4,8,16 --repeat 3 --trace --out "$OUT/cpu-astro"
  echo "cpu rc=$?"; find "$OUT/cpu-astro/traces" -name '*.json' ! -name 'point-4.trace.json' -delete
  if $imflow bench --help >/dev/null && [ -n "$(nvidia-smi -L 2>/dev/null)" ] && $imflow -q run config/astro.yaml \
       --input datasets/samples/dss_crop.fits --output /tmp/probe --device cuda 2>/dev/null; then
    $imflow -q bench config/astro.yaml --input datasets/data/astro --device cuda --images 320 --threads 16 \
      --sweep streams=1,2,4,8 --sweep buffers=1,2,3 --repeat 3 --trace --out "$OUT/gpu-astro"
    echo "gpu rc=$?"; find "$OUT/gpu-astro/traces" -name '*.json' ! -name 'point-7.trace.json' -delete
  else echo "no CUDA run possible"; fi ;;
more)
  $imflow -q bench config/astro.yaml --input datasets/data/astro --device cpu --images 40 --gustafson --buffers 32 \
    --sweep threads=1,2,4,8,16 --repeat 3 --out "$OUT/cpu-astro-gustafson"; echo "gustafson rc=$?"
  $imflow -q bench config/mri.yaml --input datasets/data/mri/slices --device cpu --sweep threads=1,2,4,8,16 \
    --repeat 3 --out "$OUT/cpu-mri"; echo "mri rc=$?" ;;
esac
