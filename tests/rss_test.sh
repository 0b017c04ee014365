#!/usr/bin/env bash
# Bounded memory: peak RSS with 2,000 inputs is about that with 20 (the pool of work items, not
# the number of files, bounds memory).
set -euo pipefail
imflow=$1; src=$2
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
mkdir -p "$work/in20" "$work/in2000"
cp "$src/datasets/samples/isaac_crop.fits" "$work/in20/f0.fits"
for i in $(seq 1 19); do ln "$work/in20/f0.fits" "$work/in20/f$i.fits"; done
for i in $(seq 0 1999); do ln "$work/in20/f0.fits" "$work/in2000/f$i.fits"; done
peak() {
  "$imflow" -q run "$src/config/astro.yaml" --input "$1" --output "$2" --device cpu --threads 2 --buffers 4
  /usr/bin/python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['totals']['peak_rss_megabytes'])" "$2/summary.json"
}
small=$(peak "$work/in20" "$work/out20")
large=$(peak "$work/in2000" "$work/out2000")
echo "peak RSS: 20 inputs ${small} MB, 2000 inputs ${large} MB"
/usr/bin/python3 - "$small" "$large" <<'PY'
import sys
small, large = map(float, sys.argv[1:])
# Allow the per-item summary records (~1 kB each) plus allocator noise, but not images.
limit = small * 1.25 + 8
sys.exit(0 if large <= limit else f"peak RSS grew with the number of inputs: {small} MB -> {large} MB (limit {limit:.1f})")
PY
