#!/usr/bin/env bash
# One device call: build, every GPU test, then compute-sanitizer over the [sanitize] set
# (tools/device/sanitize.sh), logs back as one .tgz.
set -uo pipefail
OUT=${OUT:-/tmp/out}
. tools/device/setup.sh || exit 1
timeout 130 build-dev/tests/gpu/imflow_gpu_tests > /tmp/gpu_tests.log 2>&1; echo "gpu tests rc=$?"
grep -a -E "test cases|All tests|FAILED" /tmp/gpu_tests.log | sort | uniq -c | tail -8; gzip -c /tmp/gpu_tests.log > "$OUT/gpu_tests.log.gz"
RACE_LIMIT=${RACE_LIMIT:-220} MEM_LIMIT=90 SYNC_LIMIT=60 INIT_LIMIT=60 bash tools/device/sanitize.sh build-dev /tmp/san
echo "sanitize rc=$?"; tar czf "$OUT/sanitize.tgz" -C /tmp san
