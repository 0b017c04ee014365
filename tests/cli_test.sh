#!/usr/bin/env bash
# CLI end to end on the committed real crops: --help/--version, validate, run, exit codes.
set -euo pipefail
imflow=$1; src=$2
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$imflow" --version | grep "^imflow [0-9]" > /dev/null || fail "--version"
# cuBLAS and cuSOLVER open only when a GPU SVD step runs (cuda/linear_algebra.hpp), not at start.
if LD_DEBUG=libs "$imflow" --version 2>&1 | grep -E "find library=lib(cublas|cusolver)"; then
  fail "cuBLAS or cuSOLVER is loaded when imflow starts"
fi
for sub in run validate steps; do "$imflow" $sub --help | grep "Usage" > /dev/null || fail "$sub --help"; done
"$imflow" --help | grep "Exit codes" > /dev/null || fail "--help lists exit codes"

# validate prints the resolved pipeline; a bad key is exit 1 with file:line:col.
"$imflow" validate "$src/config/astro.yaml" | grep "kappa: 3" > /dev/null || fail "validate defaults"
printf 'steps:\n  - background: {kapa: 3}\n' > "$work/bad.yaml"
set +e; msg=$("$imflow" validate "$work/bad.yaml" 2>&1); code=$?; set -e
[ $code -eq 1 ] || fail "bad pipeline exit code $code"
grep -q "bad.yaml:2:.*kapa" <<< "$msg" || fail "bad key message: $msg"

# A run over the real crops: exit 0, catalogs and summary written.
mkdir -p "$work/in"; cp "$src"/datasets/samples/*.fits "$work/in/"
"$imflow" -q run "$src/config/astro.yaml" --input "$work/in" --output "$work/out" --device cpu --threads 2
[ -s "$work/out/isaac_crop.cat.csv" ] && [ -s "$work/out/isaac_crop.cat.fits" ] || fail "catalogs missing"
[ "$(($(wc -l < "$work/out/isaac_crop.cat.csv") - 1))" -eq 38 ] || fail "isaac_crop should have 38 sources"
grep -q '"failed": 0' "$work/out/summary.json" || fail "summary"

# One bad file: one error line naming it, exit 2, the good files still processed.
printf 'not fits' > "$work/in/broken.fits"
set +e; err=$("$imflow" run "$src/config/astro.yaml" --input "$work/in" --output "$work/out2" --device cpu 2>&1 >/dev/null); code=$?; set -e
[ $code -eq 2 ] || fail "exit code with a bad file: $code"
[ "$(echo "$err" | grep -c 'error: .*broken.fits')" -eq 1 ] || fail "one error line naming broken.fits: $err"
[ -s "$work/out2/dss_crop.cat.csv" ] || fail "good files processed despite the bad one"
# --extname selects FITS HDUs by EXTNAME: the crops have none, so each fails naming its HDUs.
set +e; err=$("$imflow" run "$src/config/astro.yaml" --input "$work/in" --output "$work/out4" --device cpu --extname SCI 2>&1 >/dev/null); code=$?; set -e
[ $code -eq 2 ] || fail "exit code with --extname SCI: $code"
grep -q "dss_crop.fits: no image HDU with EXTNAME SCI (input.extnames); its image HDUs: 0 (no EXTNAME)" <<< "$err" \
  || fail "--extname message: $err"
# No input directory: the run cannot start, exit 3 naming it (not 1: the pipeline is fine).
set +e; err=$("$imflow" run "$src/config/astro.yaml" --input "$work/absent" --output "$work/out3" --device cpu 2>&1); code=$?; set -e
[ $code -eq 3 ] || fail "exit code without the input directory: $code"
grep -q "absent: no such input file or directory" <<< "$err" || fail "missing input message: $err"
# No file matching the patterns (a typo in a pattern): exit 3 too, nothing written.
mkdir -p "$work/empty"
set +e; err=$("$imflow" run "$src/config/astro.yaml" --input "$work/empty" --output "$work/out5" --device cpu 2>&1); code=$?; set -e
[ $code -eq 3 ] || fail "exit code without a matching input: $code"
grep -q "empty: no input file matches the patterns" <<< "$err" || fail "no matching input message: $err"
# A --summary path that cannot be made fails before any item (exit 3, naming the option); an empty
# --output (an unset variable) is an error, not the pipeline's own output.dir.
touch "$work/afile"
set +e; err=$("$imflow" run "$src/config/astro.yaml" --input "$work/in" --output "$work/out6" --device cpu --summary "$work/afile/s.json" 2>&1); code=$?; set -e
[ $code -eq 3 ] || fail "exit code with an unusable --summary: $code"
grep -q -- "--summary $work/afile/s.json: cannot create its directory" <<< "$err" || fail "--summary message: $err"
[ ! -e "$work/out6" ] || fail "outputs written before the --summary path was checked"
set +e; err=$("$imflow" run "$src/config/astro.yaml" --input "$work/in" --output "" --device cpu 2>&1); code=$?; set -e
[ $code -eq 1 ] || fail "exit code with --output '': $code"
# -q (and -v) also after the subcommand's name: a clean run then prints nothing.
mkdir -p "$work/in7"; cp "$src"/datasets/samples/*.fits "$work/in7/"
err=$("$imflow" run "$src/config/astro.yaml" --input "$work/in7" --output "$work/out7" --device cpu -q 2>&1) || fail "run ... -q"
[ -z "$err" ] || fail "run ... -q printed: $err"
err=$("$imflow" run "$src/config/astro.yaml" --input "$work/in7" --output "$work/out8" --device cpu --streams 2 2>&1) || fail "run --streams"
grep -q -- "--streams: no effect on the CPU backend" <<< "$err" || fail "--streams with --device cpu not said to do nothing: $err"
# An unknown subcommand is named; a value that is not a number is said not to be one.
set +e; err=$("$imflow" rnu "$src/config/astro.yaml" 2>&1); code=$?; set -e
[ $code -eq 1 ] && grep -q "unknown subcommand 'rnu'" <<< "$err" || fail "unknown subcommand ($code): $err"
set +e; err=$("$imflow" run "$src/config/astro.yaml" -j abc 2>&1); code=$?; set -e
[ $code -eq 1 ] && grep -q "Value abc is not a whole number" <<< "$err" || fail "-j abc ($code): $err"
"$imflow" bench --help | grep -q -- "-o,--out,--output" || fail "bench takes --output as run does"
# What `validate` prints loads again, for every shipped pipeline.
for config in "$src"/config/*.yaml; do
  "$imflow" validate "$config" > "$work/validated.yaml" 2>/dev/null || fail "validate $config"
  "$imflow" validate "$work/validated.yaml" > /dev/null 2>&1 || fail "validate's output of $config does not load again"
done
echo "cli tests passed"
