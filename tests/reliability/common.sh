# Shared helpers of the reliability shell tests (sourced): fail, lines, no_temporaries, same_outputs.
fail() { echo "FAIL: $*" >&2; exit 1; }
lines() { if [ -f "$1" ]; then wc -l < "$1"; else echo 0; fi; }
# Poll (bounded, 20 s) until FILE has at least N lines or process PID has ended.
wait_lines() { local file=$1 n=$2 pid=$3 i; for ((i = 0; i < 4000; i++)); do
  [ "$(lines "$file")" -ge "$n" ] && return 0; kill -0 "$pid" 2>/dev/null || return 0; sleep 0.005; done; }
no_temporaries() { [ -z "$(find "$1" -name '.*.tmp-*' -print -quit)" ] || fail "temporary files left in $1: $(find "$1" -name '.*.tmp-*')"; }
# Every output but the run records (summary, manifest) byte-identical to the reference run's.
same_outputs() { diff -r -q -x summary.json -x manifest.jsonl "$1" "$2" || fail "outputs of $2 differ from $1"; }
