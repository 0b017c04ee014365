#!/usr/bin/env bash
# Offline smoke test of the comparison tooling (no peers, no network): a seeded 256x256 star field
# without sky gradient, imflow with config/peers-global.yaml through imflow_run.py, scored by
# truth_eval.py and cross-matched with itself; and a 320x320 crowded field (close pairs, galaxies)
# through config/peers-deblend.yaml with and without its deblend step, scored one-to-one.
# Debian's python3 (numpy/scipy/yaml) only.
# Usage: tools/peers/smoke_test.sh IMFLOW_BINARY
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
imflow=$(realpath "${1:?usage: smoke_test.sh IMFLOW_BINARY}")
PY=/usr/bin/python3
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
cd "$here/../.."
$PY "$here/make_starfield.py" --out "$tmp/truth" --size 256 --psf moffat --gradient-x 0 --gradient-y 0 \
    --area-per-star 2000 --flux-min 3000 > /dev/null
mkdir "$tmp/img"; mv "$tmp/truth/"*.fits "$tmp/img/"
$PY "$here/imflow_run.py" --imflow "$imflow" --pipeline config/peers-global.yaml --images "$tmp/img" \
    --out "$tmp/imflow" --threads 1
$PY "$here/truth_eval.py" --truth "$tmp/truth" --tool "imflow=$tmp/imflow" --out "$tmp/truth.json" --snr 30 > /dev/null
$PY "$here/crossmatch.py" "$tmp/imflow" "$tmp/imflow" --out "$tmp/self.json" > /dev/null
$PY "$here/make_starfield.py" --out "$tmp/crowd" --size 320 --psf gauss --crowded > /dev/null
mkdir "$tmp/crowd-img"; mv "$tmp/crowd/"*.fits "$tmp/crowd-img/"
for variant in "" nosplit; do
    $PY "$here/imflow_run.py" --imflow "$imflow" --pipeline config/peers-deblend.yaml --images "$tmp/crowd-img" \
        --out "$tmp/deblend$variant" --threads 1 ${variant:+--deblend-variant $variant}
done
$PY "$here/truth_eval.py" --truth "$tmp/crowd" --tool "deblend=$tmp/deblend" --tool "nosplit=$tmp/deblendnosplit" \
    --out "$tmp/crowd.json" --one-to-one > /dev/null
$PY - "$tmp" <<'PY'
import json, sys
tmp = sys.argv[1]
field = json.load(open(f"{tmp}/truth.json"))["tools"]["imflow"]["star_256_moffat"]
self_match = json.load(open(f"{tmp}/self.json"))["pooled"]
timing = json.load(open(f"{tmp}/imflow/timing.json"))
crowd = {t: r["crowd_320_gauss"] for t, r in json.load(open(f"{tmp}/crowd.json"))["tools"].items()}
checks = {
    "stars were made": field["stars"] >= 25,
    "bright stars found (completeness S/N>=30 >= 0.9)": field["completeness_snr_ge_30"] >= 0.9,
    "detections are stars (purity >= 0.9)": field["purity"] >= 0.9,
    "self cross-match is exact": self_match["fraction_a_matched"] == 1.0
        and self_match["median_flux_ratio"] == 1.0 and self_match["p95_offset_px"] == 0.0,
    "timing recorded": timing["images"][0]["seconds"] > 0 and timing["images"][0]["width"] == 256,
    "crowded field has pairs and galaxies": crowd["deblend"]["pair_stars"] >= 80 and crowd["deblend"]["galaxies"] >= 5,
    "deblending finds more pair stars than no splitting":
        crowd["deblend"]["pair_star_completeness"] > crowd["nosplit"]["pair_star_completeness"] + 0.1,
}
for name, ok in checks.items():
    print(("ok     " if ok else "FAILED ") + name)
failed = sum(not ok for ok in checks.values())
print(f"peers smoke: {len(checks) - failed} passed, {failed} failed")
sys.exit(1 if failed else 0)
PY
