#!/usr/bin/env bash
# SIGINT/SIGTERM: in-flight items finish, summary (stopped_early) written, exit 130, no temporaries;
# a second SIGINT aborts at once (130) and --resume completes the run with identical outputs.
set -euo pipefail
imflow=$1; src=$2
here=$(dirname "$0"); source "$here/common.sh"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
/usr/bin/python3 "$here/make_fields.py" "$work/in" 100 160
printf 'input: {recursive: true}\noutput: {formats: [csv, fits]}\ndevice: cpu\nsteps: [{convolve: {kernel: gaussian, size: 15, sigma: 3}}, background, segment, label, measure]\n' > "$work/p.yaml"
run --output "$work/ref"

for sig in INT TERM; do
  out="$work/$sig"
  start --output "$out"
  wait_lines "$out/manifest.jsonl" 10 "$pid"
  kill -$sig "$pid"
  set +e; wait "$pid"; code=$?; set -e
  [ $code -eq 130 ] || fail "SIG$sig: exit $code, expected 130"
  grep -q '"stopped_early"' "$out/summary.json" || fail "SIG$sig: summary not marked stopped_early"
  no_temporaries "$out"
  n=$(($(lines "$out/manifest.jsonl") - 1))
  [ "$n" -lt 100 ] || fail "SIG$sig: the run did not stop early ($n items)"
  /usr/bin/python3 - "$out" <<'PY' || fail "SIG$sig: outputs listed in the manifest"
import json, os, sys
out = sys.argv[1]
entries = [json.loads(l) for l in open(os.path.join(out, "manifest.jsonl"))][1:]
for e in entries:
    for o in e.get("outputs", []):
        assert os.path.getsize(os.path.join(out, o["path"])) == o["size"], o
PY
  echo "SIG$sig: exit 130 after $n items, summary stopped_early, no temporaries"
done

# Two SIGINTs: immediate exit 130; what exists is complete; --resume finishes identically.
out="$work/twice"
start --output "$out"
wait_lines "$out/manifest.jsonl" 5 "$pid"
kill -INT "$pid"; kill -INT "$pid"
set +e; wait "$pid"; code=$?; set -e
[ $code -eq 130 ] || fail "second SIGINT: exit $code, expected 130"
run --output "$out" --resume
same_outputs "$work/ref" "$out"; no_temporaries "$out"
echo "signal tests passed"
