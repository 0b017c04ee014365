#!/usr/bin/env bash
# The GPU tests under compute-sanitizer: memcheck (with leak check), racecheck, synccheck and
# initcheck on the `[sanitize]` set of small images (tests/gpu/test_gpu_sanitize.cpp: every
# kernel), plus memcheck of the CLI running the astronomy and MRI pipelines on the committed
# samples on the GPU (engine streams, batches, downloads). Each run has a time limit so that the
# whole fits in about 6 minutes on an H100 (racecheck runs beside the others). Every tool's log
# and summary.json (errors / hazards per tool, timeouts, test results) go to OUT.
# Limits (s): RACE_LIMIT, MEM_LIMIT, SYNC_LIMIT, INIT_LIMIT; SKIP_RACECHECK=1 leaves racecheck out.
# Usage: tools/gpu/sanitize.sh BUILD_DIR OUT   (BUILD_DIR built with CUDA, e.g. build-dev
#        from `. tools/gpu/setup.sh`). Exit 0 only when every run finished with 0 errors.
set -uo pipefail
build=${1:?usage: tools/gpu/sanitize.sh BUILD_DIR OUT}; out=${2:?usage: tools/gpu/sanitize.sh BUILD_DIR OUT}
mkdir -p "$out"; build=$(cd "$build" && pwd); out=$(cd "$out" && pwd)
cd "$(dirname "$0")/../.."
tests=$build/tests/gpu/imflow_gpu_tests imflow=$build/imflow
[ -x "$tests" ] || { echo "no $tests: build with CUDA first (. tools/gpu/setup.sh)" >&2; exit 1; }
sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer /usr/local/cuda*/compute-sanitizer/compute-sanitizer 2>/dev/null | head -1)
[ -x "$sanitizer" ] || { echo "compute-sanitizer not found (PATH, /usr/local/cuda*/bin)" >&2; exit 1; }
"$sanitizer" --version | tail -1 | tee "$out/version.txt"
status=$(mktemp -d)  # NAME.rc: exit code, seconds, limit (kept out of OUT: the device returns at most 8 files)
filter='[sanitize]'

# run NAME LIMIT_S TOOL_ARGS... -- COMMAND...: one sanitizer run, log in OUT/NAME.log.
run() {
  local name=$1 limit=$2; shift 2
  local args=(); while [ "$1" != "--" ]; do args+=("$1"); shift; done; shift
  local t0=$SECONDS
  timeout -k 10 "$limit" "$sanitizer" "${args[@]}" --print-limit 200 --error-exitcode 99 "$@" > "$out/$name.log" 2>&1
  local rc=$?
  echo "$rc $((SECONDS - t0)) $limit" > "$status/$name.rc"
  echo "$name: rc=$rc $((SECONDS - t0)) s (limit $limit s)"
}
t0=$SECONDS
# racecheck is the slow one (every shared-memory access is tracked): it runs beside the others.
racecheck_pid=""
if [ -z "${SKIP_RACECHECK:-}" ]; then
  run racecheck ${RACE_LIMIT:-330} --tool racecheck --racecheck-report all -- "$tests" "$filter" --durations yes &
  racecheck_pid=$!
fi
run memcheck ${MEM_LIMIT:-120} --tool memcheck --leak-check full -- "$tests" "$filter" --durations yes
run synccheck ${SYNC_LIMIT:-60} --tool synccheck -- "$tests" "$filter" --durations yes
run initcheck ${INIT_LIMIT:-90} --tool initcheck -- "$tests" "$filter" --durations yes
# The engine end to end: pinned pools, several streams, batches and the catalog download paths.
cli_out=$(mktemp -d)
sed 's/solver: auto, reconstruct: auto, svd_solver: auto/solver: gpu, reconstruct: gpu, svd_solver: gesvdj/' config/mri-gpu.yaml > "$cli_out/mri-allgpu.yaml"
run memcheck_cli 60 --tool memcheck --leak-check full --target-processes all -- bash -c "
  set -e
  '$imflow' -q run config/astro.yaml --input datasets/samples --output '$cli_out/astro' --device cuda --streams 2 --threads 4
  '$imflow' -q run config/mri-gpu.yaml --input datasets/samples/mri --output '$cli_out/mri' --device cuda --streams 2 --threads 4
  '$imflow' -q run '$cli_out/mri-allgpu.yaml' --input datasets/samples/mri --output '$cli_out/mri-gpu' --device cuda --streams 2 --threads 4"
[ -n "$racecheck_pid" ] && wait "$racecheck_pid"
rm -rf "$cli_out"
echo "all runs: $((SECONDS - t0)) s"

# summary.json: per run the sanitizer's own counts (ERROR SUMMARY; racecheck's hazards), whether
# it hit its limit, and Catch2's verdict; ok only when every run finished clean.
trap 'rm -rf "$status"' EXIT
/usr/bin/env python3 - "$out" "$status" <<'PY'
import json, re, sys, pathlib
out, status = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
runs, ok = {}, True
for name in [n for n in ("memcheck", "racecheck", "synccheck", "initcheck", "memcheck_cli") if (status / f"{n}.rc").exists()]:
    log = (out / f"{name}.log").read_text(errors="replace") if (out / f"{name}.log").exists() else ""
    rc, seconds, limit = map(int, (status / f"{name}.rc").read_text().split()) if (status / f"{name}.rc").exists() else (-1, 0, 0)
    r = {"exit_code": rc, "seconds": seconds, "limit_seconds": limit, "timed_out": rc in (124, 137)}
    m = re.findall(r"ERROR SUMMARY: (\d+) error", log)
    r["errors"] = int(m[-1]) if m else None
    m = re.findall(r"RACECHECK SUMMARY: (\d+) hazards? displayed \((\d+) errors?, (\d+) warnings?\)", log)
    if m: r["hazards"], r["hazard_errors"], r["hazard_warnings"] = map(int, m[-1])
    m = re.findall(r"All tests passed \((\d+) assertions? in (\d+) test cases?\)", log)
    if m: r["assertions"], r["test_cases"] = map(int, m[-1])
    r["tests_failed"] = bool(re.search(r"test cases?:.*failed", log))
    r["finished_test_cases"] = len(re.findall(r"^\d+\.\d+ s: ", log, re.M))
    # racecheck may print only its own summary line; a run with neither line did not finish.
    finished = r["errors"] is not None or "hazards" in r
    r["clean"] = rc == 0 and finished and not r["errors"] and not r.get("hazards", 0)
    ok &= r["clean"]
    runs[name] = r
    print(f"{name:13} clean={r['clean']!s:5} errors={r['errors']} hazards={r.get('hazards', '-')} rc={rc} {seconds}/{limit} s")
(out / "summary.json").write_text(json.dumps({"ok": ok, "runs": runs}, indent=2) + "\n")
sys.exit(0 if ok else 1)
PY
