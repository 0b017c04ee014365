#!/usr/bin/env bash
# Read thread time per 2048x2048 float32 FITS image (16 MiB, uncompressed, from the page cache) of
# one or more imflow builds, interleaved round by round so that a busy machine slows each alike:
# `imflow bench config/astro.yaml --device cpu --threads 1 --images 32`, its `read` busy time per
# item. The inputs are bench-suite.sh's astro-2048 images (tools/gpu/make-astro-2048.py from the
# real ISAAC frame; datasets/fetch.sh first), made once under SCRATCH (default /dev/shm).
#
# usage: tools/fits_read_bench.sh [--rounds N] [--scratch DIR] LABEL=BINARY [LABEL=BINARY ...]
# prints one line per build and round, then each build's median over the rounds.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=5 scratch=/dev/shm/imflow-read-bench builds=()
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --scratch) scratch=$2; shift 2 ;;
    -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *=*) builds+=("$1"); shift ;;
    *) echo "fits_read_bench.sh: unknown argument $1 (see --help)" >&2; exit 1 ;;
  esac
done
[ ${#builds[@]} -gt 0 ] || { echo "fits_read_bench.sh: name at least one LABEL=BINARY" >&2; exit 1; }
py=""  # a Python with NumPy (the inputs are made with it): PATH's, else Debian's
for candidate in python3 /usr/bin/python3; do
  if command -v $candidate >/dev/null && $candidate -c "import numpy" 2>/dev/null; then py=$candidate; break; fi
done
[ -n "$py" ] || { echo "fits_read_bench.sh: no python3 with NumPy (pip install numpy, or apt-get install python3-numpy)" >&2; exit 1; }
isaac=$(ls datasets/data/astro/ISAAC*.fits 2>/dev/null | head -1 || true)
[ -n "$isaac" ] || { echo "fits_read_bench.sh: datasets/data/astro/ISAAC*.fits missing (datasets/fetch.sh)" >&2; exit 1; }
if [ ! -f "$scratch/a2048/.complete" ]; then
  rm -rf "$scratch/a2048"
  "$py" tools/gpu/make-astro-2048.py "$isaac" "$scratch/a2048"
  touch "$scratch/a2048/.complete"
fi
cat "$scratch"/a2048/c0/*.fits > /dev/null  # into the page cache
results=$scratch/results.txt
: > "$results"
for round in $(seq "$rounds"); do
  for build in "${builds[@]}"; do
    label=${build%%=*} binary=${build#*=}
    rm -rf "$scratch/out"
    "$binary" -q bench config/astro.yaml --input "$scratch/a2048/c0" --device cpu --threads 1 --images 32 \
      --out "$scratch/out" > "$scratch/bench.log" 2>&1 || { tail -5 "$scratch/bench.log"; exit 1; }
    ms=$(python3 -c "import csv, sys; r = next(csv.DictReader(open(sys.argv[1])));
print('%.3f' % (float(r['busy_read']) / int(r['items']) * 1e3))" "$scratch/out/bench.csv")
    echo "round $round $label read $ms ms per image"
    echo "$label $ms" >> "$results"
  done
done
python3 - "$results" <<'PY'
import statistics, sys
times = {}
for line in open(sys.argv[1]):
    label, ms = line.split()
    times.setdefault(label, []).append(float(ms))
for label, values in times.items():
    print(f"{label}: median {statistics.median(values):.3f} ms per image (min {min(values):.3f}, max {max(values):.3f}, {len(values)} rounds)")
PY
