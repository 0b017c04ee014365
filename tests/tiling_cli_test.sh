#!/usr/bin/env bash
# Tiling through the CLI (docs/tiling.md): `imflow run --tile N` on the committed real crops
# (float and 16-bit integer FITS) and on a generated field with sources on tile corners and
# edges, against the same run without tiling: the same catalogs (tools/compare_tiled.py),
# byte-identical label maps and bgsub images; and the errors for what cannot be tiled.
set -euo pipefail
imflow=$1; src=$2; python=${3:-/usr/bin/python3}
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

mkdir -p "$work/in"
cp "$src"/datasets/samples/*.fits "$work/in/"
"$python" - "$work/in/field.fits" <<'PY'
import sys
import numpy as np
from astropy.io import fits
rng = np.random.default_rng(5)
h, w = 333, 401
y, x = np.mgrid[0:h, 0:w]
img = rng.normal(500.0, 12.0, (h, w))
stars = [(63.5, 63.5), (64.0, 128.0), (127.5, 191.5), (200.0, 64.0), (300.0, 250.0)]
stars += [tuple(p) for p in rng.uniform(0, [w, h], (60, 2))]
for cx, cy in stars:
    img += rng.uniform(800, 20000) * np.exp(-((x - cx) ** 2 + (y - cy) ** 2) / (2 * rng.uniform(1.0, 4.0) ** 2))
img[250, 20:380] += 400  # a line across several tiles
img[10:14, 100:110] = np.nan
fits.writeto(sys.argv[1], img.astype(np.float32))
PY
cat > "$work/conv.yaml" <<'YAML'
output: {formats: [csv, labels, bgsub]}
steps:
  - convolve: {kernel: gaussian, size: 5, sigma: 1.0}
  - background
  - segment: {nsigma: 4}
  - label: {connectivity: 8}
  - measure
YAML
for pipeline in "$src/config/astro.yaml" "$work/conv.yaml"; do
  "$imflow" -q run "$pipeline" --input "$work/in" --output "$work/whole" --device cpu --threads 2 --tile 0
  for tile in 64 97 8; do
    out="$work/tile$tile"
    "$imflow" -q run "$pipeline" --input "$work/in" --output "$out" --device cpu --threads 2 --tile "$tile" \
      --trace "$out.trace.json"
    "$python" "$src/tools/compare_tiled.py" "$work/whole" "$out" || fail "$(basename "$pipeline") --tile $tile differs"
    grep -q '"tiles"' "$out/summary.json" || fail "summary records no tiles"
    grep -q '"tile":' "$out.trace.json" || fail "trace shows no tiles"
    rm -rf "$out" "$out.trace.json"
  done
  rm -rf "$work/whole"
done

# What cannot run on tiles: exit 1 with a clear message; --tile 0 runs it whole.
set +e; msg=$("$imflow" run "$src/config/mri.yaml" --input "$work/in" --output "$work/mri" --tile 64 2>&1); code=$?; set -e
[ $code -eq 1 ] || fail "--tile with an MRI pipeline: exit code $code"
grep -q "cannot run on tiles" <<< "$msg" || fail "message: $msg"
set +e; msg=$("$imflow" run "$src/config/astro.yaml" --input "$work/in" --output "$work/x" --tile 4 2>&1); code=$?; set -e
[ $code -eq 1 ] && grep -q "at least 8" <<< "$msg" || fail "--tile 4: $code $msg"
"$imflow" validate "$src/config/astro.yaml" --tile 512 | grep "size: 512" > /dev/null || fail "validate shows the tile size"
echo "tiling cli tests passed"
