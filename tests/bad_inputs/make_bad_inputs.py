#!/usr/bin/python3
"""Make a directory mixing bad inputs with good ones (tests/bad_inputs/run_bad_inputs.py uses it).

Usage: make_bad_inputs.py DIR [OUTSIDE_DIR]; writes DIR/expected.json:
{"good": {relative name: expected source count}, "bad": [relative names], "skipped": [reasons]}.
"""
import gzip, json, os, struct, sys, zlib

import numpy as np
from astropy.io import fits

rng = np.random.default_rng(7)


def star_field(width, height, stars, background=100.0, noise=5.0, amplitude=1000.0):
    """Flat noisy background plus `stars` well separated Gaussian sources (sigma 1.5 px)."""
    image = background + noise * rng.standard_normal((height, width))
    yy, xx = np.mgrid[0:height, 0:width]
    for i in range(stars):
        cx, cy = 10 + (i * 17) % (width - 20), 10 + ((i * 17) // (width - 20)) * 17 % (height - 20)
        image += amplitude * np.exp(-((xx - cx) ** 2 + (yy - cy) ** 2) / (2 * 1.5 ** 2))
    return image.astype(np.float32)


def png_bytes(width, height, rows, claim=None):
    """8-bit grayscale PNG from `rows` (bytes); `claim` = (w, h) written in IHDR instead."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    w, h = claim or (width, height)
    raw = b"".join(b"\0" + row for row in rows)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def nifti_bytes(data):
    """NIfTI-1 single file (.nii) of a float32 2-D or 3-D array (x fastest)."""
    shape = data.shape[::-1]
    header = bytearray(348)
    struct.pack_into("<i", header, 0, 348)
    dims = [len(shape)] + list(shape) + [1] * (7 - len(shape))
    struct.pack_into("<8h", header, 40, *dims)
    struct.pack_into("<hh", header, 70, 16, 32)  # datatype float32, bitpix
    struct.pack_into("<8f", header, 76, *([1.0] * 8))
    struct.pack_into("<f", header, 108, 352.0)  # vox_offset
    header[344:348] = b"n+1\0"
    return bytes(header) + b"\0" * 4 + data.astype("<f4").tobytes()


def main():
    root = sys.argv[1]
    outside = sys.argv[2] if len(sys.argv) > 2 else os.path.join(root + "-outside")
    os.makedirs(os.path.join(root, "sub"), exist_ok=True)
    os.makedirs(outside, exist_ok=True)
    good, bad, skipped = {}, [], []
    p = lambda name: os.path.join(root, name)

    # Good files, with the number of sources each must yield.
    for i, stars in enumerate([3, 5]):
        fits.PrimaryHDU(star_field(96, 80, stars)).writeto(p(f"good{i}.fits"), overwrite=True)
        good[f"good{i}.fits"] = stars
    fits.PrimaryHDU(star_field(64, 64, 2)).writeto(p("sub/nested.fits"), overwrite=True)
    good["sub/nested.fits"] = 2
    with gzip.open(p("packed.fits.gz"), "wb") as out:
        hdul = fits.HDUList([fits.PrimaryHDU(star_field(64, 64, 4))])
        hdul.writeto(out)
    good["packed.fits.gz"] = 4
    fits.PrimaryHDU(np.full((40, 40), np.nan, np.float32)).writeto(p("allnan.fits"), overwrite=True)
    good["allnan.fits"] = 0
    fits.PrimaryHDU(np.full((40, 40), 7.0, np.float32)).writeto(p("constant.fits"), overwrite=True)
    good["constant.fits"] = 0
    field = np.clip(star_field(64, 48, 2, background=20, noise=2, amplitude=200), 0, 255).astype(np.uint8)
    with open(p("good.png"), "wb") as out:
        out.write(png_bytes(64, 48, [row.tobytes() for row in field]))
    good["good.png"] = 2
    # A symlink to a file outside the input directory: processed, outputs under OUT by its listed name.
    fits.PrimaryHDU(star_field(64, 64, 1)).writeto(os.path.join(outside, "target.fits"), overwrite=True)
    os.symlink(os.path.join(os.path.abspath(outside), "target.fits"), p("linked_outside.fits"))
    good["linked_outside.fits"] = 1
    # A directory symlink loop (directory symlinks are not followed, so the walk ends).
    os.symlink("..", p("sub/loop"))

    # Bad files: each must give exactly one error line naming it.
    data = fits.PrimaryHDU(star_field(300, 300, 3)).copy()
    data.writeto(p("truncated.fits"), overwrite=True)
    os.truncate(p("truncated.fits"), 2880 + 2880 * 3)
    hdr = fits.Header({"SIMPLE": True, "BITPIX": 16, "NAXIS": 2, "NAXIS1": 100000, "NAXIS2": 100000})
    with open(p("lying_naxis.fits"), "wb") as out:
        out.write(hdr.tostring().encode() + b"\0" * 2880)
    fits.PrimaryHDU().writeto(p("naxis0.fits"), overwrite=True)
    card = lambda text: text.ljust(80).encode()
    with open(p("bad_bitpix.fits"), "wb") as out:
        cards = [card("SIMPLE  =                    T"), card("BITPIX  =                   12"), card("NAXIS   =                    2"),
                 card("NAXIS1  =                   10"), card("NAXIS2  =                   10"), card("END")]
        out.write(b"".join(cards).ljust(2880, b" ") + b"\0" * 2880)
    with open(p("text.fits"), "w") as out:
        out.write("this is a text file, not FITS\n" * 10)
    open(p("zero.fits"), "wb").close()
    open(p("zero.png"), "wb").close()
    rows = [bytes(rng.integers(0, 255, 64, dtype=np.uint8)) for _ in range(64)]
    whole = png_bytes(64, 64, rows)
    with open(p("truncated.png"), "wb") as out:
        out.write(whole[: len(whole) // 2])
    with open(p("corrupt.png"), "wb") as out:
        out.write(whole[:33] + bytes(rng.integers(0, 255, 500, dtype=np.uint8)))
    with open(p("huge.png"), "wb") as out:
        out.write(png_bytes(1, 1, [b"\0"], claim=(100000, 100000)))
    volume = rng.standard_normal((64, 64)).astype(np.float32)
    packed = gzip.compress(nifti_bytes(volume))
    with open(p("truncated.nii.gz"), "wb") as out:
        out.write(packed[: int(len(packed) * 0.6)])
    bad += ["truncated.fits", "lying_naxis.fits", "naxis0.fits", "bad_bitpix.fits", "text.fits", "zero.fits",
            "zero.png", "truncated.png", "corrupt.png", "huge.png", "truncated.nii.gz"]
    # Decompression bombs (the test runs with input.max_file_bytes: 20000000): 64 MB of zeros,
    # once with an honest gzip trailer (ISIZE) and once with ISIZE forged small.
    bomb = gzip.compress(b"\0" * (64 << 20), 9)
    with open(p("bomb.fits.gz"), "wb") as out:
        out.write(bomb)
    with open(p("bomb_lying.fits.gz"), "wb") as out:
        out.write(bomb[:-4] + struct.pack("<I", 2880))
    with open(p("sparse_big.fits"), "wb") as out:  # 30 MB, sparse: over the size limit
        out.truncate(30 << 20)
    os.symlink("does-not-exist.fits", p("dangling.fits"))
    os.mkfifo(p("fifo.fits"))  # would block a reader that opened it
    bad += ["bomb.fits.gz", "bomb_lying.fits.gz", "sparse_big.fits", "dangling.fits", "fifo.fits"]
    if os.geteuid() != 0:
        fits.PrimaryHDU(star_field(32, 32, 1)).writeto(p("unreadable.fits"), overwrite=True)
        os.chmod(p("unreadable.fits"), 0)
        bad.append("unreadable.fits")
    else:
        skipped.append("unreadable.fits: running as root, chmod 000 does not stop reads (the FIFO stands in)")
    with open(os.path.join(root, "expected.json"), "w") as out:
        json.dump({"good": good, "bad": bad, "skipped": skipped}, out, indent=1)


if __name__ == "__main__":
    main()
