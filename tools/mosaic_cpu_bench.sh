#!/usr/bin/env bash
# CPU throughput on a large mosaic, imflow vs Debian's SExtractor (source-extractor) on the same
# image in the same run, with equivalent settings: imflow's global kappa-sigma background and
# 5-sigma threshold (its median and std are handed to SExtractor as BACK_TYPE MANUAL / THRESH_TYPE
# ABSOLUTE), no filtering, no deblending (DEBLEND_MINCONT 1), no cleaning, minimum area 1,
# 8-connected segments (SExtractor's only connectivity). Megapixels/s = image pixels / wall time
# of the whole command (reading, background, detection, measurement, catalog writing).
# Writes OUT/bench.json. usage: tools/mosaic_cpu_bench.sh [IMFLOW] [OUT] [WxH]
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
imflow=${1:-$src/build/imflow}; out=${2:-$src/bench/results/mosaic-cpu}; size=${3:-16500x16300}
command -v source-extractor >/dev/null || { apt-get install -y -qq source-extractor >/dev/null || apt-get update -qq && apt-get install -y -qq source-extractor; }
work=${MOSAIC_WORK:-$(mktemp -d /tmp/imflow-sexbench.XXXXXX)}; mkdir -p "$work/in" "$out"
trap '[ -n "${KEEP_MOSAIC:-}" ] || rm -rf "$work"' EXIT
kind=--synthetic
[ -f "$src/datasets/data/astro/ISAAC.2006-04-13T06-32-38.944.fits" ] && kind="--from $src/datasets/data/astro"
[ -f "$work/in/mosaic.fits" ] || /usr/bin/python3 "$src/datasets/make_mosaic.py" "$work/in/mosaic.fits" --size "$size" $kind
cat > "$work/imflow.yaml" <<'YAML'
output: {formats: [csv]}
steps:
  - background: {kappa: 3, max_iters: 100}
  - segment: {nsigma: 5}
  - label: {connectivity: 8}
  - measure
YAML
cat "$work/in/mosaic.fits" > /dev/null  # both read it from the page cache
timed() {  # timed NAME COMMAND...: wall seconds into $work/NAME.seconds
  local name=$1; shift
  local start; start=$(date +%s%N)
  "$@" > "$work/$name.log" 2>&1 || { cat "$work/$name.log" >&2; exit 1; }
  echo $(( $(date +%s%N) - start )) > "$work/$name.ns"
}
timed imflow "$imflow" run "$work/imflow.yaml" --input "$work/in" --output "$work/imflow-out" --device cpu
timed imflow1 "$imflow" run "$work/imflow.yaml" --input "$work/in" --output "$work/imflow-out1" --device cpu --threads 1
read -r median std threshold < <(/usr/bin/python3 -c "
import json; i = json.load(open('$work/imflow-out/summary.json'))['items'][0]
print(i['background']['median'], i['background']['std'], i['threshold'] - i['background']['median'])")
printf 'NUMBER\nX_IMAGE\nY_IMAGE\nFLUX_ISO\nISOAREA_IMAGE\n' > "$work/sex.param"
cat > "$work/sex.conf" <<CONF
CATALOG_NAME     $work/sex.cat
CATALOG_TYPE     ASCII_HEAD
PARAMETERS_NAME  $work/sex.param
DETECT_TYPE      CCD
DETECT_MINAREA   1
THRESH_TYPE      ABSOLUTE
DETECT_THRESH    $threshold
ANALYSIS_THRESH  $threshold
FILTER           N
DEBLEND_NTHRESH  1
DEBLEND_MINCONT  1.0
CLEAN            N
MASK_TYPE        NONE
PHOT_APERTURES   5
SATUR_LEVEL      1e18
BACK_TYPE        MANUAL
BACK_VALUE       $median
CHECKIMAGE_TYPE  NONE
MEMORY_OBJSTACK  65000
MEMORY_PIXSTACK  60000000
MEMORY_BUFSIZE   4096
NTHREADS         0
VERBOSE_TYPE     QUIET
CONF
timed sextractor source-extractor "$work/in/mosaic.fits" -c "$work/sex.conf"
/usr/bin/python3 - "$work" "$out" "$size" "$kind" "$median" "$std" "$threshold" <<'PY'
import csv, json, os, subprocess, sys
work, out, size, kind, median, std, threshold = sys.argv[1:]
w, h = (int(v) for v in size.split("x"))
mpix = w * h / 1e6
seconds = {k: int(open(f"{work}/{k}.ns").read()) / 1e9 for k in ("imflow", "imflow1", "sextractor")}
imflow_rows = list(csv.DictReader(open(f"{work}/imflow-out/mosaic.cat.csv")))
sex_rows = [l.split() for l in open(f"{work}/sex.cat") if not l.startswith("#")]
version = subprocess.run(["source-extractor", "-v"], capture_output=True, text=True).stdout.strip()
result = {
    "image": size, "megapixels": round(mpix, 1),
    "data": "synthetic" if "synthetic" in kind else "ESO-MIDAS mosaic (datasets/make_mosaic.py)",
    "cpu": open("/proc/cpuinfo").read().split("model name")[1].split(":")[1].split("\n")[0].strip(),
    "cores": os.cpu_count(), "sextractor": version,
    "settings": {"background_median": float(median), "background_std": float(std), "threshold_above_background": float(threshold),
                 "connectivity": 8, "minarea": 1, "deblending": "off", "filter": "off", "clean": "off"},
    "imflow": {"seconds": round(seconds["imflow"], 2), "megapixels_per_second": round(mpix / seconds["imflow"], 1),
               "threads": os.cpu_count(), "sources": len(imflow_rows),
               "flux_iso_total": sum(float(r["flux_iso"]) for r in imflow_rows) if imflow_rows and "flux_iso" in imflow_rows[0] else None},
    "imflow_1_thread": {"seconds": round(seconds["imflow1"], 2), "megapixels_per_second": round(mpix / seconds["imflow1"], 1)},
    "sextractor_run": {"seconds": round(seconds["sextractor"], 2), "megapixels_per_second": round(mpix / seconds["sextractor"], 1),
                       "sources": len(sex_rows), "flux_iso_total": sum(float(r[3]) for r in sex_rows)},
}
result["imflow_pipeline"] = open(f"{work}/imflow.yaml").read()  # the two configurations, as run
result["sextractor_config"] = open(f"{work}/sex.conf").read()
result["ratio_imflow_over_sextractor"] = round(seconds["sextractor"] / seconds["imflow"], 2)
result["ratio_1_thread"] = round(seconds["sextractor"] / seconds["imflow1"], 2)
json.dump(result, open(f"{out}/bench.json", "w"), indent=2)
print(json.dumps(result, indent=2))
PY
