#!/usr/bin/env bash
# imflow bench end to end on the committed real crops: 2 points x 2 repeats and both ceilings,
# bench.json checks; a point with a failed item must fail loudly (exit 2, the point named).
set -euo pipefail
imflow=$1; src=$2; python=${3:-python3}
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

mkdir -p "$work/in"; cp "$src"/datasets/samples/*.fits "$work/in/"
"$imflow" bench --help | grep -- "--sweep" > /dev/null || fail "bench --help"
"$imflow" -q bench "$src/config/astro.yaml" --input "$work/in" --device cpu --sweep threads=1,2 --repeat 2 \
  --warmup 1 --images 6 --trace --ceiling --out "$work/b" > "$work/table.txt" || fail "bench exit code $?"
[ -s "$work/b/bench.csv" ] || fail "bench.csv missing"
[ "$(wc -l < "$work/b/bench.csv")" -eq 3 ] || fail "bench.csv should have a header and 2 rows"
[ ! -e "$work/b/.bench-inputs" ] && [ ! -e "$work/b/.bench-scratch" ] || fail "scratch or input links left behind"
grep -q "Amdahl" "$work/table.txt" || fail "no Amdahl line in the table"
grep -q "^input ceiling (read and converted" "$work/table.txt" || fail "no input ceiling line in the table"
grep -q "^output ceiling (the last run's output files" "$work/table.txt" || fail "no output ceiling line in the table"

"$python" - "$work/b/bench.json" <<'PY'
import json, sys
b = json.load(open(sys.argv[1]))
def check(cond, what):
    if not cond: sys.exit("FAIL: bench.json: " + what)
for key in ("machine", "command_line", "date", "imflow_version", "points", "scaling", "utilisation_definition"):
    check(key in b, "missing " + key)
check(b["status"] == "ok", "status")
check(b["machine"]["cores"] > 0 and b["machine"]["hostname"], "machine info")
pts = b["points"]
check(len(pts) == 2, "two points")
for p in pts:
    check(p["repeats"] == 2 and len(p["runs"]) == 2, "two repeats per point")
    check(p["items"] >= 6, "items")
    for k in ("wall_seconds", "images_per_second", "megabytes_per_second"):
        s = p[k]
        check(0 < s["min"] <= s["median"] <= s["max"], k + " spread")
    check(p["peak_rss_megabytes"] > 0, "peak RSS")
    check(all(v > 0 for v in p["stage_busy_seconds"].values()), "busy seconds")
    check(all(0 < v <= 1.5 for v in p["utilisation"].values()), "utilisation in (0, 1.5]")
    check(p["bottleneck"]["stage"] in p["utilisation"], "bottleneck named")
    check(p["bottleneck"]["utilisation"] == max(p["utilisation"].values()), "bottleneck is the busiest stage")
    check(p["trace"].startswith("traces/"), "trace path")
base = [p for p in pts if p["engine"]["threads"] == 1][0]
check(base["scaling"]["speedup"] == 1.0, "baseline speedup 1")
check(pts[1]["scaling"]["speedup"] > 0 and "karp_flatt" in pts[1]["scaling"], "speedup of the 2-thread point")
check("amdahl" in b["scaling"]["lines"][0], "Amdahl fit")
c = b["input_ceiling"]
check(c["items"] == 6 and c["failed"] == 0 and c["threads"] == 2, "input ceiling: 6 items read on 2 threads")
check(abs(c["images_per_second"]["median"] * c["seconds"]["median"] - 6) < 1e-6, "input ceiling rate")
for p in pts:
    check(abs(p["input_ceiling_fraction"] - p["images_per_second"]["median"] / c["images_per_second"]["median"]) < 1e-9,
          "each point's share of the input ceiling")
o = b["output_ceiling"]
check(o["items"] == 6 and o["threads"] == 2 and o["files"] >= 12, "output ceiling: the 6 items' catalogs on 2 threads")
check(abs(o["images_per_second"]["median"] * o["seconds"]["median"] - 6) < 1e-6, "output ceiling rate")
for p in pts:
    check(abs(p["output_ceiling_fraction"] - p["images_per_second"]["median"] / o["images_per_second"]["median"]) < 1e-9,
          "each point's share of the output ceiling")
PY
[ -s "$work/b/traces/point-1.trace.json" ] || fail "trace"

# A broken input: the first point fails, exit 2, the message names the point.
printf 'not fits' > "$work/in/broken.fits"
set +e; err=$("$imflow" bench "$src/config/astro.yaml" --input "$work/in" --device cpu --sweep threads=1,2 \
  --repeat 1 --warmup 0 --out "$work/c" 2>&1 >/dev/null); code=$?; set -e
[ $code -eq 2 ] || fail "exit code with a failed point: $code"
grep -q "bench failed: point threads=1" <<< "$err" || fail "message should name the point: $err"
grep -q '"status": "failed"' "$work/c/bench.json" || fail "failed status in bench.json"
echo "bench test passed"
