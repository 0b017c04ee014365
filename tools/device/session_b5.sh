#!/usr/bin/env bash
# One short device call: build, then compute-sanitizer memcheck, synccheck, initcheck and the CLI
# memcheck over the [sanitize] set (racecheck left out: SKIP_RACECHECK=1).
set -uo pipefail
OUT=${OUT:-/tmp/out}
. tools/device/setup.sh || exit 1
SKIP_RACECHECK=1 MEM_LIMIT=90 SYNC_LIMIT=60 INIT_LIMIT=60 bash tools/device/sanitize.sh build-dev /tmp/san
echo "sanitize rc=$?"; tar czf "$OUT/sanitize.tgz" -C /tmp san
