#!/usr/bin/env bash
# Fuzz regressions: the kept crashers (tests/fuzz/regressions/<target>/), the seed inputs that
# tools/fuzz.sh starts from and the generated bad inputs (tests/bad_inputs), replayed through each
# fuzz target's entry point (imflow_fuzz_replay); a crash, an uncaught exception or a sanitizer
# report fails. Usage: replay_test.sh IMFLOW_FUZZ_REPLAY SOURCE_DIR [PYTHON]
set -euo pipefail
replay=$1; src=$2; python=${3:-/usr/bin/python3}
work=$(mktemp -d); trap 'chmod -R u+rwX "$work" 2>/dev/null; rm -rf "$work"' EXIT
"$python" "$src/tests/bad_inputs/make_bad_inputs.py" "$work/bad" "$work/outside" > /dev/null
# Regular readable files only: the bad inputs also hold a FIFO, a symlink loop and an unreadable file.
mapfile -t bad < <(find "$work/bad" -type f -readable ! -name expected.json | sort)
kept() { [ -d "$src/tests/fuzz/regressions/$1" ] && echo "$src/tests/fuzz/regressions/$1"; true; }
# The NIfTI target reads uncompressed bytes (like its corpus): inflate every .nii.gz, keeping what
# a truncated one yields.
mkdir -p "$work/nii"
for f in "$src"/datasets/samples/mri/*.nii.gz $(find "$work/bad" -type f -readable -name '*.nii.gz'); do
  gzip -dc "$f" > "$work/nii/$(basename "$f" .gz)" 2>/dev/null || true
done
"$replay" fits $(kept fits) "$src"/datasets/samples/*.fits "${bad[@]}"
"$replay" png $(kept png) "$src"/datasets/samples/mri/*.png "${bad[@]}"
"$replay" nifti $(kept nifti) "$work/nii" "${bad[@]}"
"$replay" yaml $(kept yaml) "$src"/config/*.yaml "${bad[@]}"
