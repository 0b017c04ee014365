#!/usr/bin/env bash
# One command for the side-by-side comparison (docs/peers.md): installs the peers, prepares the
# real images of datasets/ as 2-D float32 FITS, makes the synthetic star fields, runs SEP,
# SExtractor, photutils and imflow (--threads 1 and all threads) on every image group, cross-matches
# the catalogs, scores them against the synthetic truth and writes bench/results/peers-<machine>-<date>/.
#
#   tools/peers/run.sh [--quick] [--sizes 1024,2048,4096,8192] [--imflow build/imflow]
#                      [--pipeline config/peers-global.yaml] [--out DIR] [--work DIR] [--no-install]
#   tools/peers/run.sh --deblend [--sizes 2048] [--out bench/results/cpu-2core] ...
#
# --quick: synthetic sizes 1024,2048 only (about 2 min on 2 cores; the default about 7 min).
# --pipeline: the imflow pipeline compared (default config/peers-mesh.yaml when the imflow binary
# accepts it, else config/peers-global.yaml). The peers run their mesh settings (the runners'
# defaults) and, as the reference for a global imflow, --background global; with the mesh
# pipeline the background maps are also compared with SEP's (background_check.py).
# --deblend: SExtractor's default detection and deblending instead (1.5 sigma of the global rms,
# minarea 5, 32 levels, mincont 0.005, CLEAN; FILTER N): SEP, SExtractor and imflow with
# config/peers-deblend.yaml on the real images and on crowded synthetic fields (make_starfield.py
# --crowded, default size 2048; --quick 1024), plus imflow with SExtractor's CLEAN (clean_style:
# sextractor) and random draws (draws: sextractor), without CLEAN, without its deblend step and
# with it splitting nothing; writes OUT/peers-deblend-{crossmatch,truth,summary}.json, -results.md and
# -completeness.png (docs/peers.md, "With deblending").
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$root"

sizes=1024,2048,4096,8192 imflow=build/imflow pipeline="" install=1 deblend=0 sizes_set=0 quick=0
machine="cpu-$(hostname -s)" out="" work="out/peers-work"
while [[ $# -gt 0 ]]; do
    case $1 in
        --quick) sizes=1024,2048 quick=1; shift ;;
        --sizes) sizes=$2 sizes_set=1; shift 2 ;;
        --deblend) deblend=1; shift ;;
        --imflow) imflow=$2; shift 2 ;;
        --pipeline) pipeline=$2; shift 2 ;;
        --machine) machine=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --work) work=$2; shift 2 ;;
        --no-install) install=0; shift ;;
        -h|--help) sed -n '2,22p' "$here/run.sh"; exit 0 ;;
        *) echo "run.sh: unknown option $1 (see --help)" >&2; exit 1 ;;
    esac
done
out=${out:-bench/results/peers-$machine-$(date +%Y-%m-%d)}
[[ -x $imflow ]] || { echo "run.sh: $imflow: no imflow binary (tools/build.sh builds build/imflow)" >&2; exit 1; }
if [[ $deblend == 1 ]]; then
    [[ $sizes_set == 1 ]] || sizes=$([[ $quick == 1 ]] && echo 1024 || echo 2048)
    pipeline=${pipeline:-config/peers-deblend.yaml}
elif [[ -z $pipeline ]]; then
    pipeline=config/peers-mesh.yaml
    "$imflow" validate "$pipeline" > /dev/null 2>&1 || pipeline=config/peers-global.yaml
fi
[[ -f $pipeline ]] || { echo "run.sh: $pipeline: no such pipeline" >&2; exit 1; }
"$imflow" validate "$pipeline" > /dev/null || { echo "run.sh: $pipeline: invalid for $imflow" >&2; exit 1; }
PY=${PYTHON:-python3}
t0=$(date +%s)
stamp() { echo "== run.sh: $1 ($(( $(date +%s) - t0 )) s)"; }

[[ $install == 1 ]] && "$here/install.sh"
stamp installed

rm -rf "$work"; mkdir -p "$work/images/real" "$work/truth" "$out"
real_inputs=(datasets/samples)
ls datasets/data/astro/*.fits > /dev/null 2>&1 && real_inputs+=(datasets/data/astro) \
    || echo "run.sh: datasets/data/astro missing (datasets/fetch.sh fetches it): samples only"
"$PY" "$here/prepare_images.py" "$work/images/real" "${real_inputs[@]}"
groups=(real)
field=star group_name=synth crowded=()
[[ $deblend == 1 ]] && field=crowd group_name=crowd crowded=(--crowded)
for size in ${sizes//,/ }; do
    "$PY" "$here/make_starfield.py" --out "$work/truth" --size "$size" --psf gauss --psf moffat "${crowded[@]}"
    mkdir -p "$work/images/$group_name-$size"
    mv "$work/truth/${field}_${size}_"*.fits "$work/images/$group_name-$size/"
    groups+=("$group_name-$size")
done
stamp "images ready"

if [[ $deblend == 1 ]]; then  # SEP, SExtractor and imflow, all deblending as SExtractor's defaults
    for group in "${groups[@]}"; do
        img="$work/images/$group" cat="$work/cat/$group"
        for clean in "" --no-clean; do  # with CLEAN (SExtractor's default) and without
            suffix=${clean:+-noclean}
            "$PY" "$here/sep_run.py" --images "$img" --out "$cat/sep$suffix" --nsigma 1.5 \
                --sep-noise globalrms --deblend $clean
            "$PY" "$here/sex_run.py" --images "$img" --out "$cat/sextractor$suffix" --nsigma 1.5 \
                --weight-type NONE --deblend $clean
        done
        "$PY" "$here/imflow_run.py" --imflow "$imflow" --pipeline "$pipeline" --images "$img" --out "$cat/imflow"
        # Without CLEAN; as SExtractor (clean_style: sextractor; with draws: sextractor too, with
        # and without CLEAN); on the crowded fields also without deblending: no deblend step
        # (today's pipelines), and one splitting nothing (its minarea still acts).
        variants=(noclean sexclean sextractor sextractor-noclean); [[ $group != real ]] && variants+=(drop nosplit)
        for variant in "${variants[@]}"; do
            "$PY" "$here/imflow_run.py" --imflow "$imflow" --pipeline "$pipeline" --images "$img" \
                --out "$cat/imflow-$variant" --deblend-variant "$variant"
        done
        mkdir -p "$work/crossmatch/$group"
        for pair in sep:imflow sextractor:imflow sextractor:imflow-sexclean sextractor:imflow-sextractor \
                    sep:sextractor sep-noclean:imflow-noclean sep-noclean:sextractor-noclean \
                    sextractor-noclean:imflow-sextractor-noclean; do
            "$PY" "$here/crossmatch.py" "$cat/${pair%%:*}" "$cat/${pair##*:}" \
                --out "$work/crossmatch/$group/${pair%%:*}-vs-${pair##*:}.json"
        done
        stamp "$group done"
    done
    tools=()
    for t in sep sextractor imflow imflow-sexclean imflow-sextractor imflow-noclean imflow-drop imflow-nosplit; do
        mkdir -p "$work/cat/crowd-all/$t"
        for group in "${groups[@]:1}"; do cp "$work/cat/$group/$t/"*.csv "$work/cat/crowd-all/$t/"; done
        tools+=(--tool "$t=$work/cat/crowd-all/$t")
    done
    mkdir -p "$out"
    "$PY" "$here/truth_eval.py" --truth "$work/truth" "${tools[@]}" --one-to-one \
        --out "$out/peers-deblend-truth.json"
    "$PY" "$here/report.py" --work "$work" --out "$out" --pipeline "$pipeline" --imflow "$imflow" --deblend
    /usr/bin/python3 "$here/plot_peers.py" "$out" --deblend || echo "run.sh: no plot (Debian python3-matplotlib missing?)"
    stamp "done: $out/peers-deblend-*"
    exit 0
fi

# Runs one runner, recording the whole process's wall time (interpreter start and imports included).
timed() {
    local dir=$1; shift
    mkdir -p "$dir"
    local start end
    start=$(date +%s.%N)
    "$@"
    end=$(date +%s.%N)
    awk -v a="$start" -v b="$end" 'BEGIN { printf "{\"process_wall_seconds\": %.6f}\n", b - a }' \
        > "$dir/process_wall.json"
}

is_mesh=0; grep -q "method: *mesh" "$pipeline" && is_mesh=1
for group in "${groups[@]}"; do
    img="$work/images/$group" cat="$work/cat/$group"
    timed "$cat/sep" "$PY" "$here/sep_run.py" --images "$img" --out "$cat/sep"
    timed "$cat/sextractor" "$PY" "$here/sex_run.py" --images "$img" --out "$cat/sextractor"
    timed "$cat/photutils" "$PY" "$here/photutils_run.py" --images "$img" --out "$cat/photutils"
    bg=(); [[ $is_mesh == 1 ]] && bg=(--bgsub-out "$work/bgsub/$group")
    timed "$cat/imflow-t1" "$PY" "$here/imflow_run.py" --imflow "$imflow" --pipeline "$pipeline" \
        --images "$img" --out "$cat/imflow-t1" --threads 1 --label imflow-t1 "${bg[@]}"
    timed "$cat/imflow-all" "$PY" "$here/imflow_run.py" --imflow "$imflow" --pipeline "$pipeline" \
        --images "$img" --out "$cat/imflow-all" --threads 0 --label imflow-all
    # SEP thresholding against the signed rms map (err=rms: SEP's usual call) besides var=rms^2.
    "$PY" "$here/sep_run.py" --images "$img" --out "$cat/sep-rms" --sep-noise rms
    # The reference with imflow's global background (kappa-sigma; NumPy, slow on big fields).
    [[ $group == real || ${group#synth-} -le 2048 ]] && \
        "$PY" "$here/sep_run.py" --images "$img" --out "$cat/sep-global" --background global
    if [[ $group == real ]]; then
        "$PY" "$here/sex_run.py" --images "$img" --out "$cat/sextractor-global" --background global
        "$PY" "$here/photutils_run.py" --images "$img" --out "$cat/photutils-global" --background global
    fi
    mkdir -p "$out/crossmatch/$group"
    for pair in sep:sextractor sep:photutils sep:imflow-t1 sep-rms:imflow-t1 sep-global:imflow-t1 imflow-t1:imflow-all \
                sep-global:sextractor-global sep-global:photutils-global; do
        a=${pair%%:*} b=${pair##*:}
        [[ -d $cat/$a && -d $cat/$b ]] || continue
        "$PY" "$here/crossmatch.py" "$cat/$a" "$cat/$b" --out "$out/crossmatch/$group/$a-vs-$b.json"
    done
    if [[ $is_mesh == 1 ]]; then
        mkdir -p "$out/background_check"
        "$PY" "$here/background_check.py" --images "$img" --bgsub "$work/bgsub/$group" \
            --out "$out/background_check/$group.json"
    fi
    stamp "$group done"
done

# Every synthetic group's catalogs side by side with the truth.
tools=(); for t in sep sextractor photutils imflow-t1 sep-global; do
    mkdir -p "$work/cat/synth-all/$t"
    for group in "${groups[@]}"; do
        [[ $group == real ]] || cp "$work/cat/$group/$t/"*.csv "$work/cat/synth-all/$t/" 2>/dev/null || true
    done
    tools+=(--tool "$t=$work/cat/synth-all/$t")
done
[[ ${#groups[@]} -gt 1 ]] && "$PY" "$here/truth_eval.py" --truth "$work/truth" "${tools[@]}" --out "$out/truth.json"
cp "$work/truth/"*.truth.json "$out/" 2>/dev/null || true
"$PY" "$here/report.py" --work "$work" --out "$out" --pipeline "$pipeline" --imflow "$imflow"
/usr/bin/python3 "$here/plot_peers.py" "$out" || echo "run.sh: no plot (Debian python3-matplotlib missing?)"
stamp "done: $out"
