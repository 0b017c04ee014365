"""Runs SExtractor (Debian's `source-extractor`) on every image of a directory with the committed
settings (tools/peers/sex/peers.sex, .param, .conv) plus the options given; converts each ASCII_HEAD
catalog to the common CSV and writes timing.json. The per-image seconds are the whole
source-extractor process (start, FITS read, background, extraction, catalog write): SExtractor has
no library entry point. Each image runs twice; the second run is timed (the first finds the
object/pixel stacks the image needs, starting at SExtractor's defaults, and warms the page cache).
--deblend adds SExtractor's default deblending on top of peers.sex (DEBLEND_OPTIONS: DETECT_MINAREA 5,
DEBLEND_NTHRESH 32, DEBLEND_MINCONT 0.005, CLEAN Y, CLEAN_PARAM 1.0); --weight-type NONE thresholds
against the global rms (default.sex's choice) instead of the rms map.
--no-clean turns CLEAN off (with --deblend); --mincont M sets DEBLEND_MINCONT (1: no split).
Usage: sex_run.py --images DIR --out DIR [--nsigma 5] [--weight-type BACKGROUND|NONE]
       [--deblend [--no-clean] [--mincont 0.005]]"""
import argparse
import os
import shutil
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SEX_DIR = os.path.join(HERE, "sex")
# peers.sex has none (DETECT_MINAREA 1, DEBLEND_MINCONT 1.0, CLEAN N); --deblend sets default.sex's.
DEBLEND_OPTIONS = {"DETECT_MINAREA": "5", "DEBLEND_NTHRESH": "32", "DEBLEND_MINCONT": "0.005",
                   "CLEAN": "Y", "CLEAN_PARAM": "1.0"}


def sextractor_binary() -> str:
    for name in (os.environ.get("IMFLOW_PEERS_SEX", ""), "source-extractor", "sex"):
        if name and shutil.which(name):
            return shutil.which(name)
    raise SystemExit("source-extractor not found (tools/peers/install.sh installs it)")


def command_line(binary, image, catalog, args, stacks):
    cmd = [binary, image, "-c", os.path.join(SEX_DIR, "peers.sex"),
           "-PARAMETERS_NAME", os.path.join(SEX_DIR, "peers.param"),
           "-FILTER_NAME", os.path.join(SEX_DIR, "peers.conv"), "-CATALOG_NAME", catalog,
           "-BACK_SIZE", str(args.mesh), "-BACK_FILTERSIZE", str(args.filter),
           "-MEMORY_OBJSTACK", str(stacks[0]), "-MEMORY_PIXSTACK", str(stacks[1])]
    if args.deblend:
        options = dict(DEBLEND_OPTIONS, **({"CLEAN": "N"} if args.no_clean else {}),
                       DEBLEND_MINCONT=repr(args.mincont))
        cmd += [arg for key, value in options.items() for arg in ("-" + key, value)]
    if args.background == "mesh":
        cmd += ["-DETECT_THRESH", str(args.nsigma), "-ANALYSIS_THRESH", str(args.nsigma),
                "-WEIGHT_TYPE", args.weight_type]
        return cmd, {}
    median, std = common.kappa_sigma(common.read_image(image), args.kappa)
    thresh = repr(args.nsigma * std)
    cmd += ["-BACK_TYPE", "MANUAL", "-BACK_VALUE", repr(median), "-THRESH_TYPE", "ABSOLUTE",
            "-DETECT_THRESH", thresh, "-ANALYSIS_THRESH", thresh, "-WEIGHT_TYPE", "NONE"]
    return cmd, {"median": median, "std": std}


def printable(arg: str) -> str:
    """Command-line argument as docs/peers.md shows it: the committed files relative to the
    repository, other absolute paths by their base name."""
    if arg.startswith(SEX_DIR):
        return "tools/peers/sex" + arg[len(SEX_DIR):]
    return os.path.basename(arg) if os.path.isabs(arg) else arg


def run_once(cmd, image):
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=SEX_DIR, check=False)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{image}: source-extractor failed (exit {proc.returncode}): "
                         f"{proc.stderr.strip()[-500:]}")
    return seconds, "overflow" in proc.stderr


def read_sex_catalog(path):
    """ASCII_HEAD: '#   2 X_IMAGE ...' lines name the columns; rows follow."""
    names = []
    with open(path) as handle:
        for line in handle:
            if line.startswith("#"):
                names.append(line.split()[2])
    rows = np.loadtxt(path, comments="#", ndmin=2)
    if rows.size == 0:
        rows = np.empty((0, len(names)))
    return {name: rows[:, i] for i, name in enumerate(names)}


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    common.add_common_args(parser)
    parser.add_argument("--weight-type", choices=("BACKGROUND", "NONE"), default="BACKGROUND",
                        help="mesh mode: threshold x the rms map (BACKGROUND) or the global rms")
    parser.add_argument("--deblend", action="store_true", help="SExtractor's default deblending")
    parser.add_argument("--no-clean", action="store_true", help="with --deblend: CLEAN N")
    parser.add_argument("--mincont", type=float, default=0.005, help="with --deblend: DEBLEND_MINCONT")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    binary = sextractor_binary()
    version = subprocess.run([binary, "--version"], capture_output=True, text=True,
                             check=False).stdout.split("version")[-1].split()[0]
    settings = {"background": args.background, "mesh": args.mesh, "filter": args.filter,
                "nsigma": args.nsigma, "config": "tools/peers/sex/peers.sex",
                "minarea": 1, "filter_kernel": None, "deblend_mincont": 1.0, "clean": False,
                "weight_type": args.weight_type if args.background == "mesh" else "NONE"}
    if args.deblend:
        settings.update({"minarea": 5, "deblend_mincont": args.mincont, "clean": not args.no_clean,
                         "clean_param": 1.0})
    timing = common.Timing("sextractor", version, settings,
                           "whole source-extractor process per image (start, read, "
                           "background, extract, ASCII catalog write)")
    for path in common.list_images(args.images):
        image = os.path.abspath(path)
        name = os.path.basename(path)[:-len(".fits")]
        catalog = os.path.join(os.path.abspath(args.out), name + ".sexcat")
        stacks = [3000, 300_000]
        while True:
            cmd, info = command_line(binary, image, catalog, args, stacks)
            if info and not info["std"] > 0:
                break  # "I cannot deal with zero or negative thresholds!" (a constant sky)
            _, overflowed = run_once(cmd, image)
            if not overflowed:
                break
            stacks = [min(2 * stacks[0], 65_536), 2 * stacks[1]]
        if info and not info["std"] > 0:
            timing.record.setdefault("skipped", []).append(
                {"image": os.path.basename(path), "reason": "global std 0: SExtractor refuses a "
                                                            "zero threshold"})
            continue
        seconds, _ = run_once(cmd, image)
        cat = read_sex_catalog(catalog)
        n = common.write_catalog(os.path.join(args.out, name + ".csv"), {
            "x": cat["X_IMAGE"] - 1.0, "y": cat["Y_IMAGE"] - 1.0, "flux": cat["FLUX_ISO"],
            "npix": cat["ISOAREA_IMAGE"], "a": cat["A_IMAGE"], "b": cat["B_IMAGE"],
            "theta_deg": cat["THETA_IMAGE"], "deblended": (cat["FLAGS"].astype(int) & 2) > 0})
        os.remove(catalog)
        info.update({"objstack": stacks[0], "pixstack": stacks[1]})
        timing.add(path, common.read_image(path).shape, n, seconds, background=info,
                   command=" ".join(printable(c) for c in cmd))
    timing.write(args.out)


if __name__ == "__main__":
    main()
