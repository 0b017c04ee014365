# Shared helpers of the reliability shell tests (sourced): fail, lines, no_temporaries, same_outputs,
# run/start (imflow on $work/p.yaml over $work/in; the caller sets imflow and work).
fail() { echo "FAIL: $*" >&2; exit 1; }
lines() { if [ -f "$1" ]; then wc -l < "$1"; else echo 0; fi; }
# Poll (bounded, 20 s) until FILE has at least N lines or process PID has ended.
wait_lines() { local file=$1 n=$2 pid=$3 i; for ((i = 0; i < 4000; i++)); do
  [ "$(lines "$file")" -ge "$n" ] && return 0; kill -0 "$pid" 2>/dev/null || return 0; sleep 0.005; done; }
no_temporaries() { [ -z "$(find "$1" -name '.*.tmp-*' -print -quit)" ] || fail "temporary files left in $1: $(find "$1" -name '.*.tmp-*')"; }
# Every output but the run records (summary, manifest) byte-identical to the reference run's.
same_outputs() { diff -r -q -x summary.json -x manifest.jsonl "$1" "$2" || fail "outputs of $2 differ from $1"; }
# Run the test's pipeline in the foreground; start: in the background, with $! being imflow itself
# (not a subshell) so signals reach it.
run() { "$imflow" -q run "$work/p.yaml" --input "$work/in" --threads 2 "$@"; }
start() { "$imflow" -q run "$work/p.yaml" --input "$work/in" --threads 2 "$@" & pid=$!; }
