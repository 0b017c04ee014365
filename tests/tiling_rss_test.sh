#!/usr/bin/env bash
# A large image is never held whole (docs/tiling.md): an 8192 x 8192 float32 FITS (256 MB,
# synthetic sky, datasets/make_mosaic.py --synthetic) processed with 1024-pixel tiles peaks well
# below the image's own size, while the same run without tiling needs several times it. The
# 32,000^2 measurement (4 GB, < 1.5 GB RSS with default settings) is tools/mosaic_rss.sh.
set -euo pipefail
imflow=$1; src=$2; python=${3:-/usr/bin/python3}
# (ldd's whole output first: `ldd | grep -q` under pipefail fails when grep exits early.)
libraries=$(ldd "$imflow" 2>/dev/null || true)
if [[ $libraries == *libasan* ]]; then
  echo "SKIPPED: under AddressSanitizer peak RSS measures the sanitizer's shadow memory"; exit 77
fi
if ! "$python" -c "import numpy" 2>/dev/null; then  # tools/install-deps.sh installs it (CI); a bare GPU host may lack it
  echo "SKIPPED: $python has no numpy to make the synthetic mosaic (tools/install-deps.sh installs python3-numpy)"; exit 77
fi
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
mkdir -p "$work/in"
"$python" "$src/datasets/make_mosaic.py" "$work/in/big.fits" --size 8192x8192 --synthetic >/dev/null
image_mb=$((8192 * 8192 * 4 / 1000000))
peak() {  # peak RSS (MB) of a run with extra options
  local out=$1; shift
  /usr/bin/time -f "%M" -o "$work/rss" "$imflow" -q run "$src/config/astro.yaml" --input "$work/in" --output "$out" \
    --device cpu --threads 2 --buffers 4 "$@"
  echo $(($(cat "$work/rss") * 1024 / 1000000))
}
# The process's own baseline (libraries; with CUDA built in, its runtime libraries): a tiny image.
mkdir -p "$work/small"; cp "$src/datasets/samples/dss_crop.fits" "$work/small/"
base=$("$python" - "$imflow" "$src/config/astro.yaml" "$work" <<'PY'
import subprocess, sys, resource
imflow, config, work = sys.argv[1:]
subprocess.run([imflow, "-q", "run", config, "--input", f"{work}/small", "--output", f"{work}/base", "--device", "cpu",
                "--threads", "2", "--buffers", "4"], check=True)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024 // 1000000)
PY
)
tiled=$(peak "$work/tiled" --tile 1024)
echo "8192x8192 float32 (${image_mb} MB): peak RSS with 1024-pixel tiles ${tiled} MB, of which ${base} MB is the process baseline"
[ $((tiled - base)) -lt $((image_mb / 2)) ] || {
  echo "FAIL: the tiled run used $((tiled - base)) MB above the baseline: not below half the image (${image_mb} MB)"; exit 1; }
grep -q '"status": "ok"' "$work/tiled/summary.json" || { echo "FAIL: the tiled run failed"; exit 1; }
grep -q '"count": 64' "$work/tiled/summary.json" || { echo "FAIL: expected 64 tiles"; exit 1; }
echo "tiling memory test passed"
