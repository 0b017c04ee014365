#!/usr/bin/env bash
# Kill `imflow run` with SIGKILL at random moments (when the manifest reaches a random line count),
# resume, and compare every output byte for byte with an uninterrupted run; then input/output changes.
set -euo pipefail
imflow=$1; src=$2; trials=${3:-5}
here=$(dirname "$0"); source "$here/common.sh"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
/usr/bin/python3 "$here/make_fields.py" "$work/in" 100 96
printf 'input: {recursive: true}\noutput: {formats: [csv, fits, bgsub]}\ndevice: cpu\nsteps: [background, segment, label, measure]\n' > "$work/p.yaml"
run --output "$work/ref"
killed=0
for ((t = 1; t <= trials; t++)); do
  out="$work/out$t"; target=$((2 + RANDOM % 95))
  start --output "$out"
  wait_lines "$out/manifest.jsonl" "$target" "$pid"
  kill -KILL "$pid" 2>/dev/null && killed=$((killed + 1)) || true
  wait "$pid" 2>/dev/null || true
  at_kill=$(lines "$out/manifest.jsonl")
  run --output "$out" --resume || fail "trial $t: resume exit $?"
  same_outputs "$work/ref" "$out"; no_temporaries "$out"
  /usr/bin/python3 - "$out/summary.json" <<'PY' || fail "trial $t: summary after resume"
import json, sys
t = json.load(open(sys.argv[1]))["totals"]
assert t["items"] == 100 and t["failed"] == 0, t
PY
  echo "trial $t: killed at $at_kill manifest lines (target $target), resumed: outputs identical"
done
[ "$killed" -gt 0 ] || fail "no trial killed the run while it was running"

# An input whose content changed (same size) is redone; a damaged output is rewritten.
out="$work/out1"
/usr/bin/python3 -c "
from astropy.io import fits; import sys
with fits.open(sys.argv[1], mode='update') as h: h[0].data[10:20, 10:20] += 5000
" "$work/in/f001.fits"
printf 'x' >> "$out/f002.cat.csv"
rm "$out/f003.bgsub.fits"
run --output "$out" --resume
grep -q '"skipped": 97' "$out/summary.json" || fail "resume after changes should skip 97 items: $(grep '"skipped"' "$out/summary.json")"
run --output "$work/ref2"
same_outputs "$work/ref2" "$out"
# A companion file (input.mask) that changed redoes its item only: f001's mask gains a masked
# half, f002's and f003's are left alone and their items skipped.
mkdir -p "$work/min"; cp "$work/in/f001.fits" "$work/in/f002.fits" "$work/in/f003.fits" "$work/min/"
/usr/bin/python3 -c "
import numpy as np, sys
from astropy.io import fits
for name in sys.argv[1:]: fits.PrimaryHDU(np.zeros((96, 96), np.float32)).writeto(name.replace('.fits', '.mask.fits'))
" "$work/min/f001.fits" "$work/min/f002.fits" "$work/min/f003.fits"
printf 'input: {mask: {image: "{stem}.mask.fits"}}\noutput: {formats: [csv]}\ndevice: cpu\nsteps: [background, segment, label, measure]\n' > "$work/pm.yaml"
"$imflow" -q run "$work/pm.yaml" --input "$work/min" --output "$work/mout" --threads 2
cp "$work/mout/f001.cat.csv" "$work/f001.before.csv"
/usr/bin/python3 -c "
import numpy as np, sys
from astropy.io import fits
mask = np.zeros((96, 96), np.float32); mask[:, :48] = 1
fits.PrimaryHDU(mask).writeto(sys.argv[1], overwrite=True)
" "$work/min/f001.mask.fits"
"$imflow" -q run "$work/pm.yaml" --input "$work/min" --output "$work/mout" --threads 2 --resume
/usr/bin/python3 - "$work/mout/summary.json" <<'PY' || fail "resume after a changed mask should redo f001 alone (above: totals, skipped items)"
import json, sys
summary = json.load(open(sys.argv[1]))
skipped = sorted(i["file"].rsplit("/", 1)[-1] for i in summary["items"] if i.get("skipped"))
assert summary["totals"]["items"] == 3 and skipped == ["f002.fits", "f003.fits"], (summary["totals"], skipped)
PY
cmp -s "$work/f001.before.csv" "$work/mout/f001.cat.csv" && fail "f001 was not measured again with its new mask"
"$imflow" -q run "$work/pm.yaml" --input "$work/min" --output "$work/mref" --threads 2
same_outputs "$work/mref" "$work/mout"
# A resume with different steps is refused (exit 3), not mixed with old results.
printf 'input: {recursive: true}\noutput: {formats: [csv, fits, bgsub]}\ndevice: cpu\nsteps: [background, {segment: {nsigma: 3}}, label, measure]\n' > "$work/p2.yaml"
set +e; "$imflow" -q run "$work/p2.yaml" --input "$work/in" --output "$out" --resume; code=$?; set -e
[ $code -eq 3 ] || fail "resume with a changed pipeline: exit $code, expected 3"
echo "resume tests passed ($killed of $trials trials killed mid-run)"
