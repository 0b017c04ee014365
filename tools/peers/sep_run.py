"""Runs SEP (SExtractor's core as a library) on every image of a directory with settings equivalent
to an imflow pipeline; writes <image>.csv (the common catalog) and timing.json. One core: SEP does
not thread. The per-image seconds are background + extraction (no FITS read, no CSV write), the
median of --repeat calls after an untimed one that finds the pixel stack the image needs (SEP's
default 300000, doubled while "internal pixel buffer full") and warms the caches.
--deblend: SExtractor's default deblending (deblend_nthresh 32, deblend_cont 0.005, clean=True,
clean_param 1.0, minarea 5; DEBLEND_SETTINGS) instead of none (deblend_cont 1.0, no clean, minarea 1).
--no-clean turns CLEAN off (with --deblend).
Usage: sep_run.py --images DIR --out DIR [--nsigma 5] [--sep-noise var|rms|globalrms] [--deblend [--no-clean]]"""
import argparse
import os
import sys
import time

import numpy as np
import sep

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402


NO_DEBLEND_SETTINGS = {"minarea": 1, "deblend_nthresh": 32, "deblend_cont": 1.0, "clean": False}
DEBLEND_SETTINGS = {"minarea": 5, "deblend_nthresh": 32, "deblend_cont": 0.005, "clean": True,
                    "clean_param": 1.0}


def extract(data: np.ndarray, args):
    """SEP with no filtering and the deblending settings chosen; returns (objects, bkg info)."""
    mask = ~np.isfinite(data)
    has_mask = bool(mask.any())
    if has_mask:
        data = np.where(mask, 0.0, data).astype(np.float32)
    if args.background == "mesh":
        bkg = sep.Background(data, mask=mask if has_mask else None, bw=args.mesh, bh=args.mesh,
                             fw=args.filter, fh=args.filter, fthresh=0.0)
        sub = data - bkg.back()
        rms = bkg.rms()
        # The bicubic rms map can overshoot below zero between meshes of very different rms
        # (chopped mid-IR frames); SExtractor (WEIGHT_TYPE BACKGROUND) thresholds against
        # sqrt(rms^2) there, SEP's err=rms against a negative value. var=rms^2 is SExtractor's.
        noise = {"var": rms.astype(np.float64) ** 2, "rms": rms, "globalrms": bkg.globalrms}
        noise_kw = {"var" if args.sep_noise == "var" else "err": noise[args.sep_noise]}
        thresh = args.nsigma
        info = {"globalback": float(bkg.globalback), "globalrms": float(bkg.globalrms),
                "negative_rms_pixels": int((rms < 0).sum())}
    else:
        median, std = common.kappa_sigma(data[~mask] if has_mask else data, args.kappa)
        sub = (data.astype(np.float64) - median).astype(np.float32)
        noise_kw, thresh = {}, args.nsigma * std
        info = {"median": median, "std": std}
    while True:
        try:
            objects = sep.extract(sub, thresh, **noise_kw, mask=mask if has_mask else None,
                                  filter_kernel=None, **args.settings)
            break
        except Exception as exc:  # SEP raises a plain Exception for a full pixel buffer
            if "sub-objects" in str(exc):  # "limit of sub-objects reached while deblending"
                sep.set_sub_object_limit(2 * sep.get_sub_object_limit())
                continue
            if "pixel buffer full" not in str(exc):
                raise
            # SEP's pixel stack costs ~30 ns per entry on every call: start at its default
            # (300000) and grow only when an image needs more, as a SEP user would.
            sep.set_extract_pixstack(2 * sep.get_extract_pixstack())
    info["pixstack"] = sep.get_extract_pixstack()
    return objects, info


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    common.add_common_args(parser)
    parser.add_argument("--sep-noise", choices=("var", "rms", "globalrms"), default="var",
                        help="mesh mode: threshold nsigma x sqrt(var=rms map^2) (SExtractor's "
                             "WEIGHT_TYPE BACKGROUND; default), x the signed rms map (err=rms), or "
                             "x the global rms (SExtractor's WEIGHT_TYPE NONE)")
    parser.add_argument("--repeat", type=int, default=1, help="timed calls per image (median)")
    parser.add_argument("--deblend", action="store_true", help="SExtractor's default deblending")
    parser.add_argument("--no-clean", action="store_true", help="with --deblend: clean=False")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    args.settings = dict(DEBLEND_SETTINGS if args.deblend else NO_DEBLEND_SETTINGS)
    if args.no_clean:
        args.settings["clean"] = False
    noise_call = {"var": "var=rms**2", "rms": "err=rms", "globalrms": "err=globalrms"}[args.sep_noise]
    settings = {"background": args.background, "mesh": args.mesh, "filter": args.filter,
                "nsigma": args.nsigma, "noise": args.sep_noise, "filter_kernel": None, **args.settings,
                "call": "sep.Background(bw=bh=mesh, fw=fh=filter) + "
                        f"sep.extract(data-back, nsigma, {noise_call})"}
    timing = common.Timing("sep", sep.__version__, settings,
                           "sep.Background + back()/rms() + sep.extract, one core")
    for path in common.list_images(args.images):
        data = common.read_image(path)
        sep.set_extract_pixstack(300_000)
        extract(data, args)  # find the pixel stack this image needs (an untimed first call)
        runs = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            objects, info = extract(data, args)
            runs.append(time.perf_counter() - start)
        seconds = float(np.median(runs))
        info["runs_seconds"] = runs
        name = os.path.basename(path)[:-len(".fits")]
        n = common.write_catalog(os.path.join(args.out, name + ".csv"), {
            "x": objects["x"], "y": objects["y"], "flux": objects["flux"], "npix": objects["npix"],
            "a": objects["a"], "b": objects["b"], "theta_deg": np.degrees(objects["theta"]),
            "deblended": (objects["flag"] & sep.OBJ_MERGED) > 0})
        timing.add(path, data.shape, n, seconds, background=info)
    timing.write(args.out)


if __name__ == "__main__":
    main()
