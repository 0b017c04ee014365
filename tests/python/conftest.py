# Shared inputs of the Python package's tests: the committed FITS crops (big-endian, as FITS
# stores them) and a synthetic crowded field (tools/compare_sep_deblend.py's).
import os
import sys

import numpy as np
import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tools"))
from compare_sep_deblend import crowded  # noqa: E402

BITPIX = {8: ">u1", 16: ">i2", 32: ">i4", -32: ">f4", -64: ">f8"}


def read_fits_primary(path):
    """The primary image of a simple FITS file as stored (big-endian, unscaled): enough for the crops."""
    with open(path, "rb") as stream:
        cards = {}
        header_bytes = 0
        while "END" not in cards:
            block = stream.read(2880)
            header_bytes += 2880
            for i in range(0, 2880, 80):
                card = block[i:i + 80].decode("ascii")
                key = card[:8].strip()
                cards.setdefault(key, card[10:].split("/")[0].strip())
        shape = (int(cards["NAXIS2"]), int(cards["NAXIS1"]))
        data = np.frombuffer(stream.read(shape[0] * shape[1] * abs(int(cards["BITPIX"])) // 8),
                             dtype=BITPIX[int(cards["BITPIX"])]).reshape(shape)
    assert "BSCALE" not in cards and "BZERO" not in cards, path
    return data


def write_fits_primary(path, data):
    """A simple FITS file of a 2-d float32 image (no astropy needed)."""
    height, width = data.shape
    cards = ["SIMPLE  =                    T", "BITPIX  =                  -32", "NAXIS   =                    2",
             f"NAXIS1  = {width:20d}", f"NAXIS2  = {height:20d}", "END"]
    header = "".join(card.ljust(80) for card in cards).ljust(2880).encode("ascii")
    pixels = np.ascontiguousarray(data, dtype=">f4").tobytes()
    with open(path, "wb") as stream:
        stream.write(header + pixels + b"\0" * (-len(pixels) % 2880))


@pytest.fixture(scope="session")
def images():
    """name -> the image as a NumPy array, in the byte order and dtype it comes in."""
    samples = os.path.join(ROOT, "datasets", "samples")
    return {
        "isaac_crop": read_fits_primary(os.path.join(samples, "isaac_crop.fits")),  # >f4
        "dss_crop": read_fits_primary(os.path.join(samples, "dss_crop.fits")),      # >i2
        "crowded_400": crowded(np, 400, 7),                                          # float32, blends
    }


def native(array):
    """The same values in native byte order (SEP accepts nothing else) and a dtype SEP takes."""
    array = np.asarray(array)
    if array.dtype.kind in "iu" and array.dtype.itemsize != 4:
        return array.astype(np.int32)
    return array.astype(array.dtype.newbyteorder("="))
