#!/usr/bin/env bash
# Build the real-data mosaic (default 16500 x 16300 float32, ~1.1 GB) from the ESO-MIDAS images
# that datasets/fetch.sh fetched: datasets/make_mosaic.py describes how it is combined.
# usage: datasets/make_mosaic.sh [OUT.fits] [WxH]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/data/mosaic/mosaic.fits}; size=${2:-16500x16300}
[ -f "$here/data/.complete" ] || "$here/fetch.sh" "$here/data"
mkdir -p "$(dirname "$out")"
/usr/bin/python3 "$here/make_mosaic.py" "$out" --size "$size" --from "$here/data/astro"
