#!/usr/bin/env bash
# Read thread time per 2048x2048 float32 FITS image (16 MiB, uncompressed, from the page cache) of
# one or more imflow builds, interleaved round by round so that a busy machine slows each alike:
# `imflow bench config/astro.yaml --device cpu --threads 1 --images 32`, its `read` busy time per
# item. The inputs are bench-suite.sh's astro-2048 images (tools/gpu/make-astro-2048.py from the
# real ISAAC frame; datasets/fetch.sh first), made once under SCRATCH (default /dev/shm).
#
# usage: tools/fits_read_bench.sh [--rounds N] [--scratch DIR] [--out FILE.json --key NAME]
#            LABEL=BINARY [LABEL=BINARY ...]
# prints one line per build and round, then each build's median over the rounds and the ratios to
# the first build; --out also stores that report as NAME in FILE.json (its other keys are kept).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=5 scratch=/dev/shm/imflow-read-bench out="" key="" builds=()
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --scratch) scratch=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --key) key=$2; shift 2 ;;
    -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *=*) builds+=("$1"); shift ;;
    *) echo "fits_read_bench.sh: unknown argument $1 (see --help)" >&2; exit 1 ;;
  esac
done
[ ${#builds[@]} -gt 0 ] || { echo "fits_read_bench.sh: name at least one LABEL=BINARY" >&2; exit 1; }
[ -z "$out" ] || [ -n "$key" ] || { echo "fits_read_bench.sh: --out needs --key NAME" >&2; exit 1; }
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
python3 - "$results" "$out" "$key" "$rounds" <<'PY'
import json, os, platform, statistics, sys
results, out, key, rounds = sys.argv[1:]
times = {}
for line in open(results):
    label, ms = line.split()
    times.setdefault(label, []).append(float(ms))
report = {"unit": "read thread time per 16 MiB float32 FITS image, ms (imflow bench --device cpu --threads 1 --images 32)",
          "machine": {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count()},
          "rounds": int(rounds), "builds": {}}
for label, values in times.items():
    report["builds"][label] = {"median": statistics.median(values), "min": min(values), "max": max(values), "runs": values}
    print(f"{label}: median {statistics.median(values):.3f} ms per image (min {min(values):.3f}, max {max(values):.3f}, {len(values)} rounds)")
labels = list(times)
if len(labels) > 1:
    first = report["builds"][labels[0]]["median"]
    report["ratios_to_" + labels[0]] = {label: report["builds"][label]["median"] / first for label in labels[1:]}
    print(json.dumps(report["ratios_to_" + labels[0]]))
if out:
    stored = json.load(open(out)) if os.path.exists(out) else {}
    stored[key] = report
    with open(out + ".tmp", "w") as f:
        json.dump(stored, f, indent=1)
    os.replace(out + ".tmp", out)
PY
