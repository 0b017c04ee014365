#!/usr/bin/python3
"""Regenerate the small committed test images in datasets/samples/ from the
data fetched by datasets/fetch.sh (Debian package eso-midas-testdata).

    /usr/bin/python3 datasets/samples/make_samples.py [DATADIR]   (default datasets/data)

isaac_crop.fits : 256x256 crop of ISAAC.2006-04-13T06:32:38.944.fits (VLT-UT1
                  ISAAC, NB_2.25 imaging), pixels [y0:y0+256, x0:x0+256] with
                  x0=64, y0=128 (0-based, numpy order data[y, x]); i.e. FITS
                  columns 65..320, rows 129..384 (1-based). Written as float32
                  (BITPIX -32) with the basic observation cards, the WCS
                  (CRPIX shifted by the cut) and HISTORY cards describing the cut.
                  The window was chosen (scan of 256x256 windows at 16/32 px
                  steps) to have ~20-40 sources above median+5*std (kappa-sigma
                  3, lesson algorithm) and a mild background gradient; it stays
                  clear of the detector-half discontinuity at row 512.
dss_crop.fits   : the whole 177x177 dss_test1.fits (UK Schmidt DSS plate scan),
                  BITPIX 16, original header (no BSCALE/BZERO/BLANK in the
                  original) plus a HISTORY card. Exercises integer input.
"""
import os
import sys

import numpy as np
from astropy.io import fits

X0, Y0, SIZE = 64, 128, 256
ISAAC = "astro/ISAAC.2006-04-13T06-32-38.944.fits"
DSS = "astro/dss_test1.fits"
KEEP = ["ORIGIN", "DATE", "EXPTIME", "MJD-OBS", "DATE-OBS", "ORIGFILE", "TELESCOP",
        "INSTRUME", "OBJECT", "RA", "DEC", "EQUINOX", "RADECSYS", "CRVAL1", "CRVAL2",
        "CRPIX1", "CRPIX2", "CTYPE1", "CTYPE2", "CD1_1", "CD1_2", "CD2_1", "CD2_2",
        "ARCFILE", "AIRMASS", "IMAGETYP", "FILTER1", "FILTER2",
        "HIERARCH ESO DPR CATG", "HIERARCH ESO DPR TYPE", "HIERARCH ESO DPR TECH"]


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    datadir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "data")

    # --- ISAAC crop -------------------------------------------------------
    with fits.open(os.path.join(datadir, ISAAC)) as hdul:
        src = hdul[0]
        data = np.asarray(src.data[Y0:Y0 + SIZE, X0:X0 + SIZE], dtype=np.float32)
        hdr = fits.Header()
        for k in KEEP:
            if k in src.header:
                hdr[k] = (src.header[k], src.header.comments[k])
    hdr["CRPIX1"] = (hdr["CRPIX1"] - X0, "Ref pixel in X (shifted by crop)")
    hdr["CRPIX2"] = (hdr["CRPIX2"] - Y0, "Ref pixel in Y (shifted by crop)")
    hdr["HISTORY"] = "imflow test sample: crop of ISAAC.2006-04-13T06:32:38.944.fits"
    hdr["HISTORY"] = "from Debian package eso-midas-testdata (ESO-MIDAS, GPL-2+)"
    hdr["HISTORY"] = f"cut x0={X0} y0={Y0} (0-based) size {SIZE}x{SIZE}: data[y0:y0+{SIZE},x0:x0+{SIZE}]"
    hdr["HISTORY"] = f"= FITS columns {X0 + 1}..{X0 + SIZE}, rows {Y0 + 1}..{Y0 + SIZE} (1-based)"
    hdr["HISTORY"] = "made by datasets/samples/make_samples.py"
    out = os.path.join(here, "isaac_crop.fits")
    fits.PrimaryHDU(data=data, header=hdr).writeto(out, overwrite=True)
    print(f"wrote {out} ({os.path.getsize(out)} bytes)")

    # --- DSS whole image, integer -----------------------------------------
    with fits.open(os.path.join(datadir, DSS), do_not_scale_image_data=True) as hdul:
        src = hdul[0]
        hdr = src.header.copy()
        raw = np.array(src.data)  # raw int16, no scaling applied
    hdr["HISTORY"] = "imflow test sample: whole dss_test1.fits (177x177, BITPIX 16, unscaled)"
    hdr["HISTORY"] = "from Debian package eso-midas-testdata (ESO-MIDAS, GPL-2+)"
    hdr["HISTORY"] = "made by datasets/samples/make_samples.py"
    hdu = fits.PrimaryHDU(data=raw, header=hdr, do_not_scale_image_data=True)
    out = os.path.join(here, "dss_crop.fits")
    hdu.writeto(out, overwrite=True, output_verify="silentfix")
    print(f"wrote {out} ({os.path.getsize(out)} bytes)")


if __name__ == "__main__":
    main()
