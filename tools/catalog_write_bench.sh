#!/usr/bin/env bash
# Catalog writing time per row of one or more imflow builds, interleaved round by round so that a
# busy machine slows each alike: `imflow run config/astro.yaml --device cpu --threads 1` over the
# astro-2048 images (~3,100 sources each, 36 columns), once per output set (CSV + FITS, CSV only,
# FITS only, none), and the `write` thread time of every item over its sources from summary.json.
# "net" subtracts the run without catalogs (the summary and manifest records); "best per item"
# sums each item's fastest round (the write least disturbed by a busy machine). The inputs are
# bench-suite.sh's astro-2048 images (tools/gpu/make-astro-2048.py from the real ISAAC frame;
# datasets/fetch.sh first), made once under SCRATCH (default /dev/shm/imflow-write-bench).
#
# usage: tools/catalog_write_bench.sh [--rounds N] [--images N] [--scratch DIR] [--out FILE.json]
#                                     LABEL=BINARY [LABEL=BINARY ...]
# prints one line per build, output set and round, then the medians (and writes them to FILE.json).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=5 images=16 scratch=/dev/shm/imflow-write-bench out="" builds=()
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --images) images=$2; shift 2 ;;
    --scratch) scratch=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *=*) builds+=("$1"); shift ;;
    *) echo "catalog_write_bench.sh: unknown argument $1 (see --help)" >&2; exit 1 ;;
  esac
done
[ ${#builds[@]} -gt 0 ] || { echo "catalog_write_bench.sh: name at least one LABEL=BINARY" >&2; exit 1; }
py=""  # a Python with NumPy (the inputs are made with it): PATH's, else Debian's
for candidate in python3 /usr/bin/python3; do
  if command -v $candidate >/dev/null && $candidate -c "import numpy" 2>/dev/null; then py=$candidate; break; fi
done
[ -n "$py" ] || { echo "catalog_write_bench.sh: no python3 with NumPy (pip install numpy, or apt-get install python3-numpy)" >&2; exit 1; }
isaac=$(ls datasets/data/astro/ISAAC*.fits 2>/dev/null | head -1 || true)
if [ ! -f "$scratch/a2048/.complete" ]; then
  [ -n "$isaac" ] || { echo "catalog_write_bench.sh: datasets/data/astro/ISAAC*.fits missing (datasets/fetch.sh)" >&2; exit 1; }
  rm -rf "$scratch/a2048"
  "$py" tools/gpu/make-astro-2048.py "$isaac" "$scratch/a2048"
  touch "$scratch/a2048/.complete"
fi
input=$scratch/input
rm -rf "$input"; mkdir -p "$input"
for f in $(ls "$scratch"/a2048/c0/*.fits | head -"$images"); do ln -s "$f" "$input/"; done
cat "$input"/*.fits > /dev/null  # into the page cache
declare -A sets=([csv+fits]="[csv, fits]" [csv]="[csv]" [fits]="[fits]" [none]="[]")
for name in "${!sets[@]}"; do
  sed -e "s#^  formats: .*#  formats: ${sets[$name]}#" config/astro.yaml > "$scratch/astro-$name.yaml"
done
results=$scratch/results.txt
: > "$results"
for round in $(seq "$rounds"); do
  for build in "${builds[@]}"; do
    label=${build%%=*} binary=${build#*=}
    for name in csv+fits csv fits none; do
      rm -rf "$scratch/out"
      "$binary" -q run "$scratch/astro-$name.yaml" -i "$input" -o "$scratch/out" --device cpu --threads 1 \
        > "$scratch/run.log" 2>&1 || { tail -5 "$scratch/run.log"; exit 1; }
      # One line per item: its write seconds and sources; the round's mean per row on the terminal.
      python3 -c "import json, sys; items = json.load(open(sys.argv[1]))['items']
for i in items: print(sys.argv[2], sys.argv[3], i['file'], i['seconds']['write'], i['nsources'])" \
        "$scratch/out/summary.json" "$label" "$name" >> "$results"
      us=$(python3 -c "import json, sys; items = json.load(open(sys.argv[1]))['items']
print('%.4f' % (sum(i['seconds']['write'] for i in items) / sum(i['nsources'] for i in items) * 1e6))" "$scratch/out/summary.json")
      echo "round $round $label $name write $us us per row"
    done
  done
done
python3 - "$results" "$out" "$images" <<'PY'
import json, statistics, sys
items = {}  # (label, set) -> {file: ([write seconds per round], sources)}
for line in open(sys.argv[1]):
    label, name, file, seconds, sources = line.split()
    times, _ = items.setdefault((label, name), {}).setdefault(file, ([], int(sources)))
    times.append(float(seconds))
runs, best = {}, {}
for (label, name), files in items.items():
    rows = sum(sources for _, sources in files.values())
    rounds = len(next(iter(files.values()))[0])
    # each round's mean per row, and "best": each item's fastest round (the write least disturbed
    # by the machine), summed over items
    runs.setdefault(label, {})[name] = [sum(t[r] for t, _ in files.values()) / rows * 1e6 for r in range(rounds)]
    best.setdefault(label, {})[name] = sum(min(t) for t, _ in files.values()) / rows * 1e6
report = {"images": int(sys.argv[3]), "unit": "write thread time per catalog row, microseconds", "builds": {}}
for label, sets in runs.items():
    entry = report["builds"][label] = {}
    for name, values in sets.items():
        entry[name] = {"median": statistics.median(values), "min": min(values), "max": max(values), "runs": values,
                       "best_per_item": best[label][name]}
    for name in ("csv+fits", "csv", "fits"):
        entry[name]["net_median"] = entry[name]["median"] - entry["none"]["median"]
        entry[name]["net_best_per_item"] = entry[name]["best_per_item"] - entry["none"]["best_per_item"]
    print(f"{label}: " + ", ".join(f"{n} {entry[n]['median']:.3f} (net {entry[n]['net_median']:.3f}, best per item {entry[n]['best_per_item']:.3f})"
                                    for n in ("csv+fits", "csv", "fits")) + f", none {entry['none']['median']:.3f} us per row")
labels = list(runs)
if len(labels) > 1:
    report["ratios_to_" + labels[0]] = {
        label: {**{n: report["builds"][label][n]["median"] / report["builds"][labels[0]][n]["median"] for n in ("csv+fits", "csv", "fits")},
                **{n + " best per item": report["builds"][label][n]["best_per_item"] / report["builds"][labels[0]][n]["best_per_item"]
                   for n in ("csv+fits", "csv", "fits")}}
        for label in labels[1:]}
    print(json.dumps(report["ratios_to_" + labels[0]]))
if sys.argv[2]:
    json.dump(report, open(sys.argv[2], "w"), indent=1)
PY
