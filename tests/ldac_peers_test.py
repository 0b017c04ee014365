"""imflow's FITS_LDAC catalogs against the AstrOmatic tools that read and write them (Debian's
source-extractor 2.25 and scamp 2.10, installed by tools/install-deps.sh):

1. SExtractor run on the committed real crops with imflow's settings (one background mesh over the
   image, no filter, no deblending, no cleaning, 5 sigma, 8-connected, gain 1) writes its own
   FITS_LDAC: the same sources (same ISOAREA, FLAGS) and every LDAC_OBJECTS column equal to
   SExtractor's float32 values (positions, FLUX_ISO, FLUXERR_ISO, moments, ERRX2..ERRXY,
   ERRA/ERRB/ERRTHETA, CXX.., ELONGATION, ELLIPTICITY); the LDAC layout the same (EXTNAMEs, the
   'Field Header Card' column, TDIM) and every card of the image's header in LDAC_IMHEAD.
2. With SExtractor's 32-pixel mesh and RMS map (WEIGHT_TYPE BACKGROUND) the segments, fluxes,
   flux errors and shapes still agree; the position errors are not compared there, by design:
   SExtractor computes them from the global RMS, imflow (as SEP) from the RMS map (docs/astronomy.md).
3. SCAMP, with its default CENTROID_KEYS, CENTROIDERR_KEYS, DISTORT_KEYS and PHOTFLUX_KEY
   (XWIN_IMAGE, ERRAWIN_IMAGE.., FLUX_AUTO: measure's auto, flux_radius and windowed), solves the
   astrometry of a real image whose header WCS was shifted by ~5 arcsec, from imflow's LDAC alone,
   against a reference catalog of the unshifted image: its .head must put the image back within
   0.1 arcsec.
4. Cube planes, PNG inputs and tiled images get valid 2-D LDAC_IMHEAD headers.
Usage: ldac_peers_test.py IMFLOW SOURCE_DIR  (Debian's python3: numpy, astropy, PIL)"""
import os
import shutil
import subprocess
import sys
import tempfile
import warnings

import numpy as np
from astropy.io import fits
from astropy.table import Table
from astropy.wcs import WCS, FITSFixedWarning
from PIL import Image

warnings.simplefilter("ignore", FITSFixedWarning)
imflow, src = sys.argv[1], sys.argv[2]
work = tempfile.mkdtemp()
samples = os.path.join(src, "datasets/samples")
CROPS = ("dss_crop", "isaac_crop")
problems = []

for tool in ("source-extractor", "scamp"):
    if shutil.which(tool) is None:
        sys.exit(f"FAIL: {tool} not found: tools/install-deps.sh installs Debian's {tool} package")

# SExtractor's names for every LDAC_OBJECTS column imflow writes.
PARAMS = ["NUMBER", "X_IMAGE", "Y_IMAGE", "ISOAREA_IMAGE", "XMIN_IMAGE", "YMIN_IMAGE", "XMAX_IMAGE", "YMAX_IMAGE",
          "FLUX_ISO", "FLUXERR_ISO", "X2_IMAGE", "Y2_IMAGE", "XY_IMAGE", "ERRX2_IMAGE", "ERRY2_IMAGE", "ERRXY_IMAGE",
          "A_IMAGE", "B_IMAGE", "THETA_IMAGE", "ERRA_IMAGE", "ERRB_IMAGE", "ERRTHETA_IMAGE", "CXX_IMAGE", "CYY_IMAGE",
          "CXY_IMAGE", "ELONGATION", "ELLIPTICITY", "FLAGS"]
POSITION_ERRORS = {"ERRX2_IMAGE", "ERRY2_IMAGE", "ERRXY_IMAGE", "ERRA_IMAGE", "ERRB_IMAGE", "ERRTHETA_IMAGE"}
EXACT = {"ISOAREA_IMAGE", "XMIN_IMAGE", "YMIN_IMAGE", "XMAX_IMAGE", "YMAX_IMAGE", "FLAGS"}
ANGLES = {"THETA_IMAGE", "ERRTHETA_IMAGE"}
# Off-diagonal terms at the scale of their matrix's diagonal (they can be ~0 while the terms are not).
SCALE = {"XY_IMAGE": ("X2_IMAGE", "Y2_IMAGE"), "ERRXY_IMAGE": ("ERRX2_IMAGE", "ERRY2_IMAGE"),
         "CXY_IMAGE": ("CXX_IMAGE", "CYY_IMAGE")}
RTOL = 1e-6  # SExtractor writes float32 (and subtracts a float32 background: 1e-5 with a mesh map)


# The photometry SCAMP's default keys read (XWIN_IMAGE, ERRAWIN_IMAGE.., FLUX_AUTO, FLUXERR_AUTO).
SCAMP_PHOTOMETRY = ", auto: true, flux_radius: [0.5], windowed: true"


def run_imflow(name, background, inputs, *extra, formats="[ldac]", gain=1, relative_to="rms_map", photometry=""):
    config = os.path.join(work, name + ".yaml")
    with open(config, "w") as f:
        f.write(f"output: {{formats: {formats}}}\n"
                f"steps:\n  - background: {background}\n  - segment: {{nsigma: 5, relative_to: {relative_to}}}\n"
                f"  - label: {{connectivity: 8}}\n  - measure: {{gain: {gain}{photometry}}}\n")
    out = os.path.join(work, name)
    subprocess.run([imflow, "-q", "run", config, "--input", inputs, "--output", out, "--device", "cpu",
                    "--threads", "2", *extra], check=True)
    return out


def run_sextractor(image, catalog, back_size, filter_size, weight, gain):
    params = os.path.join(work, "sex.param")
    with open(params, "w") as f:
        f.write("\n".join(PARAMS) + "\n")
    defaults = subprocess.run(["source-extractor", "-dd"], capture_output=True, text=True, check=True).stdout
    config = os.path.join(work, "default.sex")
    with open(config, "w") as f:
        f.write(defaults)
    subprocess.run(["source-extractor", image, "-c", config, "-PARAMETERS_NAME", params, "-CATALOG_TYPE", "FITS_LDAC",
                    "-CATALOG_NAME", catalog, "-FILTER", "N", "-DEBLEND_MINCONT", "1", "-CLEAN", "N",
                    "-DETECT_MINAREA", "1", "-DETECT_THRESH", "5", "-ANALYSIS_THRESH", "5", "-BACK_SIZE", str(back_size),
                    "-BACK_FILTERSIZE", str(filter_size), "-WEIGHT_TYPE", weight, "-GAIN", str(gain),
                    "-VERBOSE_TYPE", "QUIET", "-CHECKIMAGE_TYPE", "NONE"], check=True, cwd=work)


def run_scamp(catalog, cwd):
    """SCAMP's astrometric solution of `catalog` (in `cwd`, which gets its .head) against
    work/reference.cat, with SCAMP's default catalog keys."""
    config = os.path.join(work, "default.scamp")
    if not os.path.exists(config):
        with open(config, "w") as f:
            f.write(subprocess.run(["scamp", "-dd"], capture_output=True, text=True, check=True).stdout)
    return subprocess.run(
        ["scamp", catalog, "-c", config, "-ASTREF_CATALOG", "FILE", "-ASTREFCAT_NAME", os.path.join(work, "reference.cat"),
         "-ASTREFMAG_KEY", "MAG", "-ASTREFMAGERR_KEY", "MAGERR", "-DISTORT_DEGREES", "1", "-SOLVE_PHOTOM", "N",
         "-CHECKPLOT_TYPE", "NONE", "-WRITE_XML", "N", "-VERBOSE_TYPE", "QUIET"], cwd=cwd, capture_output=True, text=True)


def imhead(path):
    """LDAC_IMHEAD's text as an astropy Header (records are 80 characters, END last)."""
    with fits.open(path) as hdus:
        names = [hdu.name for hdu in hdus]
        if names != ["PRIMARY", "LDAC_IMHEAD", "LDAC_OBJECTS"]:
            problems.append(f"{path}: HDUs {names}")
        column = hdus["LDAC_IMHEAD"].columns[0]
        if column.name != "Field Header Card" or not str(column.dim).replace(" ", "").startswith("(80,"):
            problems.append(f"{path}: LDAC_IMHEAD column {column.name!r} dim {column.dim}")
        records = [str(r).ljust(80) for r in hdus["LDAC_IMHEAD"].data[0][0]]
    if records[-1].rstrip() != "END":
        problems.append(f"{path}: LDAC_IMHEAD does not end with END")
    return fits.Header.fromstring("".join(records))


def compare(label, ours_path, theirs_path, skip=(), rtol=RTOL):
    ours, theirs = Table.read(ours_path, hdu=2), Table.read(theirs_path, hdu=2)
    if len(ours) != len(theirs) or len(ours) < 15:
        problems.append(f"{label}: {len(ours)} sources, SExtractor {len(theirs)}")
        return
    distance = np.hypot(theirs["X_IMAGE"][:, None] - ours["X_IMAGE"][None, :],
                        theirs["Y_IMAGE"][:, None] - ours["Y_IMAGE"][None, :])
    match = distance.argmin(axis=1)
    if distance.min(axis=1).max() > 1e-3 or len(set(match)) != len(ours):
        problems.append(f"{label}: sources do not pair up (worst distance {distance.min(axis=1).max():.3g} px)")
        return
    ours = ours[match]
    worst = {}
    for name in PARAMS[1:]:
        if name in skip:
            continue
        a, b = np.asarray(ours[name], float), np.asarray(theirs[name], float)
        if name in EXACT:
            bad = a != b
            error = bad.astype(float)
        elif name in ANGLES:  # degrees, +-90 alike
            error = np.abs((a - b + 90.0) % 180.0 - 90.0) / 180.0
            # SExtractor (and SEP) take 45 degrees whenever the two variances are equal, also for
            # a diagonal pair with a negative covariance, which imflow puts at -45 (docs/astronomy.md).
            diagonal = ("X2_IMAGE", "Y2_IMAGE", "XY_IMAGE") if name == "THETA_IMAGE" else ("ERRX2_IMAGE", "ERRY2_IMAGE", "ERRXY_IMAGE")
            v1, v2, cov = (np.asarray(theirs[k], float) for k in diagonal)
            equal = (np.abs(v1 - v2) <= rtol * (v1 + v2)) & (cov < 0) & (b == 45.0) & (np.abs(a + 45.0) < 1e-4)
            error[equal] = 0.0
            bad = error > rtol
        else:
            scale = np.maximum(np.abs(a), np.abs(b))
            if name in SCALE:
                scale = np.abs(np.asarray(theirs[SCALE[name][0]], float)) + np.abs(np.asarray(theirs[SCALE[name][1]], float))
            if name == "ELLIPTICITY":
                scale = np.ones_like(a)  # 1 - b/a: in [0, 1), ~0 for round sources
            error = np.abs(a - b) / np.maximum(scale, 1e-300)
            bad = error > rtol
        worst[name] = float(error.max())
        for i in np.flatnonzero(bad)[:3]:
            problems.append(f"{label}: source at ({theirs['X_IMAGE'][i]:.2f}, "
                            f"{theirs['Y_IMAGE'][i]:.2f}): {name} imflow {a[i]!r}, SExtractor {b[i]!r}")
    print(f"{label}: {len(ours)} sources, all paired; worst relative difference "
          + ", ".join(f"{k} {v:.2g}" for k, v in worst.items() if k not in EXACT), flush=True)


def check_header(label, ours_path, image_path):
    header = imhead(ours_path)
    with fits.open(image_path) as hdus:
        image = hdus[0].header
    for card in image.cards:
        if card.keyword in ("", "COMMENT", "HISTORY"):
            continue
        if card.keyword not in header or header[card.keyword] != card.value:
            problems.append(f"{label}: LDAC_IMHEAD lacks {card.keyword} = {card.value!r}")
    return header


try:
    inputs = os.path.join(work, "in")
    os.makedirs(inputs)
    for crop in CROPS:
        shutil.copy(os.path.join(samples, crop + ".fits"), inputs)

    # 1. One mesh over the image: the per-pixel and global RMS are one, so every column compares.
    one = run_imflow("one_mesh", "{method: mesh, size: 4096, filter_size: 1}", inputs)
    for crop in CROPS:
        theirs = os.path.join(work, f"sex_{crop}.ldac")
        run_sextractor(os.path.join(inputs, crop + ".fits"), theirs, 4096, 1, "NONE", 1)
        compare(f"{crop} (one mesh)", os.path.join(one, crop + ".ldac"), theirs)
        check_header(crop, os.path.join(one, crop + ".ldac"), os.path.join(inputs, crop + ".fits"))
        imhead(theirs)  # SExtractor's own file passes the same layout checks

    # 2. SExtractor's usual 32-pixel mesh with a 3x3 filter and its RMS map as the weight (gain 0:
    # with a weight map SExtractor rescales the Poisson term by var/global var, imflow does not).
    mesh = run_imflow("mesh", "{method: mesh, size: 32, filter_size: 3}", inputs, gain=0)
    for crop in CROPS:
        theirs = os.path.join(work, f"sex_mesh_{crop}.ldac")
        run_sextractor(os.path.join(inputs, crop + ".fits"), theirs, 32, 3, "BACKGROUND", 0)
        compare(f"{crop} (32-pixel mesh)", os.path.join(mesh, crop + ".ldac"), theirs, skip=POSITION_ERRORS, rtol=1e-5)

    # 3. SCAMP: the ISAAC crop (TAN, CD matrix) with its pointing off by (+4, -3) arcsec, solved
    # against a reference catalog of the unshifted image (imflow's ra/dec of its isolated sources).
    reference = Table.read(os.path.join(one, "isaac_crop.ldac"), hdu=2)
    reference = reference[(reference["FLAGS"] == 0) & (reference["FLUX_ISO"] > 0)]
    n = len(reference)
    objects = fits.BinTableHDU.from_columns([
        fits.Column(name="X_WORLD", format="D", unit="deg", array=reference["ALPHA_SKY"]),
        fits.Column(name="Y_WORLD", format="D", unit="deg", array=reference["DELTA_SKY"]),
        fits.Column(name="ERRA_WORLD", format="E", unit="deg", array=np.full(n, 0.05 / 3600)),
        fits.Column(name="ERRB_WORLD", format="E", unit="deg", array=np.full(n, 0.05 / 3600)),
        fits.Column(name="ERRTHETA_WORLD", format="E", unit="deg", array=np.zeros(n)),
        fits.Column(name="MAG", format="E", unit="mag", array=25 - 2.5 * np.log10(reference["FLUX_ISO"])),
        fits.Column(name="MAGERR", format="E", unit="mag", array=np.full(n, 0.01)),
        fits.Column(name="OBSDATE", format="D", unit="yr", array=np.full(n, 2000.0))], name="LDAC_OBJECTS")
    records = ["SIMPLE  =                    T".ljust(80), "BITPIX  =                    8".ljust(80),
               "NAXIS   =                    0".ljust(80), "END".ljust(80)]
    head = fits.BinTableHDU.from_columns([fits.Column(name="Field Header Card", format=f"{80 * len(records)}A",
                                                      dim=f"(80,{len(records)})", array=np.array([records]))],
                                         name="LDAC_IMHEAD")
    fits.HDUList([fits.PrimaryHDU(), head, objects]).writeto(os.path.join(work, "reference.cat"))
    shifted_dir = os.path.join(work, "shifted_in")
    os.makedirs(shifted_dir)
    with fits.open(os.path.join(samples, "isaac_crop.fits")) as hdus:
        true_wcs = WCS(hdus[0].header)
        hdus[0].header["CRVAL1"] += 4.0 / 3600 / np.cos(np.radians(hdus[0].header["CRVAL2"]))
        hdus[0].header["CRVAL2"] -= 3.0 / 3600
        shifted_wcs = WCS(hdus[0].header)
        hdus.writeto(os.path.join(shifted_dir, "shifted.fits"))
    solved = run_imflow("scamp", "{method: mesh, size: 4096, filter_size: 1}", shifted_dir, photometry=SCAMP_PHOTOMETRY)
    scamp = run_scamp("shifted.ldac", solved)
    head_path = os.path.join(solved, "shifted.head")
    if scamp.returncode != 0 or not os.path.exists(head_path):
        problems.append(f"scamp failed (exit {scamp.returncode}): {scamp.stderr[-1500:]}")
    else:
        header = imhead(os.path.join(solved, "shifted.ldac"))
        for key in list(header):  # the image header with SCAMP's WCS in place of its own
            if key.startswith(("CD", "PC", "CDELT", "CROTA", "CRPIX", "CRVAL", "CTYPE", "CUNIT", "PV")):
                del header[key]
        with open(head_path, encoding="latin-1") as f:  # SCAMP's COMMENT cards hold UTF-8 names
            lines = [line for line in f.read().splitlines() if not line.startswith(("COMMENT", "HISTORY"))]
        header.update(fits.Header.fromstring("\n".join(lines), sep="\n"))
        scamp_wcs = WCS(header)
        x, y = np.meshgrid(np.linspace(0, 255, 5), np.linspace(0, 255, 5))

        def separation(a, b):
            ra_a, dec_a = a.all_pix2world(x.ravel(), y.ravel(), 0)
            ra_b, dec_b = b.all_pix2world(x.ravel(), y.ravel(), 0)
            return np.hypot((ra_a - ra_b) * np.cos(np.radians(dec_a)), dec_a - dec_b).max() * 3600

        before, after = separation(shifted_wcs, true_wcs), separation(scamp_wcs, true_wcs)
        print(f"scamp: header WCS off by {before:.2f} arcsec, SCAMP's solution from imflow's LDAC by {after:.4f} arcsec")
        if before < 4.0 or after > 0.1:
            problems.append(f"scamp: solution {after:.4f} arcsec from the true WCS (the shifted header: {before:.2f})")

    # 4. A cube's planes, a PNG and a tiled image: 2-D LDAC_IMHEAD headers.
    other = os.path.join(work, "other_in")
    os.makedirs(other)
    with fits.open(os.path.join(samples, "isaac_crop.fits")) as hdus:
        header, data = hdus[0].header.copy(), hdus[0].data.astype(np.float32)
    header["CTYPE3"], header["CRPIX3"], header["CRVAL3"], header["CDELT3"] = "FREQ", 1.0, 1.4e9, 1e6
    fits.writeto(os.path.join(other, "cube.fits"), np.stack([data, 2 * data]), header)
    shutil.copy(os.path.join(samples, "mri/BrainT1Slice.png"), other)
    shutil.copy(os.path.join(samples, "isaac_crop.fits"), other)
    # (tiles take the global kappa-sigma background)
    whole = run_imflow("other", "{kappa: 3}", other, formats="[ldac, csv]", relative_to="background")
    tiled = run_imflow("other_tiled", "{kappa: 3}", other, "--tile", "96", formats="[ldac, csv]", relative_to="background")
    with fits.open(os.path.join(other, "cube.fits")) as hdus:
        plane_wcs = WCS(hdus[0].header).celestial
    for plane in (0, 1):
        header = imhead(os.path.join(whole, f"cube.p{plane}.ldac"))
        if header["NAXIS"] != 2 or "NAXIS3" in header or "CTYPE3" in header or header.get("WCSAXES", 2) != 2:
            problems.append(f"cube.p{plane}: LDAC_IMHEAD not 2-D: {header.tostring(sep=chr(10))[:800]}")
        world = WCS(header).all_pix2world([[10.0, 20.0], [200.0, 30.0]], 0)
        if not np.allclose(world, plane_wcs.all_pix2world([[10.0, 20.0], [200.0, 30.0]], 0), rtol=0, atol=1e-9):
            problems.append(f"cube.p{plane}: LDAC_IMHEAD WCS differs from the cube's celestial WCS")
    png = imhead(os.path.join(whole, "BrainT1Slice.ldac"))
    with Image.open(os.path.join(other, "BrainT1Slice.png")) as image:
        png_size = image.size
    if (png["NAXIS1"], png["NAXIS2"]) != png_size or png["BITPIX"] != -32 or "CTYPE1" in png:
        problems.append(f"BrainT1Slice: LDAC_IMHEAD {png.tostring(sep=chr(10))[:400]}")
    for stem in ("isaac_crop", "cube.p1"):
        a, b = imhead(os.path.join(whole, stem + ".ldac")), imhead(os.path.join(tiled, stem + ".ldac"))
        if a.tostring() != b.tostring():
            problems.append(f"{stem}: the tiled run's LDAC_IMHEAD differs from the whole image's")
        ta, tb = Table.read(os.path.join(whole, stem + ".ldac"), hdu=2), Table.read(os.path.join(tiled, stem + ".ldac"), hdu=2)
        if len(ta) != len(tb) or np.abs(np.asarray(ta["X_IMAGE"]) - np.asarray(tb["X_IMAGE"])).max() > 1e-9:
            problems.append(f"{stem}: the tiled run's LDAC_OBJECTS differ from the whole image's")
        csv = Table.read(os.path.join(whole, stem + ".cat.csv"), format="ascii.csv")
        if len(csv) != len(ta) or not np.array_equal(np.asarray(csv["X_IMAGE"]), np.asarray(ta["X_IMAGE"])):
            problems.append(f"{stem}: LDAC_OBJECTS X_IMAGE differs from the CSV's")
        if not np.allclose(np.asarray(ta["THETA_IMAGE"]), np.degrees(np.asarray(csv["theta"])), rtol=1e-15, atol=0):
            problems.append(f"{stem}: THETA_IMAGE is not the CSV's theta in degrees")
    print("cube planes, PNG and tiled LDAC headers checked", flush=True)

    # 5. A two-chip mosaic exposure: the ISAAC crop cut into two 128-column chips (extensions SCI 1
    # and 2 of one file, empty primary; CRPIX1 of the right one moved so both show the same sky),
    # its pointing off by 5 arcsec. imflow's merged <name>.ldac holds one pair per chip, as
    # SExtractor's file for the same MEF (compared pair by pair); SCAMP solves both chips from it
    # with its default keys.
    mosaic_dir = os.path.join(work, "mosaic_in")
    os.makedirs(mosaic_dir)
    with fits.open(os.path.join(samples, "isaac_crop.fits")) as hdus:
        header, data = hdus[0].header.copy(), hdus[0].data
    header["CRVAL1"] += 4.0 / 3600 / np.cos(np.radians(header["CRVAL2"]))
    header["CRVAL2"] -= 3.0 / 3600
    chips = [fits.PrimaryHDU()]
    for chip in (0, 1):
        chip_header = header.copy()
        chip_header["CRPIX1"] -= 128 * chip
        chip_header["EXTNAME"], chip_header["EXTVER"] = "SCI", chip + 1
        chips.append(fits.ImageHDU(data[:, 128 * chip:128 * (chip + 1)], chip_header))
    mosaic = os.path.join(mosaic_dir, "mosaic.fits")
    fits.HDUList(chips).writeto(mosaic)
    merged = run_imflow("mosaic", "{method: mesh, size: 4096, filter_size: 1}", mosaic_dir, photometry=SCAMP_PHOTOMETRY)
    theirs = os.path.join(work, "sex_mosaic.ldac")
    run_sextractor(mosaic, theirs, 4096, 1, "NONE", 1)
    with fits.open(os.path.join(merged, "mosaic.ldac")) as ours_hdus, fits.open(theirs) as their_hdus:
        names = [h.name for h in ours_hdus]
        if names != [h.name for h in their_hdus] or len(names) != 5:
            problems.append(f"mosaic.ldac: HDUs {names}, SExtractor's {[h.name for h in their_hdus]}")
    for chip in (0, 1):
        pair = [os.path.join(work, f"{who}_chip{chip}.ldac") for who in ("ours", "theirs")]
        for source, target in zip((os.path.join(merged, "mosaic.ldac"), theirs), pair):
            with fits.open(source) as hdus:
                fits.HDUList([fits.PrimaryHDU(), hdus[1 + 2 * chip].copy(), hdus[2 + 2 * chip].copy()]).writeto(target)
        # (imflow's FLAGS gain SExtractor's 16 where a photometry box is cut by the chip's edge:
        # SExtractor ran without photometry here.)
        compare(f"mosaic chip {chip + 1}", pair[0], pair[1], skip={"FLAGS"})
        ours_flags = np.asarray(Table.read(pair[0], hdu=2)["FLAGS"]) & ~16
        if sorted(ours_flags) != sorted(np.asarray(Table.read(pair[1], hdu=2)["FLAGS"])):
            problems.append(f"mosaic chip {chip + 1}: FLAGS other than 16 differ from SExtractor's")
        if imhead(pair[0])["EXTVER"] != chip + 1:
            problems.append(f"mosaic.ldac: pair {chip + 1} is not chip {chip + 1}")
    scamp = run_scamp("mosaic.ldac", merged)
    head_path = os.path.join(merged, "mosaic.head")
    if scamp.returncode != 0 or not os.path.exists(head_path):
        problems.append(f"scamp (mosaic) failed (exit {scamp.returncode}): {scamp.stderr[-1500:]}")
    else:
        with open(head_path, encoding="latin-1") as f:
            blocks = [b for b in f.read().split("END") if "CRVAL1" in b]
        if len(blocks) != 2:
            problems.append(f"mosaic.head: {len(blocks)} chip headers, not 2")
        for chip, block in enumerate(blocks[:2]):
            lines = [line for line in block.splitlines() if line.strip() and not line.startswith(("COMMENT", "HISTORY"))]
            chip_wcs = WCS(fits.Header.fromstring("\n".join(lines), sep="\n"))
            x, y = np.meshgrid(np.linspace(0, 127, 4), np.linspace(0, 255, 4))
            ra, dec = chip_wcs.all_pix2world(x.ravel(), y.ravel(), 0)
            ra_true, dec_true = true_wcs.all_pix2world(x.ravel() + 128 * chip, y.ravel(), 0)
            off = np.hypot((ra - ra_true) * np.cos(np.radians(dec_true)), dec - dec_true).max() * 3600
            print(f"scamp: mosaic chip {chip + 1} solved to {off:.4f} arcsec from the true WCS")
            if off > 0.1:
                problems.append(f"scamp: mosaic chip {chip + 1} solution {off:.4f} arcsec from the true WCS")
finally:
    shutil.rmtree(work, ignore_errors=True)

if problems:
    print("\n".join("FAIL: " + p for p in problems[:40]), file=sys.stderr)
    sys.exit(1)
print("ldac_peers: OK")
