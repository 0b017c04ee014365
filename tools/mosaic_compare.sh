#!/usr/bin/env bash
# The real mosaic (datasets/make_mosaic.sh, >= 16,000 x 16,000 from the ESO-MIDAS images) run
# tiled (default settings) and whole (--tile 0) on one device: the same catalog (count, total
# flux; tools/compare_tiled.py checks every column: its verdict is the JSON's compare_tiled) and the
# same background. Writes OUT/compare.json.
# usage: tools/mosaic_compare.sh [IMFLOW] [OUT] [DEVICE cpu|cuda] [WxH]
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
imflow=${1:-$src/build/imflow}; out=${2:-$src/bench/results/mosaic-compare}; device=${3:-cpu}; size=${4:-16500x16300}
python=/usr/bin/python3
work=${MOSAIC_WORK:-$(mktemp -d /tmp/imflow-mosaic.XXXXXX)}; mkdir -p "$work/in" "$out"
trap '[ -n "${KEEP_MOSAIC:-}" ] || rm -rf "$work"' EXIT
[ -f "$work/in/mosaic.fits" ] || "$src/datasets/make_mosaic.sh" "$work/in/mosaic.fits" "$size"
for mode in tiled whole; do
  extra=(); [ $mode = whole ] && extra=(--tile 0)
  /usr/bin/time -v "$imflow" run "$src/config/astro.yaml" --input "$work/in" --output "$work/$mode" --device "$device" \
    "${extra[@]}" > "$work/$mode.log" 2>&1 || { tail "$work/$mode.log" >&2; exit 1; }
done
"$python" "$src/tools/compare_tiled.py" "$work/whole" "$work/tiled" | tee "$work/compare_tiled.txt"
"$python" - "$work" "$out" "$device" "$size" <<'PY'
import csv, json, re, sys
work, out, device, size = sys.argv[1:]
result = {"image": size, "device": device, "data": "ESO-MIDAS mosaic (datasets/make_mosaic.py)",
          "compare_tiled": open(f"{work}/compare_tiled.txt").read().strip()}  # every column, tools/compare_tiled.py
for mode in ("whole", "tiled"):
    summary = json.load(open(f"{work}/{mode}/summary.json"))
    item = summary["items"][0]
    rows = list(csv.DictReader(open(f"{work}/{mode}/mosaic.cat.csv")))
    log = open(f"{work}/{mode}.log").read()
    result[mode] = {"sources": len(rows), "total_flux": sum(float(r["flux"]) for r in rows),
                    "background": item["background"], "threshold": item["threshold"], "tiles": item.get("tiles"),
                    "wall_seconds": round(summary["totals"]["wall_seconds"], 2),
                    "peak_rss_megabytes": int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", log).group(1)) // 1000,
                    "stage_busy_seconds": item["seconds"]}
w, t = result["whole"], result["tiled"]
result["same_count"] = w["sources"] == t["sources"]
result["total_flux_relative_difference"] = abs(w["total_flux"] - t["total_flux"]) / abs(w["total_flux"])
json.dump(result, open(f"{out}/compare.json", "w"), indent=2)
print(json.dumps({k: v for k, v in result.items() if k not in ("whole", "tiled")}),
      {m: {k: result[m][k] for k in ("sources", "total_flux", "wall_seconds", "peak_rss_megabytes")} for m in ("whole", "tiled")})
sys.exit(0 if result["same_count"] and result["total_flux_relative_difference"] < 1e-9 else 1)
PY
