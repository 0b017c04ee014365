"""measure's photometry and its FITS_LDAC columns against Debian's source-extractor 2.25 and
psfex 3.21 (installed by tools/install-deps.sh), on the committed ISAAC and DSS crops and, when
datasets/fetch.sh has fetched it, the whole ISAAC frame (a dense star field):

1. SExtractor and imflow with the same settings (one background mesh over the image, no filter,
   deblending or cleaning, 5 sigma, gain 1; PHOT_AUTOPARAMS 2.5,3.5 as `auto: {kron_fact: 2.5,
   min_radius: 0, min_kron_radius: 3.5}`, PHOT_APERTURES 5,10 with SExtractor's 5 x 5 sampling as
   `aperture_subpix: 5`, PHOT_FLUXFRAC 0.5). On the isolated sources (no other segment within
   reach of any measurement, FLAGS 0 in both catalogs, FLAGS_WIN 0, ISOAREA >= 5: SExtractor's
   default DETECT_MINAREA; 1-4 pixel detections sit on exact pixel centres or halves, where
   SExtractor's float32 sample positions fall either side of a circle) SExtractor's KRON_RADIUS,
   FLUX_AUTO, FLUX_APER and FLUX_RADIUS must agree within 1% and XWIN_IMAGE/YWIN_IMAGE within
   1e-3 px; FLUXERR_AUTO, FLUX_WIN, FLUXERR_WIN, SNR_WIN and ERRAWIN/ERRBWIN are compared too, and
   FLAGS (all bits: SExtractor's 16 for a photometry box cut by the edge, its crowding bit 1) on
   every source. Prints the worst and
   median difference of every column, and those of imflow's default exact-overlap apertures
   (docs/astronomy.md quotes them).
2. VIGNET(35,35): on isolated sources imflow's stamps equal SExtractor's to float32 precision.
3. PSFEx with its default configuration builds a PSF from imflow's LDAC (VIGNET, SNR_WIN,
   FLUX_RADIUS, FLUX_APER, ELONGATION, FLAGS, SEXBKDEV and SEXGAIN in LDAC_IMHEAD) and from
   SExtractor's; their FWHM (PSF_FWHM) must agree within 2%.
Usage: ldac_photometry_peers_test.py IMFLOW SOURCE_DIR  (Debian's python3: numpy, astropy)"""
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
from astropy.io import fits
from astropy.table import Table

from sextractor_peers import isolated, sextractor, values

imflow, src = sys.argv[1], sys.argv[2]
work = tempfile.mkdtemp()
IMAGES = [os.path.join(src, "datasets/samples", name) for name in ("isaac_crop.fits", "dss_crop.fits")]
FULL_ISAAC = os.path.join(src, "datasets/data/astro/ISAAC.2006-04-13T06-32-38.944.fits")
if os.path.exists(FULL_ISAAC):
    IMAGES.append(FULL_ISAAC)
APERTURES = (5, 10)
VIGNET = (35, 35)
problems = []

for tool in ("source-extractor", "psfex"):
    if shutil.which(tool) is None:
        sys.exit(f"FAIL: {tool} not found: tools/install-deps.sh installs Debian's {tool} package")

PARAMS = ["NUMBER", "X_IMAGE", "Y_IMAGE", "FLAGS", "ELONGATION", "KRON_RADIUS", "FLUX_AUTO", "FLUXERR_AUTO",
          f"FLUX_APER({len(APERTURES)})", f"FLUXERR_APER({len(APERTURES)})", "FLUX_RADIUS", "XWIN_IMAGE",
          "YWIN_IMAGE", "ERRAWIN_IMAGE", "ERRBWIN_IMAGE", "ERRTHETAWIN_IMAGE", "ERRX2WIN_IMAGE", "ERRY2WIN_IMAGE",
          "ERRXYWIN_IMAGE", "X2WIN_IMAGE", "Y2WIN_IMAGE", "XYWIN_IMAGE", "FLUX_WIN", "FLUXERR_WIN", "SNR_WIN",
          "FLAGS_WIN", f"VIGNET({VIGNET[0]},{VIGNET[1]})"]
# Relative tolerances on isolated sources (docs/astronomy.md: what differs and why).
RELATIVE = {"KRON_RADIUS": 0.01, "FLUX_AUTO": 0.01, "FLUX_APER": 0.01, "FLUX_RADIUS": 0.01, "FLUXERR_AUTO": 0.01,
            "FLUX_WIN": 0.01, "FLUXERR_WIN": 0.01, "SNR_WIN": 0.01, "ERRAWIN_IMAGE": 0.02, "ERRBWIN_IMAGE": 0.02}
ABSOLUTE = {"XWIN_IMAGE": 1e-3, "YWIN_IMAGE": 1e-3}


def run_imflow(inputs, out, aperture_subpix):
    config = os.path.join(work, "imflow.yaml")
    with open(config, "w") as f:
        f.write("output: {formats: [ldac, labels]}\nsteps:\n"
                "  - background: {method: mesh, size: 4096, filter_size: 1}\n"
                "  - segment: {nsigma: 5, relative_to: rms_map}\n  - label: {connectivity: 8}\n"
                "  - measure: {gain: 1, auto: {kron_fact: 2.5, min_radius: 0, min_kron_radius: 3.5},\n"
                f"              apertures: {list(APERTURES)}, aperture_subpix: {aperture_subpix},\n"
                "              flux_radius: [0.5], windowed: true,\n"
                f"              vignet: {list(VIGNET)}}}\n")
    subprocess.run([imflow, "-q", "run", config, "--input", inputs, "--output", out, "--device", "cpu",
                    "--threads", "2"], check=True)


def run_sextractor(image, catalog, params_list=PARAMS, options=("-WEIGHT_TYPE", "NONE")):
    sextractor(work, image, catalog, params_list, "-FILTER", "N", "-DEBLEND_MINCONT", "1", "-CLEAN", "N",
               "-DETECT_MINAREA", "1", "-DETECT_THRESH", "5", "-ANALYSIS_THRESH", "5", "-BACK_SIZE", "4096",
               "-BACK_FILTERSIZE", "1", *options, "-GAIN", "1", "-PHOT_APERTURES", ",".join(map(str, APERTURES)),
               "-PHOT_AUTOPARAMS", "2.5,3.5", "-PHOT_FLUXFRAC", "0.5")


def run_bad_pixels(images):
    """FLAGS where bad pixels (an RMS map's 1e31: 8% of the pixels at random, a 3-column band, a
    block) and neighbours share the Kron pixels: SExtractor with WEIGHT_TYPE MAP_RMS and
    INTERP_TYPE NONE, imflow with input.weight map_rms, the same detection otherwise."""
    inputs, out = os.path.join(work, "bad_in"), os.path.join(work, "bad_out")
    os.makedirs(inputs)
    for image in images:
        stem = os.path.splitext(os.path.basename(image))[0]
        data = fits.getdata(image).astype(np.float64)
        sigma = 1.4826 * np.median(np.abs(data - np.median(data)))
        rms = np.full(data.shape, sigma, np.float32)
        height, width = data.shape
        rms[np.random.default_rng(5).random(data.shape) < 0.08] = 1e31
        rms[:, width * 2 // 5:width * 2 // 5 + 3] = 1e31
        rms[height // 3:height // 3 + height // 10, width // 2:width // 2 + width // 10] = 1e31
        shutil.copy(image, inputs)
        fits.PrimaryHDU(rms).writeto(os.path.join(inputs, stem + ".rms.fits"))
    config = os.path.join(work, "bad.yaml")
    with open(config, "w") as f:
        f.write("input: {weight: {image: '{stem}.rms.fits', type: map_rms}}\noutput: {formats: [ldac]}\nsteps:\n"
                "  - background: {method: mesh, size: 4096, filter_size: 1}\n"
                "  - segment: {nsigma: 5, relative_to: rms_map}\n  - label: {connectivity: 8}\n"
                "  - measure: {gain: 1, auto: {kron_fact: 2.5, min_radius: 0, min_kron_radius: 3.5}}\n")
    subprocess.run([imflow, "-q", "run", config, "--input", inputs, "--output", out, "--device", "cpu",
                    "--threads", "2"], check=True)
    for image in images:
        stem = os.path.splitext(os.path.basename(image))[0]
        label = stem.split(".")[0] + " with bad pixels"
        theirs_path = os.path.join(work, f"sex_bad_{stem}.ldac")
        run_sextractor(os.path.join(inputs, os.path.basename(image)), theirs_path,
                       ["NUMBER", "X_IMAGE", "Y_IMAGE", "FLAGS", "KRON_RADIUS", "FLUX_AUTO"],
                       ("-WEIGHT_TYPE", "MAP_RMS", "-WEIGHT_IMAGE", os.path.join(inputs, stem + ".rms.fits"),
                        "-INTERP_TYPE", "NONE"))
        ours, theirs = Table.read(os.path.join(out, stem + ".ldac"), hdu=2), Table.read(theirs_path, hdu=2)
        match = pair(label, ours, theirs)
        if match is None:
            continue
        ours = ours[match]
        rounding = compare_flags(label, ours, theirs, fits.getdata(image).shape)
        kron = np.abs(values(ours, "KRON_RADIUS") - values(theirs, "KRON_RADIUS")) / values(theirs, "KRON_RADIUS")
        crowded = (int((np.asarray(ours["FLAGS"]) & 1).sum()), int((np.asarray(theirs["FLAGS"]) & 1).sum()))
        print(f"{label}: {len(ours)} sources, FLAGS equal on {len(ours) - rounding} (the others: SExtractor's 16 "
              f"by its box rounding at the edge), 1 (crowded) on {crowded[0]} (SExtractor {crowded[1]}); "
              f"KRON_RADIUS within {kron.max():.2g} (median {np.median(kron):.2g})", flush=True)
        if crowded[1] == 0:
            problems.append(f"{label}: no crowded source to compare")


def run_psfex(catalog, cwd):
    """PSFEx with its default configuration (no check plots or images); PSF_FWHM of its model."""
    config = os.path.join(work, "default.psfex")
    if not os.path.exists(config):
        with open(config, "w") as f:
            f.write(subprocess.run(["psfex", "-dd"], capture_output=True, text=True, check=True).stdout)
    run = subprocess.run(["psfex", catalog, "-c", config, "-CHECKPLOT_TYPE", "NONE", "-CHECKIMAGE_TYPE", "NONE",
                          "-WRITE_XML", "N", "-VERBOSE_TYPE", "QUIET", "-NTHREADS", "1"], cwd=cwd,
                         capture_output=True, text=True)
    psf = os.path.join(cwd, os.path.splitext(os.path.basename(catalog))[0] + ".psf")
    if run.returncode != 0 or not os.path.exists(psf):
        problems.append(f"psfex on {catalog} failed (exit {run.returncode}): {run.stderr[-800:]}")
        return None, 0
    with fits.open(psf) as hdus:
        header = hdus[1].header
        return float(header["PSF_FWHM"]), int(header["ACCEPTED"])


def pair(label, ours, theirs):
    """The row of `ours` at each of SExtractor's sources (LDAC_OBJECTS), or None (a problem noted)
    when the catalogs do not pair up one to one within 1e-3 px."""
    distance = np.hypot(theirs["X_IMAGE"][:, None] - ours["X_IMAGE"][None, :],
                        theirs["Y_IMAGE"][:, None] - ours["Y_IMAGE"][None, :])
    match = distance.argmin(axis=1)
    if len(ours) != len(theirs) or distance.min(axis=1).max() > 1e-3 or len(set(match)) != len(ours):
        problems.append(f"{label}: {len(ours)} sources, SExtractor {len(theirs)}; they do not pair up")
        return None
    return match


def compare_flags(label, ours, theirs, shape=None):
    """FLAGS must be equal on every paired source. With the image's `shape`, SExtractor's 16 alone
    may differ within 2 px of the edge: it rounds the Kron box's bounds (RINT), SEP's boxes
    truncate, so a box reaching 0.5-1.5 px past the edge is cut for SExtractor only (a 1-pixel
    detection at x = 1: 6 a = 1.73 px). Returns how many differ so."""
    flags_ours, flags_theirs = np.asarray(ours["FLAGS"]), np.asarray(theirs["FLAGS"])
    edge = np.zeros(len(ours), bool)
    if shape is not None:
        x, y = np.asarray(theirs["X_IMAGE"]) - 1, np.asarray(theirs["Y_IMAGE"]) - 1
        edge = (np.minimum(x, shape[1] - 1 - x) < 2) | (np.minimum(y, shape[0] - 1 - y) < 2)
    rounding = edge & ((flags_ours ^ flags_theirs) == 16)
    differ = np.flatnonzero((flags_ours != flags_theirs) & ~rounding)
    if len(differ):
        i = differ[0]
        problems.append(f"{label}: FLAGS differ on {len(differ)} of {len(ours)} sources, e.g. at ({theirs['X_IMAGE'][i]:.2f}, "
                        f"{theirs['Y_IMAGE'][i]:.2f}): imflow {ours['FLAGS'][i]}, SExtractor {theirs['FLAGS'][i]}")
    return int(rounding.sum())


try:
    inputs = os.path.join(work, "in")
    os.makedirs(inputs)
    for image in IMAGES:
        shutil.copy(image, inputs)
    out, exact = os.path.join(work, "out"), os.path.join(work, "exact")
    run_imflow(inputs, out, 5)
    run_imflow(inputs, exact, 0)
    measured = {}
    for image in IMAGES:
        stem = os.path.splitext(os.path.basename(image))[0]
        label = stem.split(".")[0]
        theirs_path = os.path.join(work, f"sex_{stem}.ldac")
        run_sextractor(os.path.join(inputs, os.path.basename(image)), theirs_path)
        ours_path = os.path.join(out, stem + ".ldac")
        ours, theirs = Table.read(ours_path, hdu=2), Table.read(theirs_path, hdu=2)
        match = pair(label, ours, theirs)
        if match is None:
            continue
        ours = ours[match]
        # Every FLAGS bit, SExtractor's crowding bit 1 (blanked neighbours over 10% of the Kron
        # pixels) included, on every source.
        crowded = (int((np.asarray(ours["FLAGS"]) & 1).sum()), int((np.asarray(theirs["FLAGS"]) & 1).sum()))
        compare_flags(label, ours, theirs)
        exact_apertures = values(Table.read(os.path.join(exact, stem + ".ldac"), hdu=2)[match], "FLUX_APER")
        labels = fits.getdata(os.path.join(out, stem + ".labels.fits"))
        reach = lambda row: max(6.0 * row["A_IMAGE"], row["KRON_RADIUS"] * row["A_IMAGE"], max(APERTURES) / 2,
                                4 * 2 / 2.35 * row["FLUX_RADIUS"]) + 2
        keep = isolated(labels, ours, reach) & (np.asarray(ours["FLAGS"]) == 0) & (np.asarray(theirs["FLAGS"]) == 0)
        keep &= (np.asarray(theirs["FLAGS_WIN"]) == 0) & (np.asarray(theirs["FLUX_AUTO"]) > 0)
        keep &= np.asarray(ours["ISOAREA_IMAGE"]) >= 5
        if keep.sum() < 8:
            problems.append(f"{label}: only {keep.sum()} isolated sources")
            continue
        ours_iso, theirs_iso = ours[keep], theirs[keep]
        report = []
        for name in list(RELATIVE) + list(ABSOLUTE):
            a, b = values(ours_iso, name), values(theirs_iso, name)
            error = np.abs(a - b) if name in ABSOLUTE else np.abs(a - b) / np.maximum(np.abs(b), 1e-30)
            limit = ABSOLUTE.get(name, RELATIVE.get(name))
            measured.setdefault(name, []).append(error.ravel())
            report.append(f"{name} {error.max():.2g} (median {np.median(error):.2g})")
            for i in np.flatnonzero((error > limit).any(axis=1))[:3]:
                problems.append(f"{label}: source at ({theirs_iso['X_IMAGE'][i]:.2f}, {theirs_iso['Y_IMAGE'][i]:.2f}): "
                                f"{name} imflow {a[i]}, SExtractor {b[i]}")
        exact_error = np.abs(exact_apertures[keep] - values(theirs_iso, "FLUX_APER")) / np.abs(values(theirs_iso, "FLUX_APER"))
        report.append(f"FLUX_APER with exact overlap {exact_error.max():.2g} (median {np.median(exact_error):.2g})")
        theta = np.abs((values(ours_iso, "ERRTHETAWIN_IMAGE") - values(theirs_iso, "ERRTHETAWIN_IMAGE") + 90) % 180 - 90)
        flags_differ = int((np.asarray(ours["FLAGS_WIN"]) != np.asarray(theirs["FLAGS_WIN"])).sum())
        stamps_ours, stamps_theirs = values(ours_iso, "VIGNET"), values(theirs_iso, "VIGNET")
        stamp_error = np.abs(stamps_ours - stamps_theirs) / np.maximum(np.abs(stamps_theirs).max(axis=1, keepdims=True), 1e-30)
        if stamp_error.max() > 1e-5:
            i = int(np.argmax(stamp_error.max(axis=1)))
            problems.append(f"{label}: VIGNET of the source at ({theirs_iso['X_IMAGE'][i]:.2f}, "
                            f"{theirs_iso['Y_IMAGE'][i]:.2f}) differs from SExtractor's by {stamp_error.max():.3g} of its peak")
        with fits.open(ours_path) as hdus:
            objects = hdus["LDAC_OBJECTS"]
            tdim = objects.header.get(f"TDIM{objects.columns.names.index('VIGNET') + 1}")
        if tdim != f"({VIGNET[0]}, {VIGNET[1]})".replace(" ", "") or np.asarray(ours["VIGNET"]).shape[1:] != VIGNET[::-1]:
            problems.append(f"{label}: VIGNET TDIM {tdim}, shape {np.asarray(ours['VIGNET']).shape}")
        print(f"{label}: {len(ours)} sources, {keep.sum()} isolated; worst relative (absolute for XWIN/YWIN) "
              f"difference from SExtractor: " + ", ".join(report) + f", ERRTHETAWIN_IMAGE {theta.max():.2g} deg, "
              f"VIGNET {stamp_error.max():.2g} of the peak; FLAGS_WIN differs on {flags_differ} of {len(ours)}; "
              f"FLAGS equal on {int((np.asarray(ours['FLAGS']) == np.asarray(theirs['FLAGS'])).sum())} of {len(ours)}, "
              f"1 (crowded) on {crowded[0]} (SExtractor {crowded[1]})", flush=True)

        # 3. PSFEx from each catalog, default settings.
        if label in ("isaac_crop", "ISAAC"):
            psf_dirs = [os.path.join(work, f"psf_{who}_{label}") for who in ("ours", "theirs")]
            results = []
            for directory, catalog in zip(psf_dirs, (ours_path, theirs_path)):
                os.makedirs(directory)
                shutil.copy(catalog, os.path.join(directory, "stars.cat"))
                results.append(run_psfex("stars.cat", directory))
            (fwhm_ours, used_ours), (fwhm_theirs, used_theirs) = results
            if fwhm_ours and fwhm_theirs:
                difference = abs(fwhm_ours / fwhm_theirs - 1)
                print(f"{label}: PSFEx FWHM from imflow's LDAC {fwhm_ours:.4f} px ({used_ours} stars), from "
                      f"SExtractor's {fwhm_theirs:.4f} px ({used_theirs} stars): {100 * difference:.2f}% apart", flush=True)
                if difference > 0.02 or used_ours < 3:
                    problems.append(f"{label}: PSFEx FWHM {fwhm_ours} ({used_ours} stars) vs {fwhm_theirs} ({used_theirs})")
    run_bad_pixels([image for image in IMAGES if "isaac" in image.lower()])
    if measured:
        print("all isolated sources: " + ", ".join(f"{k} worst {np.concatenate(v).max():.2g}"
                                                    for k, v in measured.items()), flush=True)
finally:
    shutil.rmtree(work, ignore_errors=True)

if problems:
    print("\n".join("FAIL: " + p for p in problems[:40]), file=sys.stderr)
    sys.exit(1)
print("ldac_photometry_peers: OK")
