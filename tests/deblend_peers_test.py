"""deblend's clean_style against Debian's source-extractor 2.25 on the committed crops, with
SExtractor's default detection and deblending (tools/peers/sex_run.py --deblend --weight-type
NONE; imflow: config/peers-deblend.yaml):
  - without splitting (DEBLEND_MINCONT 1, mincont: 1), where no random draw enters, clean_style
    sextractor gives SExtractor's objects exactly (every object matched within 1 px both ways,
    FLUX_ISO within 1e-4), and clean_style sep does not (it drops what SExtractor merges);
  - with SExtractor's deblending (0.005) and its random numbers too (draws: sextractor), the same
    objects again: every object matched, FLUX_ISO within 1e-4;
  - the same over per-pixel thresholds (WEIGHT_TYPE BACKGROUND; segment relative_to: rms_map),
    where SExtractor's detection weighting sets every object's abcor to 1 in the deblending's model
    and CLEAN, and gives each object the lowest threshold of its pixels: the same objects, on the
    crops and, when datasets/fetch.sh has fetched it, the whole ISAAC frame.
Usage: deblend_peers_test.py IMFLOW_BINARY REPO_ROOT"""
import contextlib
import io
import os
import runpy
import shutil
import sys
import tempfile

imflow, root = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
peers = os.path.join(root, "tools", "peers")
sys.path.insert(0, peers)
import crossmatch  # noqa: E402

if shutil.which("source-extractor") is None:
    sys.exit("FAIL: source-extractor not found: tools/install-deps.sh installs Debian's source-extractor package")
work = tempfile.mkdtemp(prefix="imflow-deblend-peers-")
images = os.path.join(work, "images")
os.makedirs(images)
for name in ("isaac_crop.fits", "dss_crop.fits"):
    shutil.copy(os.path.join(root, "datasets", "samples", name), images)


def pipeline(name, relative_to="background", **deblend):
    """config/peers-deblend.yaml with its deblend step's parameters and its threshold changed."""
    import yaml
    with open(os.path.join(root, "config", "peers-deblend.yaml")) as handle:
        config = yaml.safe_load(handle)
    for step in config["steps"]:
        if isinstance(step, dict) and "deblend" in step:
            step["deblend"].update(deblend)
        if isinstance(step, dict) and "segment" in step:
            step["segment"]["relative_to"] = relative_to
    path = os.path.join(work, name + ".yaml")
    with open(path, "w") as handle:
        yaml.safe_dump(config, handle)
    return path


def run(cmd):
    """A tools/peers script in this interpreter (no new Python start per run)."""
    saved = sys.argv
    sys.argv = list(cmd)
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            runpy.run_path(cmd[0], run_name="__main__")
    finally:
        sys.argv = saved


def imflow_catalogs(name, inputs=images, **deblend):
    out = os.path.join(work, name)
    run([os.path.join(peers, "imflow_run.py"), "--imflow", imflow, "--pipeline", pipeline(name, **deblend),
         "--images", inputs, "--out", out, "--threads", "2"])
    return out


def sextractor_catalogs(name, mincont, inputs=images, weight_type="NONE"):
    out = os.path.join(work, name)
    run([os.path.join(peers, "sex_run.py"), "--images", inputs, "--out", out, "--nsigma", "1.5",
         "--weight-type", weight_type, "--deblend", "--mincont", repr(mincont)])
    return out


def compare(label, a, b):
    result = crossmatch.crossmatch(a, b, 1.0)
    p = result["pooled"]
    print(f"{label}: {p['n_a']} / {p['n_b']} objects, matched {p['fraction_a_matched']:.4f} / "
          f"{p['fraction_b_matched']:.4f}, median abs(flux ratio - 1) {p['median_abs_flux_deviation']:.2g}, "
          f"fluxes off by > 1e-4: {p['pairs_flux_off_1e-4']}")
    return p


failures = []
nosplit = sextractor_catalogs("sextractor-nosplit", 1.0)
p = compare("no split: SExtractor vs clean_style sextractor", nosplit,
            imflow_catalogs("imflow-nosplit-sextractor", mincont=1.0, clean_style="sextractor"))
if not (p["n_a"] == p["n_b"] and p["fraction_a_matched"] == 1 and p["fraction_b_matched"] == 1
        and p["pairs_flux_off_1e-4"] == 0):
    failures.append("clean_style sextractor without splitting is not SExtractor's catalog")
p = compare("no split: SExtractor vs clean_style sep", nosplit,
            imflow_catalogs("imflow-nosplit-sep", mincont=1.0, clean_style="sep"))
if p["n_a"] == p["n_b"] and p["pairs_flux_off_1e-4"] == 0:
    failures.append("clean_style sep gives SExtractor's catalog: the crops no longer tell the styles apart")
p = compare("deblended: SExtractor vs clean_style, draws sextractor", sextractor_catalogs("sextractor", 0.005),
            imflow_catalogs("imflow-sextractor", clean_style="sextractor", draws="sextractor"))
if not (p["n_a"] == p["n_b"] and p["fraction_a_matched"] == 1 and p["fraction_b_matched"] == 1
        and p["pairs_flux_off_1e-4"] == 0):
    failures.append("clean_style and draws sextractor with deblending are not SExtractor's catalog")
weighted = os.path.join(work, "weighted")
shutil.copytree(images, weighted)
full_isaac = os.path.join(root, "datasets", "data", "astro", "ISAAC.2006-04-13T06-32-38.944.fits")
if os.path.exists(full_isaac):
    shutil.copy(full_isaac, weighted)
p = compare("per-pixel thresholds: SExtractor (WEIGHT_TYPE BACKGROUND) vs clean_style, draws sextractor",
            sextractor_catalogs("sextractor-weighted", 0.005, weighted, "BACKGROUND"),
            imflow_catalogs("imflow-weighted", weighted, relative_to="rms_map", clean_style="sextractor",
                            draws="sextractor"))
if not (p["n_a"] == p["n_b"] and p["fraction_a_matched"] == 1 and p["fraction_b_matched"] == 1
        and p["pairs_flux_off_1e-4"] == 0):
    failures.append("clean_style and draws sextractor over per-pixel thresholds are not SExtractor's catalog")
shutil.rmtree(work, ignore_errors=True)
for failure in failures:
    print("FAIL:", failure)
sys.exit(1 if failures else 0)
