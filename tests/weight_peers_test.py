"""Weight maps (input.weight) against Debian's source-extractor 2.25 and SEP 1.4.1.

There is no real weight map among the datasets, so one is made from a noise model of a real image:
the ISAAC image (the committed crop, and the full frame when datasets/fetch.sh has fetched it) is
given an exposure map E (a gradient from 0.4 to 1 across the columns, half of it in a band of rows,
as a dither pattern leaves it), noise is added so that the image's noise is sigma / sqrt(E)
(sigma: its own sky noise), and a chip gap of columns and a corner get no exposure at all. Then:
- MAP_WEIGHT: weight = E (0 in the gap and corner), unnormalised: SExtractor rescales it to the
  image's measured noise (RESCALE_WEIGHTS Y), imflow too (summary metric weight_scale);
- MAP_RMS: rms = sigma / sqrt(E) (1e31, a bad pixel, in the gap and corner), used as it is.
imflow (mesh 32/3, segment 3 sigma relative_to: rms_map, label 8, measure gain 0) and SExtractor
(BACK_SIZE 32, BACK_FILTERSIZE 3, DETECT_THRESH 3, no filter, no deblending, no cleaning, minarea 1,
INTERP_TYPE NONE, GAIN 0) must find the same objects (99% of each side's matched, same area and
box) and, per object, THRESHOLD (3 x the smallest rms of its pixels, imflow's from its
weight_scale), FLUX_ISO and FLUXERR_ISO within 1%, and IMAFLAGS_ISO, NIMAFLAGS_ISO equal (a flag
map given to both). SEP: sep.extract(data - back, 3, err=rms, mask) with imflow's rms (its
rescaled weight map) finds the same segments, flux and sqrt(sum rms^2) within 1e-5, and
sep.sum_circle with err=rms gives imflow's FLUX_APER and FLUXERR_APER within 1e-5. Dual-image mode
(--detect) against `source-extractor det.fits,meas.fits`: the same objects, FLUX_ISO and
FLUXERR_ISO within 1%, with both images' background RMS maps as their noise and with a weight map
per image (input.detect.weight and input.weight; WEIGHT_TYPE MAP_WEIGHT,MAP_WEIGHT).
Usage: weight_peers_test.py IMFLOW SOURCE_DIR  (python3 with numpy, astropy and sep 1.4.1)"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import sep
from astropy.io import fits
from astropy.table import Table

from sextractor_peers import modelled_weights, pair_by_box, sextractor

imflow, src = sys.argv[1], sys.argv[2]
sep.set_extract_pixstack(10**7)
sep.set_sub_object_limit(10**4)
work = tempfile.mkdtemp()
NSIGMA = 3.0
APERTURE = 6.0
PARAMS = ["NUMBER", "X_IMAGE", "Y_IMAGE", "ISOAREA_IMAGE", "XMIN_IMAGE", "YMIN_IMAGE", "XMAX_IMAGE", "YMAX_IMAGE",
          "FLUX_ISO", "FLUXERR_ISO", "THRESHOLD", "IMAFLAGS_ISO", "NIMAFLAGS_ISO"]
# Dual-image mode: ISOAREA_IMAGE counts the pixels above the threshold in the measurement image
# there; ISOAREAF_IMAGE is the detected area (imflow's npix).
DUAL_PARAMS = ["NUMBER", "X_IMAGE", "Y_IMAGE", "ISOAREAF_IMAGE", "XMIN_IMAGE", "YMIN_IMAGE", "XMAX_IMAGE", "YMAX_IMAGE",
               "FLUX_ISO", "FLUXERR_ISO"]
problems = []
if shutil.which("source-extractor") is None:
    sys.exit("FAIL: source-extractor not found: tools/install-deps.sh installs Debian's source-extractor package")


def make_inputs(path, inputs):
    """The noise-modelled image, its weight map and its RMS map; returns sigma and the bad-pixel mask."""
    rng = np.random.default_rng(7)
    stem, data, bad, sigma = modelled_weights(path, inputs, rng)
    header = fits.getheader(path)
    height, width = data.shape
    # A flag map: bit 1 on 3% of the pixels, bit 4 on a band of columns, bit 2 on a block.
    flags = np.where(rng.random(data.shape) < 0.03, 1, 0).astype(np.int16)
    flags[:, width // 4: width // 4 + 3] |= 4
    flags[height // 2: height // 2 + height // 8, width // 2: width // 2 + width // 8] |= 2
    fits.writeto(os.path.join(inputs, stem + ".flag.fits"), flags)
    # Dual-image mode's measurement image: another band of the same field, 0.6 x the flux on a
    # sky of 150 with noise of its own.
    other = 0.6 * data + 150.0 + rng.normal(0.0, 0.5 * sigma, data.shape)
    os.makedirs(os.path.join(work, "measure", "maps"), exist_ok=True)
    fits.writeto(os.path.join(work, "measure", stem + ".fits"), other.astype(np.float32), header,
                 output_verify="silentfix")
    # Its weight map: the inverse of its variance, 0.36 sigma^2 / E + 0.25 sigma^2 (unnormalised:
    # rescaled to the band's own noise), none where the detection image's is none.
    exposure = fits.getdata(os.path.join(inputs, "maps", stem + ".weight.fits")).astype(np.float64)
    weight = np.where(bad, 0.0, 1.0 / (0.36 / np.where(bad, 1.0, exposure) + 0.25))
    fits.writeto(os.path.join(work, "measure", "maps", stem + ".weight.fits"), weight.astype(np.float32))
    return stem, data.astype(np.float32), bad


def run_imflow(inputs, out, name, companions, *extra):
    """imflow's catalogs (with the aperture photometry of APERTURE pixels in diameter) and summary records."""
    config = os.path.join(work, f"{name}.yaml")
    with open(config, "w") as f:
        f.write(f"input: {{patterns: ['*.fits']{companions}}}\n"
                "output: {formats: [ldac, labels, bgsub]}\ndevice: cpu\nsteps:\n"
                "  - background: {method: mesh, size: 32, filter_size: 3}\n"
                f"  - segment: {{nsigma: {NSIGMA}, relative_to: rms_map}}\n"
                f"  - label: {{connectivity: 8}}\n  - measure: {{gain: 0, apertures: [{APERTURE}], mask_neighbours: false}}\n")
    subprocess.run([imflow, "-q", "run", config, "--input", inputs, "--output", out, "--threads", "2", *extra], check=True)
    with open(os.path.join(out, "summary.json")) as f:
        return {os.path.basename(r["file"]): r for r in json.load(f)["items"]}


def run_sextractor(image, catalog, *options, columns=PARAMS):
    return sextractor(work, image, catalog, columns, "-FILTER", "N", "-DEBLEND_MINCONT", "1", "-CLEAN", "N",
                      "-DETECT_MINAREA", "1", "-DETECT_THRESH", str(NSIGMA), "-ANALYSIS_THRESH", str(NSIGMA),
                      "-BACK_SIZE", "32", "-BACK_FILTERSIZE", "3", "-INTERP_TYPE", "NONE", "-GAIN", "0", *options)


def relative(a, b, scale=None):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return np.abs(a - b) / np.maximum(np.abs(b) if scale is None else scale, 1e-300)


def iso_errors(o, t):
    """FLUX_ISO (relative to max(|flux|, its error)) and FLUXERR_ISO relative differences of paired rows."""
    return {"FLUX_ISO": relative(o["FLUX_ISO"], t["FLUX_ISO"], np.maximum(np.abs(t["FLUX_ISO"]), t["FLUXERR_ISO"])),
            "FLUXERR_ISO": relative(o["FLUXERR_ISO"], t["FLUXERR_ISO"])}


def report(label, line, errors):
    """Prints the agreement; 99% of the objects must be within 1% for every column."""
    for name, error in errors.items():
        within = (error <= 0.01).mean()
        line += f"; {name} max {error.max():.2g}, {within:.2%} within 1%"
        if within < 0.99:
            problems.append(f"{label}: {name} within 1% for {within:.2%} of the objects (max {error.max():.3g})")
    print(f"{label}: {line}", flush=True)


def paired(label, out, stem, theirs):
    """imflow's LDAC rows and SExtractor's, paired, and what was paired of how many (None when under 99%
    of either side pair up)."""
    ours = Table.read(os.path.join(out, stem + ".ldac"), hdu=2)
    pairs = pair_by_box(ours, theirs, 0.01)
    matched = len(pairs) / max(len(theirs), 1), len(pairs) / max(len(ours), 1)
    if len(theirs) < 20 or min(matched) < 0.99:
        problems.append(f"{label}: {len(pairs)} objects matched of imflow's {len(ours)} and SExtractor's {len(theirs)}")
        return None
    return ours[pairs[:, 0]], theirs[pairs[:, 1]], f"{len(pairs)} objects paired (imflow {len(ours)}, SExtractor {len(theirs)})"


def compare(label, out, stem, rms, theirs):
    rows = paired(label, out, stem, theirs)
    if rows is None:
        return
    o, t, counts = rows
    labels = fits.getdata(os.path.join(out, stem + ".labels.fits"))
    area = np.asarray(o["ISOAREA_IMAGE"]) == np.asarray(t["ISOAREA_IMAGE"])
    # THRESHOLD: NSIGMA x the smallest rms over the object's pixels (imflow's label map, its rms).
    smallest = np.full(labels.max() + 1, np.inf)
    np.minimum.at(smallest, labels.ravel(), rms.ravel())
    threshold = NSIGMA * smallest[np.asarray(o["NUMBER"])]
    flags_equal = all(np.array_equal(np.asarray(o[k]), np.asarray(t[k])) for k in ("IMAFLAGS_ISO", "NIMAFLAGS_ISO"))
    if not flags_equal:
        problems.append(f"{label}: IMAFLAGS_ISO or NIMAFLAGS_ISO differ from SExtractor's")
    errors = {"THRESHOLD": relative(threshold, t["THRESHOLD"]), **iso_errors(o, t)}
    report(label, f"{counts}, same ISOAREA "
           f"{area.mean():.2%}, IMAFLAGS_ISO and NIMAFLAGS_ISO equal {flags_equal} "
           f"({(np.asarray(t['IMAFLAGS_ISO']) > 0).sum()} flagged)", errors)


def compare_dual(label, out, stem, theirs):
    rows = paired(label, out, stem, theirs)
    if rows is None:
        return
    o, t, counts = rows
    area = (np.asarray(o["ISOAREA_IMAGE"]) == np.asarray(t["ISOAREAF_IMAGE"])).mean()
    report(label, f"{counts}, same area {area:.2%}",
           iso_errors(o, t))


def compare_sep(label, out, stem, data, bad, rms):
    ours = Table.read(os.path.join(out, stem + ".ldac"), hdu=2)
    mask = bad.astype(np.float32)
    back = sep.Background(data, mask=mask, bw=32, bh=32, fw=3, fh=3)
    subtracted = np.where(bad, 0.0, data - back.back()).astype(np.float32)
    objects, segmap = sep.extract(subtracted, NSIGMA, err=np.where(bad, 1e30, rms).astype(np.float32), mask=mask,
                                  minarea=1, filter_kernel=None, deblend_cont=1.0, clean=False, segmentation_map=True)
    if len(objects) != len(ours):
        problems.append(f"{label}: SEP finds {len(objects)} objects, imflow {len(ours)}")
        return
    order = np.lexsort((objects["y"], objects["x"]))
    mine = np.lexsort((np.asarray(ours["Y_IMAGE"]), np.asarray(ours["X_IMAGE"])))
    npix = np.bincount(segmap.ravel(), minlength=len(objects) + 1)[1:]
    variance = np.bincount(segmap.ravel(), weights=rms.astype(np.float64).ravel() ** 2, minlength=len(objects) + 1)[1:]
    same = np.array_equal(npix[order], np.asarray(ours["ISOAREA_IMAGE"])[mine])
    flux = relative(ours["FLUX_ISO"][mine], objects["flux"][order], np.maximum(np.abs(objects["flux"][order]), 1e-3))
    fluxerr = relative(ours["FLUXERR_ISO"][mine], np.sqrt(variance[order]))
    # The apertures' errors sum the weight map's variances: SEP's sum_circle with err = the same map.
    image = fits.getdata(os.path.join(out, stem + ".bgsub.fits")).astype(np.float32)
    aperture, aperture_err, _ = sep.sum_circle(np.nan_to_num(image), np.asarray(ours["X_IMAGE"], float) - 1,
                                               np.asarray(ours["Y_IMAGE"], float) - 1, APERTURE / 2,
                                               err=rms.astype(np.float32), mask=mask, subpix=0)
    scale = np.maximum(np.abs(aperture), aperture_err)
    aper = relative(np.asarray(ours["FLUX_APER"]).ravel(), aperture, scale)
    aper_err = relative(np.asarray(ours["FLUXERR_APER"]).ravel(), aperture_err)
    print(f"{label} vs SEP: {len(objects)} objects, same areas {same}, flux_iso max {flux.max():.2g}, "
          f"fluxerr_iso max {fluxerr.max():.2g}; FLUX_APER({APERTURE:g}) max {aper.max():.2g}, "
          f"FLUXERR_APER max {aper_err.max():.2g}", flush=True)
    if not same or max(flux.max(), fluxerr.max(), aper.max(), aper_err.max()) > 1e-5:
        problems.append(f"{label} vs SEP: areas equal {same}, flux {flux.max():.3g}, fluxerr {fluxerr.max():.3g}, "
                        f"aperture {aper.max():.3g}, its error {aper_err.max():.3g}")


try:
    inputs = os.path.join(work, "in")
    os.makedirs(inputs)
    images = [os.path.join(src, "datasets/samples/isaac_crop.fits")]
    full = os.path.join(src, "datasets/data/astro/ISAAC.2006-04-13T06-32-38.944.fits")
    if os.path.exists(full):
        images.append(full)
    made = [make_inputs(path, inputs) for path in images]
    flags = ", flags: {image: '{stem}.flag.fits'}"
    weighted = run_imflow(inputs, os.path.join(work, "out_weight"), "weight",
                          ", weight: {image: 'maps/{stem}.weight.fits', type: map_weight}" + flags)
    run_imflow(inputs, os.path.join(work, "out_rms"), "rms", ", weight: {image: 'maps/{stem}.rms.fits', type: map_rms}" + flags)
    for stem, data, bad in made:
        if set(weighted) != {s + ".fits" for s, _, _ in made}:
            problems.append(f"imflow processed {sorted(weighted)}: the weight and RMS maps are not images")
        scale = weighted[stem + ".fits"]["metrics"]["weight_scale"]
        weight = fits.getdata(os.path.join(inputs, "maps", stem + ".weight.fits")).astype(np.float32)
        rms_weight = np.where(bad, np.inf, np.sqrt(np.float32(scale) ** 2 / np.where(bad, 1, weight)))
        rms_map = fits.getdata(os.path.join(inputs, "maps", stem + ".rms.fits")).astype(np.float64)
        rms_map[bad] = np.inf
        print(f"{stem}: imflow's weight_scale {scale:.6g} (the image's noise for weight 1)", flush=True)
        for kind, rms, out, weight_name in (("MAP_WEIGHT", rms_weight, "out_weight", "maps/{}.weight.fits"),
                                             ("MAP_RMS", rms_map, "out_rms", "maps/{}.rms.fits")):
            theirs = run_sextractor(os.path.join(inputs, stem + ".fits"), os.path.join(work, f"sex_{kind}_{stem}.ldac"),
                                    "-WEIGHT_TYPE", kind, "-WEIGHT_IMAGE", os.path.join(inputs, weight_name.format(stem)),
                                    "-FLAG_IMAGE", os.path.join(inputs, stem + ".flag.fits"), "-FLAG_TYPE", "OR")
            compare(f"{stem} {kind}", os.path.join(work, out), stem, rms, theirs)
            compare_sep(f"{stem} {kind}", os.path.join(work, out), stem, data, bad, np.where(bad, 0, rms))
    # Dual-image mode: detect on the noise-modelled image, measure on the other band, as
    # `source-extractor det.fits,meas.fits` with both images' background RMS maps as their noise
    # (WEIGHT_TYPE BACKGROUND,BACKGROUND).
    dual = os.path.join(work, "out_dual")
    run_imflow(os.path.join(work, "measure"), dual, "dual", "", "--detect", inputs)
    for stem, data, bad in made:
        theirs = run_sextractor(os.path.join(inputs, stem + ".fits") + "," + os.path.join(work, "measure", stem + ".fits"),
                                os.path.join(work, f"sex_dual_{stem}.ldac"), "-WEIGHT_TYPE", "BACKGROUND,BACKGROUND",
                                columns=DUAL_PARAMS)
        compare_dual(f"{stem} dual-image", dual, stem, theirs)
    # Dual-image mode with a weight map per image (WEIGHT_TYPE MAP_WEIGHT,MAP_WEIGHT and two
    # WEIGHT_IMAGEs): the detection image's sets the threshold, the band's the errors, each
    # rescaled to its own image's noise.
    dual_weighted = os.path.join(work, "out_dual_weight")
    maps = os.path.join(inputs, "maps", "{stem}.weight.fits")
    run_imflow(os.path.join(work, "measure"), dual_weighted, "dual_weight",
               ", weight: {image: 'maps/{stem}.weight.fits', type: map_weight}, "
               f"detect: {{image: '{inputs}/{{stem}}.fits', weight: {{image: '{maps}', type: map_weight}}}}")
    for stem, data, bad in made:
        theirs = run_sextractor(os.path.join(inputs, stem + ".fits") + "," + os.path.join(work, "measure", stem + ".fits"),
                                os.path.join(work, f"sex_dual_weight_{stem}.ldac"), "-WEIGHT_TYPE", "MAP_WEIGHT,MAP_WEIGHT",
                                "-WEIGHT_IMAGE", maps.format(stem=stem) + "," +
                                os.path.join(work, "measure", "maps", stem + ".weight.fits"), columns=DUAL_PARAMS)
        compare_dual(f"{stem} dual-image MAP_WEIGHT,MAP_WEIGHT", dual_weighted, stem, theirs)
finally:
    shutil.rmtree(work, ignore_errors=True)

if problems:
    print("\n".join("FAIL: " + p for p in problems[:40]), file=sys.stderr)
    sys.exit(1)
print("weight_peers: OK")
