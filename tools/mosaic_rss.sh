#!/usr/bin/env bash
# Peak RSS of a tiled run on a large mosaic (a 32,000 x 32,000 float32 image, 4 GB, must
# stay under 1.5 GB on the CPU backend with default settings). Builds the mosaic with
# datasets/make_mosaic.py (real ESO data when datasets/fetch.sh has run, else --synthetic), runs
# `imflow run config/astro.yaml --device cpu` under /usr/bin/time -v with no other option, and
# writes OUT/rss.json. Exit 1 when the peak RSS exceeds the limit.
# usage: tools/mosaic_rss.sh [IMFLOW] [WxH] [OUT] [LIMIT_MB] [THREADS]
#   defaults: build/imflow 32000x32000 bench/results/mosaic-rss 1500, all cores (THREADS: --threads,
#   e.g. 16 on a 2-core host: the memory bound must not grow with the thread count)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
imflow=${1:-$src/build/imflow}; size=${2:-32000x32000}; out=${3:-$src/bench/results/mosaic-rss}; limit=${4:-1500}
threads=(); [ -n "${5:-}" ] && threads=(--threads "$5")
width=${size%x*}; height=${size#*x}
bytes=$((width * height * 4))
work=${MOSAIC_WORK:-$(mktemp -d /tmp/imflow-mosaic.XXXXXX)}; mkdir -p "$work"
trap '[ -n "${KEEP_MOSAIC:-}" ] || rm -rf "$work"' EXIT
free=$(df -B1 --output=avail "$work" | tail -1)
[ "$free" -gt $((bytes + bytes / 10 + (1 << 30))) ] || { echo "need $((bytes / (1 << 20))) MiB free under $work (have $((free / (1 << 20))))" >&2; exit 1; }
mkdir -p "$work/in" "$out"
kind=--synthetic
[ -f "$src/datasets/data/astro/ISAAC.2006-04-13T06-32-38.944.fits" ] && kind="--from $src/datasets/data/astro"
[ -f "$work/in/mosaic.fits" ] || /usr/bin/python3 "$src/datasets/make_mosaic.py" "$work/in/mosaic.fits" --size "$size" $kind
/usr/bin/time -v "$imflow" run "$src/config/astro.yaml" --input "$work/in" --output "$work/out" --device cpu "${threads[@]}" \
  2> "$out/time.txt" > "$out/imflow.log" || { cat "$out/time.txt" >&2; exit 1; }
cp "$work/out/summary.json" "$out/summary.json"
/usr/bin/python3 - "$out" "$size" "$limit" "$kind" <<'PY'
import json, re, sys
out, size, limit, kind = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
text = open(f"{out}/time.txt").read()
rss_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", text).group(1))
wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (\S+)", text).group(1)
summary = json.load(open(f"{out}/summary.json"))
item = summary["items"][0]
result = {"image": size, "data": "synthetic" if "synthetic" in kind else "ESO-MIDAS mosaic (datasets/make_mosaic.py)",
          "image_megabytes": round(item["width"] * item["height"] * 4 / 1e6, 1),
          "peak_rss_megabytes": round(rss_kb * 1024 / 1e6, 1), "limit_megabytes": limit, "wall": wall,
          "threads": summary["threads"], "buffers": summary["buffers"], "tiling": summary.get("tiling"),
          "tiles": item.get("tiles"), "sources": item.get("nsources"), "status": item["status"],
          "megapixels_per_second": round(summary["totals"]["megapixels"] / summary["totals"]["wall_seconds"], 1)}
json.dump(result, open(f"{out}/rss.json", "w"), indent=2)
print(json.dumps(result))
sys.exit(0 if result["status"] == "ok" and result["peak_rss_megabytes"] <= limit else
         f"peak RSS {result['peak_rss_megabytes']} MB over the limit {limit} MB (or the run failed)")
PY
