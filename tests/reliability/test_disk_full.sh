#!/usr/bin/env bash
# Disk full and read-only output on real small tmpfs mounts (needs root and mount; exit 77 = skipped):
# full: per-item errors, run stops (exit 3), finished items intact and in the manifest;
# read-only: exit 3 before processing, with a clear message.
set -euo pipefail
imflow=$1; src=$2
here=$(dirname "$0"); source "$here/common.sh"
work=$(mktemp -d); mnt="$work/mnt"; mkdir -p "$mnt"
cleanup() { umount "$mnt" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
if ! mount -t tmpfs -o size=160k tmpfs "$mnt" 2>/dev/null; then echo "skipped: cannot mount a tmpfs here (not root?)"; exit 77; fi
/usr/bin/python3 "$here/make_fields.py" "$work/in" 40 64
printf 'output: {formats: [csv, fits, bgsub]}\ndevice: cpu\nsteps: [background, segment, label, measure]\n' > "$work/p.yaml"
set +e; err=$("$imflow" run "$work/p.yaml" --input "$work/in" --output "$mnt/out" --threads 2 2>&1); code=$?; set -e
[ $code -eq 3 ] || fail "disk full: exit $code, expected 3: $err"
grep -q "cannot write outputs" <<< "$err" || fail "no per-item write error: $err"
grep -q "file system is full" <<< "$err" || fail "no 'full' message: $err"
no_temporaries "$mnt/out"
/usr/bin/python3 - "$mnt/out" <<'PY' || fail "manifest entries vs files"
import json, os, sys
out = sys.argv[1]
entries = [json.loads(l) for l in open(os.path.join(out, "manifest.jsonl")) if l.endswith("\n")][1:]
ok = [e for e in entries if e["status"] == "ok"]
assert ok, "no finished item recorded"
for e in ok:
    for o in e["outputs"]:
        assert os.path.getsize(os.path.join(out, o["path"])) == o["size"], o
print(f"disk full: {len(ok)} finished items recorded and intact")
PY
umount "$mnt"
mount -t tmpfs -o size=1m,ro tmpfs "$mnt"
set +e; err=$("$imflow" run "$work/p.yaml" --input "$work/in" --output "$mnt" --threads 2 2>&1); code=$?; set -e
[ $code -eq 3 ] || fail "read-only output: exit $code, expected 3: $err"
grep -q "not writable" <<< "$err" || fail "read-only message: $err"
grep -q "error: .*f0" <<< "$err" && fail "items were processed despite the unwritable output"
echo "disk full / read-only tests passed"
