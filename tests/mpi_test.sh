#!/usr/bin/env bash
# MPI on the CPU backend: `mpirun -n 2` over the real crops and synthetic copies gives the same
# merged catalog, the same merged FITS_LDAC of a two-extension file (rank 0 writes it from the
# merged summary, whichever rank ran the file) and the same per-item results as one process.
set -euo pipefail
imflow=$1; src=$2
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
mkdir -p "$work/in/sub"
cp "$src"/datasets/samples/*.fits "$work/in/"
for i in $(seq 1 9); do cp "$src/datasets/samples/dss_crop.fits" "$work/in/sub/d$i.fits"; done
printf 'not fits' > "$work/in/broken.fits"
/usr/bin/python3 -c "
from astropy.io import fits
import sys
crops = [fits.getdata(sys.argv[1] + '/datasets/samples/' + n + '_crop.fits') for n in ('dss', 'isaac')]
fits.HDUList([fits.PrimaryHDU()] + [fits.ImageHDU(c, name='SCI') for c in crops]).writeto(sys.argv[2])
" "$src" "$work/in/mef.fits"
sed 's/formats: \[csv, fits\]/formats: [csv, fits, ldac]/' "$src/config/astro.yaml" > "$work/astro.yaml"
grep -q 'ldac' "$work/astro.yaml" || { echo "FAIL: config/astro.yaml's formats line changed"; exit 1; }
set +e
"$imflow" -q run "$work/astro.yaml" --input "$work/in" --output "$work/one" --device cpu --threads 1; one=$?
mpirun -n 2 --oversubscribe --allow-run-as-root "$imflow" -q run "$work/astro.yaml" \
  --input "$work/in" --output "$work/two" --device cpu --threads 1; two=$?
set -e
[ "$one" -eq 2 ] && [ "$two" -eq 2 ] || { echo "FAIL: exit codes $one (1 process) and $two (mpirun -n 2), want 2"; exit 1; }
cmp "$work/one/catalog.csv" "$work/two/catalog.csv" || { echo "FAIL: merged catalogs differ"; exit 1; }
cmp "$work/one/mef.ldac" "$work/two/mef.ldac" || { echo "FAIL: merged FITS_LDAC files of mef.fits differ"; exit 1; }
/usr/bin/python3 - "$work/one/summary.json" "$work/two/summary.json" <<'PY'
import json, sys
one, two = (json.load(open(p)) for p in sys.argv[1:3])
key = lambda i: (i["file"], i["hdu"], i["plane"])
a = {key(i): (i["status"], i.get("nsources")) for i in one["items"]}
b = {key(i): (i["status"], i.get("nsources")) for i in two["items"]}
assert a == b, f"per-item results differ:\n{a}\n{b}"
ranks = {i["rank"] for i in two["items"]}
assert ranks == {0, 1}, f"both ranks should have processed items, got {ranks}"
assert two["totals"]["items"] == one["totals"]["items"] == 14, (one["totals"], two["totals"])
print(f"mpi test passed: {len(a)} items, ranks {sorted(ranks)}")
PY
