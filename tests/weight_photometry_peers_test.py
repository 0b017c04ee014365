"""The photometry with weight maps (input.weight) against Debian's source-extractor 2.25, on
1. the ISAAC image with weight_peers' modelled weight map (tests/sextractor_peers.py: an exposure
   map of a dither pattern, a chip gap), MAP_WEIGHT and MAP_RMS;
2. coadds made as a survey makes them: Debian's SWarp 2.41 (COMBINE_TYPE WEIGHTED, its other
   defaults) co-adds three shifted sub-frames of the ISAAC image (noise added for exposures of 1,
   0.5 and 0.3) and, when datasets/fetch.sh has fetched them, the two DSS frames whose fields
   overlap; its coadd.weight.fits is the MAP_WEIGHT map.
imflow (mesh 32/3, 3 sigma relative_to: rms_map, 8-connected, measure gain 0, auto: {kron_fact:
2.5, min_radius: 0, min_kron_radius: 3.5}, apertures [5, 10], aperture_subpix: 5, flux_radius 0.5,
windowed, mask_neighbours)
and SExtractor (BACK_SIZE 32, BACK_FILTERSIZE 3, DETECT_THRESH 3, no filter, deblending or CLEAN,
DETECT_MINAREA 1, INTERP_TYPE NONE, GAIN 0, PHOT_AUTOPARAMS 2.5,3.5, PHOT_APERTURES 5,10) must
pair 99% of each side's objects within 1e-3 px and give 99% of them THRESHOLD (3 x the smallest
rms of the object's pixels, imflow's from its weight_scale), FLUX_ISO (relative to max(|flux|,
its error)) and FLUXERR_ISO within 1%; on the isolated sources (no other segment and no bad pixel
within reach of any measurement, FLAGS 0 in both, ISOAREA >= 5) every KRON_RADIUS, FLUX_AUTO,
FLUXERR_AUTO, FLUX_APER, FLUXERR_APER, FLUX_RADIUS, FLUX_WIN and FLUXERR_WIN within 1%. The MAP_WEIGHT images are measured three
times: GAIN 0, then with a gain (the frames' GAIN = 4, SWarp's for the coadds, read by both from
the header) with input.weight.gain true and false as SExtractor's WEIGHT_GAIN Y and N; WEIGHT_GAIN
must change some error by 5% (the test exercises it). Prints the worst and median differences
(docs/astronomy.md quotes them).
Usage: weight_photometry_peers_test.py IMFLOW SOURCE_DIR  (Debian's python3: numpy, astropy)"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
from astropy.io import fits
from astropy.table import Table

from sextractor_peers import isolated, modelled_weights, nearest, sextractor, sky_sigma, values

imflow, src = sys.argv[1], sys.argv[2]
work = tempfile.mkdtemp()
NSIGMA = 3.0
APERTURES = (5, 10)
PARAMS = ["NUMBER", "X_IMAGE", "Y_IMAGE", "A_IMAGE", "FLAGS", "ISOAREA_IMAGE", "THRESHOLD", "FLUX_ISO", "FLUXERR_ISO",
          "KRON_RADIUS", "FLUX_AUTO", "FLUXERR_AUTO", f"FLUX_APER({len(APERTURES)})", f"FLUXERR_APER({len(APERTURES)})",
          "FLUX_RADIUS", "XWIN_IMAGE", "YWIN_IMAGE", "FLUX_WIN", "FLUXERR_WIN"]
EVERY = ("THRESHOLD", "FLUX_ISO", "FLUXERR_ISO")
ISOLATED = ("KRON_RADIUS", "FLUX_AUTO", "FLUXERR_AUTO", "FLUX_APER", "FLUXERR_APER", "FLUX_RADIUS", "FLUX_WIN",
            "FLUXERR_WIN")
ERRORS = ("FLUXERR_ISO", "FLUXERR_AUTO", "FLUXERR_APER", "FLUXERR_WIN")  # what WEIGHT_GAIN changes
WINDOW_PER_RADIUS = 4 * 2 / 2.35  # the window's reach: 4 sigma, sigma = 2 / 2.35 x FLUX_RADIUS
EXPOSURES = (1.0, 0.5, 0.3)  # the dithered sub-frames'
GAIN = 4.0  # e-/ADU: the frames' GAIN keyword (SWarp writes the coadd's), else measure's gain
# (name, input.weight.gain, measure's gain, SExtractor's options)
RUNS = (("GAIN 0", "true", "gain: 0", ("-GAIN", "0", "-GAIN_KEY", "NOGAIN")),
        ("GAIN, WEIGHT_GAIN Y", "true", f"gain: {GAIN}, gain_keyword: GAIN", ("-GAIN", str(GAIN), "-WEIGHT_GAIN", "Y")),
        ("GAIN, WEIGHT_GAIN N", "false", f"gain: {GAIN}, gain_keyword: GAIN", ("-GAIN", str(GAIN), "-WEIGHT_GAIN", "N")))
problems = []
for tool in ("source-extractor", "SWarp"):
    if shutil.which(tool) is None:
        sys.exit(f"FAIL: {tool} not found: tools/install-deps.sh installs Debian's source-extractor and swarp packages")


def dithered(path, frames, rng):
    """Three sub-frames of 0.8 x the image, shifted, their headers' CRPIX moved with them, with noise
    added so that each is as deep as an exposure of EXPOSURES; returns their paths."""
    with fits.open(path) as hdus:
        header, data = hdus[0].header, hdus[0].data.astype(np.float64)
    height, width = data.shape
    side, sigma = int(0.8 * min(height, width)), sky_sigma(data)
    offsets = ((0, 0), (height - side, (width - side) // 2), ((height - side) // 3, width - side))
    paths = []
    for k, ((y0, x0), exposure) in enumerate(zip(offsets, EXPOSURES)):
        frame = data[y0:y0 + side, x0:x0 + side] + rng.normal(0.0, sigma * np.sqrt(1.0 / exposure - 1.0), (side, side))
        moved = header.copy()
        moved["CRPIX1"] -= x0
        moved["CRPIX2"] -= y0
        moved["GAIN"] = GAIN
        paths.append(os.path.join(frames, f"{os.path.basename(path)[:-5]}_{k}.fits"))
        fits.writeto(paths[-1], frame.astype(np.float32), moved, output_verify="silentfix")
    return paths


def with_gain(path, frames):
    """A copy of the frame `path` in `frames` whose header says GAIN; returns its path."""
    copy = os.path.join(frames, os.path.basename(path))
    with fits.open(path) as hdus:
        hdus[0].header["GAIN"] = GAIN
        hdus.writeto(copy, output_verify="silentfix")
    return copy


def coadd(frames, inputs, stem):
    """SWarp's weighted coadd of `frames` as inputs/STEM.fits (its GAIN the frames' combined) and its
    weight map as inputs/maps/STEM.weight.fits; returns the stem and the bad-pixel (weight 0) mask."""
    config = os.path.join(work, "default.swarp")
    if not os.path.exists(config):
        with open(config, "w") as f:
            f.write(subprocess.run(["SWarp", "-dd"], capture_output=True, text=True, check=True).stdout)
    weight = os.path.join(inputs, "maps", stem + ".weight.fits")
    subprocess.run(["SWarp", *frames, "-c", config, "-IMAGEOUT_NAME", os.path.join(inputs, stem + ".fits"),
                    "-WEIGHTOUT_NAME", weight, "-COMBINE_TYPE", "WEIGHTED", "-VERBOSE_TYPE", "QUIET", "-WRITE_XML", "N"],
                   check=True, cwd=work)
    return stem, fits.getdata(weight) <= 0


def run_imflow(inputs, out, weight, gain="gain: 0"):
    """imflow's LDAC catalogs and label maps under `out`; returns the summary's records by file."""
    config = os.path.join(work, "imflow.yaml")
    with open(config, "w") as f:
        f.write(f"input: {{patterns: ['*.fits'], weight: {weight}}}\n"
                "output: {formats: [ldac, labels]}\ndevice: cpu\nsteps:\n"
                "  - background: {method: mesh, size: 32, filter_size: 3}\n"
                f"  - segment: {{nsigma: {NSIGMA}, relative_to: rms_map}}\n  - label: {{connectivity: 8}}\n"
                f"  - measure: {{{gain}, auto: {{kron_fact: 2.5, min_radius: 0, min_kron_radius: 3.5}},\n"
                f"              apertures: {list(APERTURES)}, aperture_subpix: 5, flux_radius: [0.5], windowed: true}}\n")
    subprocess.run([imflow, "-q", "run", config, "--input", inputs, "--output", out, "--threads", "2"], check=True)
    with open(os.path.join(out, "summary.json")) as f:
        return {os.path.basename(r["file"])[:-5]: r for r in json.load(f)["items"]}


def run_sextractor(image, catalog, kind, weight, gain=("-GAIN", "0", "-GAIN_KEY", "NOGAIN")):
    return sextractor(work, image, catalog, PARAMS, "-FILTER", "N", "-DEBLEND_MINCONT", "1", "-CLEAN", "N",
                      "-DETECT_MINAREA", "1", "-DETECT_THRESH", str(NSIGMA), "-ANALYSIS_THRESH", str(NSIGMA),
                      "-BACK_SIZE", "32", "-BACK_FILTERSIZE", "3", "-INTERP_TYPE", "NONE", *gain,
                      "-PHOT_AUTOPARAMS", "2.5,3.5", "-PHOT_APERTURES", ",".join(map(str, APERTURES)),
                      "-WEIGHT_TYPE", kind, "-WEIGHT_IMAGE", weight)


def relative(ours, theirs, name):
    """|imflow - SExtractor| / |SExtractor| per row (the fluxes relative to max(|flux|, its error))."""
    a, b = values(ours, name), values(theirs, name)
    scale = np.abs(b)
    if name.startswith("FLUX_") and name != "FLUX_RADIUS":
        scale = np.maximum(scale, values(theirs, name.replace("FLUX_", "FLUXERR_")))
    return (np.abs(a - b) / np.maximum(scale, 1e-300)).max(axis=1)


def summary(errors):
    return ", ".join(f"{name} {error.max():.2g} (median {np.median(error):.2g})" for name, error in errors.items())


def compare(label, out, stem, rms, bad, theirs):
    """imflow's catalog against SExtractor's `theirs`; `rms` is the noise imflow measured with."""
    ours = Table.read(os.path.join(out, stem + ".ldac"), hdu=2)
    match, paired = nearest(ours, theirs, 1e-3)
    if min(paired.sum() / max(len(theirs), 1), len(set(match[paired])) / max(len(ours), 1)) < 0.99 or len(theirs) < 20:
        problems.append(f"{label}: {paired.sum()} objects paired of imflow's {len(ours)} and SExtractor's {len(theirs)}")
        return
    ours, theirs = ours[match[paired]], theirs[paired]
    labels = fits.getdata(os.path.join(out, stem + ".labels.fits"))
    smallest = np.full(labels.max() + 1, np.inf)
    np.minimum.at(smallest, labels.ravel(), rms.ravel())
    ours["THRESHOLD"] = NSIGMA * smallest[np.asarray(ours["NUMBER"])]
    every = {name: relative(ours, theirs, name) for name in EVERY}
    for name, error in every.items():
        if (error <= 0.01).mean() < 0.99:
            problems.append(f"{label}: {name} within 1% for {(error <= 0.01).mean():.2%} of the objects")
    reach = lambda row: max(6.0 * row["A_IMAGE"], row["KRON_RADIUS"] * row["A_IMAGE"], max(APERTURES) / 2,
                            WINDOW_PER_RADIUS * np.max(row["FLUX_RADIUS"])) + 2
    clean = (np.asarray(ours["FLAGS"]) == 0) & (np.asarray(theirs["FLAGS"]) == 0)
    clean &= (np.asarray(ours["ISOAREA_IMAGE"]) >= 5) & (np.asarray(theirs["FLUX_AUTO"]) > 0)
    alone = isolated(labels, ours, reach)
    keep = clean & isolated(labels, ours, reach, bad)
    # Bad pixels within reach: SExtractor takes the symmetric pixel, imflow scales by the area.
    near_bad = clean & alone & ~keep
    if near_bad.any():
        print(f"{label}: {near_bad.sum()} isolated sources with bad pixels within reach (not compared): "
              + summary({name: relative(ours[near_bad], theirs[near_bad], name) for name in ISOLATED}), flush=True)
    if keep.sum() < 8:
        problems.append(f"{label}: only {keep.sum()} isolated sources")
        return
    alone = {name: relative(ours[keep], theirs[keep], name) for name in ISOLATED}
    for name, error in alone.items():
        for i in np.flatnonzero(error > 0.01)[:3]:
            row = theirs[keep][i]
            problems.append(f"{label}: source at ({row['X_IMAGE']:.2f}, {row['Y_IMAGE']:.2f}): {name} imflow "
                            f"{values(ours[keep], name)[i]}, SExtractor {values(theirs[keep], name)[i]}")
    print(f"{label}: {len(ours)} objects paired (imflow {len(match)}, SExtractor {len(paired)}); worst relative "
          f"difference: {summary(every)}; {keep.sum()} isolated: {summary(alone)}", flush=True)


try:
    inputs, rms_inputs, frames = (os.path.join(work, name) for name in ("in", "in_rms", "frames"))
    for directory in (os.path.join(inputs, "maps"), os.path.join(rms_inputs, "maps"), frames):
        os.makedirs(directory)
    rng = np.random.default_rng(11)
    isaac = [os.path.join(src, "datasets/samples/isaac_crop.fits")]
    full = os.path.join(src, "datasets/data/astro/ISAAC.2006-04-13T06-32-38.944.fits")
    if os.path.exists(full):
        isaac.append(full)
    modelled = [modelled_weights(path, rms_inputs, rng) for path in isaac]
    for stem, _, _, _ in modelled:  # the same image and weight map, read as MAP_WEIGHT
        shutil.copy(os.path.join(rms_inputs, stem + ".fits"), inputs)
        shutil.copy(os.path.join(rms_inputs, "maps", stem + ".weight.fits"), os.path.join(inputs, "maps"))
    coadds = [coadd(dithered(isaac[0], frames, rng), inputs, "coadd_isaac_crop")]
    dss = [os.path.join(src, "datasets/data/astro", name) for name in ("dss_test1.fits", "dss_test2.fits")]
    if all(os.path.exists(path) for path in dss):
        coadds.append(coadd([with_gain(path, frames) for path in dss], inputs, "coadd_dss"))
    images = [(stem, bad) for stem, _, bad, _ in modelled] + coadds
    weight_map = "{image: 'maps/{stem}.weight.fits', type: map_weight"
    for k, (run, weight_gain, gain, options) in enumerate(RUNS):
        out = os.path.join(work, f"out_{k}")
        weighted = run_imflow(inputs, out, f"{weight_map}, gain: {weight_gain}}}", gain)
        for stem, bad in images:
            weight_path = os.path.join(inputs, "maps", stem + ".weight.fits")
            weight = fits.getdata(weight_path).astype(np.float32)
            scale = np.float32(weighted[stem]["metrics"]["weight_scale"])
            rms = np.where(bad, np.inf, np.sqrt(scale ** 2 / np.where(bad, 1, weight)))
            if run == RUNS[0][0]:
                print(f"{stem}: {weight.shape[1]} x {weight.shape[0]}, weight_scale {scale:.6g}, "
                      f"{bad.mean():.1%} unexposed, GAIN {fits.getheader(os.path.join(inputs, stem + '.fits')).get('GAIN', GAIN):.4g}",
                      flush=True)
            theirs = run_sextractor(os.path.join(inputs, stem + ".fits"), os.path.join(work, f"sex_{stem}.ldac"),
                                    "MAP_WEIGHT", weight_path, options)
            compare(f"{stem} MAP_WEIGHT, {run}", out, stem, rms, bad, theirs)
    exercised = 0.0
    for stem, _ in images:  # what WEIGHT_GAIN changes: the runs with and without it
        scaled, plain = (Table.read(os.path.join(work, f"out_{k}", stem + ".ldac"), hdu=2) for k in (1, 2))
        with np.errstate(divide="ignore", invalid="ignore"):  # 0 / 0 or NaN: a source without a windowed error
            ratios = {name: values(scaled, name) / values(plain, name) for name in ERRORS}
        change = {name: np.where(np.isfinite(ratio), np.abs(ratio - 1), 0.0).max(axis=1)
                  for name, ratio in ratios.items()}
        print(f"{stem}: WEIGHT_GAIN Y against N changes imflow's {summary(change)}", flush=True)
        exercised = max([exercised] + [error.max() for error in change.values()])
    if exercised < 0.05:
        problems.append(f"WEIGHT_GAIN changes no error by 5% ({exercised:.3g}): the test does not exercise it")
    run_imflow(rms_inputs, os.path.join(work, "out_rms"), "{image: 'maps/{stem}.rms.fits', type: map_rms}")
    for stem, _, bad, _ in modelled:
        rms_path = os.path.join(rms_inputs, "maps", stem + ".rms.fits")
        rms = fits.getdata(rms_path).astype(np.float64)
        rms[bad] = np.inf
        theirs = run_sextractor(os.path.join(rms_inputs, stem + ".fits"), os.path.join(work, f"sex_rms_{stem}.ldac"),
                                "MAP_RMS", rms_path)
        compare(f"{stem} MAP_RMS, GAIN 0", os.path.join(work, "out_rms"), stem, rms, bad, theirs)
finally:
    shutil.rmtree(work, ignore_errors=True)

if problems:
    print("\n".join("FAIL: " + p for p in problems[:40]), file=sys.stderr)
    sys.exit(1)
print("weight_photometry_peers: OK")
