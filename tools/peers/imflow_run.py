"""Runs `imflow run PIPELINE` over a directory of images (one untimed warm-up run, then the timed
run) and converts its catalogs to the common CSV; writes timing.json with imflow's own per-image
stage seconds (compute stages: everything but read and write) and the whole process's wall time.
Flux: `flux_iso` when the catalog has it (background-subtracted), else the global background's
`flux - npix x median` (today's `flux` sums raw pixels). --deblend-variant runs a copy of a
pipeline with a `deblend` step without it (`drop`: segments as they are, every size) or with it
splitting and cleaning nothing (`nosplit`: mincont 1, clean false; only its minarea acts), or
splitting without CLEAN (`noclean`), or as SExtractor: its CLEAN (`sexclean`: clean_style
sextractor, a cleaned object merged into its survivor), its CLEAN and random draws
(`sextractor`: also draws sextractor), its draws without CLEAN (`sextractor-noclean`).
Usage: imflow_run.py --pipeline P --images DIR --out DIR [--threads 0]
       [--deblend-variant drop|nosplit|noclean|sexclean|sextractor|sextractor-noclean]"""
import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

NOT_COMPUTE = ("read", "write")


def pipeline_variant(pipeline: str, directory: str, bgsub=False, deblend=None) -> str:
    """A copy of the pipeline that also writes the background-subtracted image (output format
    `bgsub`, for background_check.py), or whose `deblend` step is dropped or splits nothing."""
    import yaml
    with open(pipeline) as handle:
        config = yaml.safe_load(handle)
    if bgsub:
        config.setdefault("output", {})["formats"] = ["csv", "bgsub"]
    is_deblend = lambda step: isinstance(step, dict) and "deblend" in step  # noqa: E731
    if deblend == "drop":
        config["steps"] = [step for step in config["steps"] if not is_deblend(step)]
    change = {"nosplit": {"mincont": 1.0, "clean": False}, "noclean": {"clean": False},
              "sexclean": {"clean_style": "sextractor"},
              "sextractor": {"clean_style": "sextractor", "draws": "sextractor"},
              "sextractor-noclean": {"clean": False, "draws": "sextractor"}}.get(deblend, {})
    for step in config["steps"] if change else []:
        if is_deblend(step):
            step["deblend"] = {**(step["deblend"] or {}), **change}
    path = os.path.join(directory, f"pipeline-{'bgsub' if bgsub else deblend}.yaml")
    with open(path, "w") as handle:
        yaml.safe_dump(config, handle)
    return path


def run_imflow(args, out_dir, pipeline=None):
    shutil.rmtree(out_dir, ignore_errors=True)
    cmd = [args.imflow, "-q", "run", pipeline or args.pipeline, "--input", args.images, "--output", out_dir,
           "--device", args.device, "--threads", str(args.threads)]
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"imflow run failed (exit {proc.returncode}): {' '.join(cmd)}\n"
                         f"{proc.stderr.strip()[-2000:]}")
    return cmd, wall


def convert(item, out_dir):
    """One summary item's .cat.csv -> the common CSV; returns the row count."""
    source = next(p for p in item["outputs"] if p.endswith(".cat.csv"))
    with open(source, newline="") as handle:
        rows = list(csv.DictReader(handle))
    col = lambda name: np.array([float(r[name]) for r in rows]) if rows and name in rows[0] else None  # noqa: E731
    npix = col("npix") if rows else np.empty(0)
    flux = col("flux_iso")
    if flux is None and rows:
        flux = col("flux") - npix * float(item["background"]["median"])
    # imflow's `theta` is in radians, counter-clockwise from +x (as SEP's); the CSV has degrees.
    theta = col("theta")
    theta = np.degrees(theta) if theta is not None else None
    columns = {"x": col("x") if rows else np.empty(0), "y": col("y") if rows else np.empty(0),
               "flux": flux if flux is not None else np.empty(0), "npix": npix}
    flags = col("flags")
    deblended = (flags.astype(np.int64) & 4) > 0 if flags is not None else None  # 4: split by deblend
    for name, values in (("a", col("a")), ("b", col("b")), ("theta_deg", theta), ("deblended", deblended)):
        if values is not None:
            columns[name] = values
    name = os.path.basename(item["file"])[:-len(".fits")]
    return common.write_catalog(os.path.join(out_dir, name + ".csv"), columns)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--imflow", default="build/imflow", help="imflow binary")
    parser.add_argument("--pipeline", required=True, help="pipeline YAML (config/peers-*.yaml)")
    parser.add_argument("--images", required=True, help="directory of 2-D FITS images")
    parser.add_argument("--out", required=True, help="directory for <image>.csv and timing.json")
    parser.add_argument("--threads", type=int, default=0, help="imflow --threads (0: all cores)")
    parser.add_argument("--device", default="cpu", help="imflow --device")
    parser.add_argument("--label", default="imflow", help="tool name in timing.json")
    parser.add_argument("--bgsub-out", help="warm-up run writes background-subtracted images here")
    parser.add_argument("--deblend-variant", choices=("drop", "nosplit", "noclean", "sexclean", "sextractor",
                                                      "sextractor-noclean"),
                        help="run the pipeline without its deblend step, with it splitting nothing, "
                             "or without CLEAN")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    if args.deblend_variant:
        args.pipeline = pipeline_variant(args.pipeline, args.out, deblend=args.deblend_variant)
    run_dir = os.path.join(args.out, "imflow-out")
    if args.bgsub_out:  # the warm-up run also writes <image>.bgsub.fits for background_check.py
        os.makedirs(args.out, exist_ok=True)
        run_imflow(args, args.bgsub_out, pipeline_variant(args.pipeline, args.out, bgsub=True))
    else:  # warm-up: page cache, first-touch allocations, GPU context
        run_imflow(args, run_dir)
    cmd, wall = run_imflow(args, run_dir)
    with open(os.path.join(run_dir, "summary.json")) as handle:
        summary = json.load(handle)
    version = subprocess.run([args.imflow, "--version"], capture_output=True, text=True,
                             check=False).stdout.strip()
    with open(args.pipeline) as handle:
        pipeline_text = handle.read()
    timing = common.Timing(args.label, version, {"pipeline": args.pipeline, "yaml": pipeline_text,
                                                 "threads": summary.get("threads"),
                                                 "device": summary.get("device")},
                           "imflow's per-item compute stages (all but read and write)")
    for item in summary["items"]:
        if item["status"] != "ok":
            raise SystemExit(f"{item['file']}: imflow failed: {item.get('error')}")
        n = convert(item, args.out)
        stages = item["seconds"]
        compute = sum(v for k, v in stages.items() if k not in NOT_COMPUTE)
        timing.add(item["file"], (item["height"], item["width"]), n, compute, stages=stages,
                   background=item.get("background"))
    totals = summary["totals"]
    timing.write(args.out, command=" ".join(os.path.basename(c) if os.path.isabs(c) else c for c in cmd),
                 process_wall_seconds=wall, imflow_wall_seconds=totals.get("wall_seconds"),
                 images_per_second=totals.get("images_per_second"))
    shutil.rmtree(run_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
