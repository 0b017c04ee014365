#!/usr/bin/env bash
# Two imflow builds (or two settings) on the same inputs, alternated round by round in one call
# (a b, then b a, ...), so that the machine's drift falls on both alike: `imflow bench` per build
# per round (3 timed repeats after a warm-up), then tools/bench-ab.py writes OUT.json with each
# run's images/s, end-to-end images/s and stage times per item, the medians per side and their
# ratios (b / a).
#
# usage: tools/bench-ab.sh --a BIN_A --b BIN_B --pipeline P.yaml --input DIR --out OUT.json
#                          [--rounds 2] [--label-a NAME] [--label-b NAME] [-- imflow bench options...]
# e.g.   tools/bench-ab.sh --a /tmp/imflow-main --b build/imflow --pipeline config/astro.yaml \
#            --input /dev/shm/a2048 --out bench/results/h100/x-ab.json -- --device cuda --threads 16
set -euo pipefail
cd "$(dirname "$0")/.."
a="" b="" pipeline="" input="" out="" rounds=2 label_a=a label_b=b
while [ $# -gt 0 ]; do
  case $1 in
    --a) a=$2; shift 2 ;;
    --b) b=$2; shift 2 ;;
    --pipeline) pipeline=$2; shift 2 ;;
    --input) input=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --label-a) label_a=$2; shift 2 ;;
    --label-b) label_b=$2; shift 2 ;;
    --) shift; break ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench-ab.sh: unknown argument $1 (see --help)" >&2; exit 1 ;;
  esac
done
for v in a b pipeline input out; do [ -n "${!v}" ] || { echo "bench-ab.sh: --$v is required (see --help)" >&2; exit 1; }; done
# Outputs in memory where there is /dev/shm (as tools/bench-suite.sh): the figures are the engine's,
# not a disk's (thousands of small files cost a disk filesystem more than the encoding).
scratch_root=${TMPDIR:-/tmp}; [ -z "${TMPDIR:-}" ] && [ -d /dev/shm ] && scratch_root=/dev/shm
work=$(mktemp -d "$scratch_root/bench-ab.XXXXXX")
trap 'rm -rf "$work"' EXIT
runs=()
for round in $(seq 1 "$rounds"); do
  order="a b"; [ $((round % 2)) -eq 0 ] && order="b a"  # a steady drift cancels over two rounds
  for side in $order; do
    bin=${!side}
    "$bin" -q bench "$pipeline" --input "$input" --out "$work/bench" --repeat 3 --warmup 1 "$@" > "$work/log" 2>&1 \
      || { tail -20 "$work/log"; echo "bench-ab.sh: $bin failed" >&2; exit 1; }
    cp "$work/bench/bench.json" "$work/$side-$round.json"
    runs+=("$side=$work/$side-$round.json")
  done
done
python3 tools/bench-ab.py --label-a "$label_a" --label-b "$label_b" --out "$out" "${runs[@]}"
