"""Sky coordinates against astropy.wcs on the committed real crops (ISAAC: CD matrix, FK5; DSS:
CDELT + CD + old-style PC001001 together) and a cube: catalog ra/dec (CSV and FITS table) equal
WCS(header).all_pix2world(x, y, 0) within 1e-9 deg; label maps and bgsub images carry the WCS of
their plane; tiled runs give the same ra/dec.
Usage: wcs_reference_test.py IMFLOW SOURCE_DIR  (run with Debian's python3: numpy, astropy)"""
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

warnings.simplefilter("ignore", FITSFixedWarning)
imflow, src = sys.argv[1], sys.argv[2]
work = tempfile.mkdtemp()
TOLERANCE_DEG = 1e-9  # 3.6 micro-arcseconds


def fail(message):
    print("FAIL:", message, file=sys.stderr)
    sys.exit(1)


def run(out, *extra):
    subprocess.run([imflow, "-q", "run", os.path.join(work, "astro.yaml"), "--input", os.path.join(work, "in"),
                    "--output", out, "--device", "cpu", "--threads", "2", *extra], check=True)


try:
    os.makedirs(os.path.join(work, "in"))
    for name in ("isaac_crop.fits", "dss_crop.fits"):
        shutil.copy(os.path.join(src, "datasets/samples", name), os.path.join(work, "in", name))
    # A cube: the ISAAC crop stacked 3 times along a frequency axis (celestial axes 1-2).
    with fits.open(os.path.join(src, "datasets/samples/isaac_crop.fits")) as hdus:
        header, data = hdus[0].header.copy(), hdus[0].data.astype(np.float32)
    cube = np.stack([data, data * 1.5, data * 2.0])
    header["CTYPE3"], header["CRPIX3"], header["CRVAL3"], header["CDELT3"], header["CUNIT3"] = "FREQ", 1.0, 1.4e9, 1e6, "Hz"
    fits.writeto(os.path.join(work, "in", "cube.fits"), cube, header)
    with open(os.path.join(work, "astro.yaml"), "w") as f:
        f.write("output: {formats: [csv, fits, labels, bgsub]}\n"
                "steps: [background, {segment: {nsigma: 5}}, {label: {connectivity: 8}}, measure]\n")
    run(os.path.join(work, "out"))
    run(os.path.join(work, "tiled"), "--tile", "64")

    cases = [("isaac_crop", "isaac_crop.fits", 0), ("dss_crop", "dss_crop.fits", 0)]
    cases += [(f"cube.p{p}", "cube.fits", p) for p in range(3)]
    for stem, name, plane in cases:
        with fits.open(os.path.join(work, "in", name)) as hdus:
            wcs = WCS(hdus[0].header)
        csv = Table.read(os.path.join(work, "out", stem + ".cat.csv"), format="ascii.csv")
        table = Table.read(os.path.join(work, "out", stem + ".cat.fits"), hdu=1)
        tiled = Table.read(os.path.join(work, "tiled", stem + ".cat.csv"), format="ascii.csv")
        if len(csv) < 5:
            fail(f"{stem}: only {len(csv)} sources")
        pixel = [csv["x"], csv["y"]] + ([np.full(len(csv), plane)] if wcs.naxis == 3 else [])
        world = wcs.all_pix2world(np.column_stack(pixel), 0)
        tiled.sort(["y", "x"])  # tiles number sources in another order
        ref_order = np.lexsort((csv["x"], csv["y"]))
        for label, t in (("csv", csv), ("fits", table)):
            dra = np.abs(np.asarray(t["ra"]) - world[:, 0])
            ddec = np.abs(np.asarray(t["dec"]) - world[:, 1])
            if not (np.all(np.isfinite(t["ra"])) and dra.max() < TOLERANCE_DEG and ddec.max() < TOLERANCE_DEG):
                fail(f"{stem} {label}: ra/dec differ from astropy by up to {dra.max():.3g} / {ddec.max():.3g} deg")
        if table["ra"].unit != "deg":
            fail(f"{stem}: TUNIT of ra is {table['ra'].unit}")
        if not np.allclose(np.asarray(tiled["ra"]), np.asarray(csv["ra"])[ref_order], rtol=0, atol=TOLERANCE_DEG):
            fail(f"{stem}: tiled ra differs")
        print(f"{stem}: {len(csv)} sources, |ra - astropy| <= {dra.max():.2e} deg, |dec - astropy| <= {ddec.max():.2e} deg")
        # The 2-D outputs carry the plane's celestial WCS.
        probe = np.array([[0.0, 0.0], [10.5, 20.25], [40.0, 33.0]])
        want = wcs.celestial.all_pix2world(probe, 0)
        for suffix in (".labels.fits", ".bgsub.fits"):
            for out in ("out", "tiled"):
                with fits.open(os.path.join(work, out, stem + suffix)) as hdus:
                    got = WCS(hdus[0].header).all_pix2world(probe, 0)
                if np.abs(got - want).max() > TOLERANCE_DEG:
                    fail(f"{out}/{stem}{suffix}: WCS differs from the input's by {np.abs(got - want).max():.3g} deg")
    print("wcs reference: OK")
finally:
    shutil.rmtree(work)
