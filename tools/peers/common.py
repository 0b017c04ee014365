"""Shared pieces of the peer runners: image reading, the common catalog CSV, the imflow-equivalent
global background (kappa-sigma), and the timing record every runner writes."""
import argparse
import csv
import glob
import json
import os
import platform
import time

import numpy as np

# The common catalog: 0-based centroids (first pixel's centre is 0), background-subtracted
# isophotal flux, pixel count, ellipse (a, b in px, theta in degrees counter-clockwise from +x),
# deblended (1: split from a blend, 0: not; nan: the tool does not say).
CSV_COLUMNS = ("x", "y", "flux", "npix", "a", "b", "theta_deg", "deblended")


def add_common_args(parser: argparse.ArgumentParser) -> None:
    """The detection settings every runner shares (docs/peers.md, settings table)."""
    parser.add_argument("--images", required=True, help="directory of 2-D float32 FITS images")
    parser.add_argument("--out", required=True, help="directory for <image>.csv and timing.json")
    parser.add_argument("--background", choices=("mesh", "global"), default="mesh",
                        help="mesh: SExtractor mesh background and per-pixel rms map; global: "
                             "imflow's kappa-sigma median and std (scalar)")
    parser.add_argument("--mesh", type=int, default=64, help="background mesh size (px)")
    parser.add_argument("--filter", type=int, default=3, help="background median filter (meshes)")
    parser.add_argument("--nsigma", type=float, default=5.0, help="threshold in units of rms")
    parser.add_argument("--kappa", type=float, default=3.0, help="global: clipping kappa")


def list_images(directory: str) -> list:
    files = sorted(glob.glob(os.path.join(directory, "*.fits")))
    if not files:
        raise SystemExit(f"{directory}: no *.fits images")
    return files


def read_image(path: str) -> np.ndarray:
    """The first 2-D image of a FITS file as native-endian float32 (what imflow computes on)."""
    try:
        from astropy.io import fits
    except ImportError:  # the GPU machine carries only NumPy and SEP (device.sh)
        return read_image_fitsio_free(path)
    try:
        with fits.open(path, memmap=False) as hdus:
            for hdu in hdus:
                if hdu.data is not None and hdu.data.ndim == 2:
                    return np.ascontiguousarray(hdu.data, dtype=np.float32)
    except OSError as exc:
        raise SystemExit(f"{path}: cannot read FITS: {exc}") from exc
    raise SystemExit(f"{path}: no 2-D image HDU (tools/peers/prepare_images.py makes them)")


def read_image_fitsio_free(path: str) -> np.ndarray:
    """A 2-D BITPIX -32 FITS (as prepare_images.py and make_starfield.py write) without astropy:
    for machines that carry only NumPy and SEP (tools/peers/device.sh)."""
    with open(path, "rb") as handle:
        header = {}
        while True:
            block = handle.read(2880)
            if len(block) < 2880:
                raise SystemExit(f"{path}: truncated FITS header")
            cards = [block[i:i + 80].decode("ascii", "replace") for i in range(0, 2880, 80)]
            for card in cards:
                key, _, value = card.partition("=")
                header[key.strip()] = value.split("/")[0].strip()
            if any(card.startswith("END") for card in cards):
                break
        if header.get("BITPIX") != "-32" or header.get("NAXIS") != "2":
            raise SystemExit(f"{path}: expected a 2-D BITPIX -32 image")
        width, height = int(header["NAXIS1"]), int(header["NAXIS2"])
        data = np.fromfile(handle, dtype=">f4", count=width * height)
    if data.size != width * height:
        raise SystemExit(f"{path}: truncated data")
    return data.reshape(height, width).astype(np.float32)


def kappa_sigma(data: np.ndarray, kappa: float = 3.0, max_iters: int = 100):
    """imflow's global background (docs/astronomy.md): median and population std of the kept
    finite pixels, keeping those strictly inside median +- kappa std until nothing is clipped
    (src/kernels/background.cpp: stops at std 0 or when nothing would be kept)."""
    kept = data[np.isfinite(data)].astype(np.float64)
    median, std = float("nan"), float("nan")
    if kept.size == 0:
        return median, std
    for _ in range(max_iters):
        median, std = float(np.median(kept)), float(np.std(kept))
        if std == 0.0:
            break
        inside = kept[(kept > median - kappa * std) & (kept < median + kappa * std)]
        if inside.size in (0, kept.size):
            break
        kept = inside
    return median, std


def write_catalog(path: str, columns: dict) -> int:
    """Writes the common CSV; missing columns are written as nan. Returns the row count."""
    n = len(columns["x"])
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(CSV_COLUMNS)
        values = [np.asarray(columns.get(c, np.full(n, np.nan)), dtype=np.float64) for c in CSV_COLUMNS]
        for i in range(n):
            writer.writerow([f"{v[i]:.10g}" for v in values])
    return n


def read_catalog(path: str) -> dict:
    """The common CSV as float64 arrays by column."""
    with open(path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    return {c: np.array([float(r.get(c, "nan")) for r in rows], dtype=np.float64) for c in CSV_COLUMNS}


class Timing:
    """Per-image seconds and what they include, plus the process's own wall time."""

    def __init__(self, tool: str, version: str, settings: dict, includes: str):
        self.start = time.perf_counter()
        self.record = {"tool": tool, "version": version, "settings": settings,
                       "machine": platform.node(), "cpu": platform.processor() or platform.machine(),
                       "image_seconds_include": includes, "images": []}

    def add(self, image: str, shape, nsources: int, seconds: float, **extra) -> None:
        entry = {"image": os.path.basename(image), "height": int(shape[0]), "width": int(shape[1]),
                 "nsources": int(nsources), "seconds": seconds}
        entry.update(extra)
        self.record["images"].append(entry)

    def write(self, out_dir: str, **extra) -> None:
        self.record["process_seconds_after_imports"] = time.perf_counter() - self.start
        self.record.update(extra)
        with open(os.path.join(out_dir, "timing.json"), "w") as handle:
            json.dump(self.record, handle, indent=1)


def write_fits_float32(path: str, data: np.ndarray, cards: dict = None) -> None:
    """A minimal single-HDU BITPIX -32 FITS writer (no astropy: device.sh runs without it).
    Written to a temporary name and renamed, so an interrupted run leaves no partial image."""
    height, width = data.shape
    header = [("SIMPLE", "T"), ("BITPIX", "-32"), ("NAXIS", "2"), ("NAXIS1", str(width)),
              ("NAXIS2", str(height))]
    for key, value in (cards or {}).items():
        text = f"'{value}'" if isinstance(value, str) else repr(value)
        header.append((key[:8].upper(), text))
    text = "".join(f"{k:<8}= {v:>20}".ljust(80) for k, v in header) + "END".ljust(80)
    text += " " * (-len(text) % 2880)
    payload = np.ascontiguousarray(data, dtype=">f4").tobytes()
    tmp = path + ".tmp"
    with open(tmp, "wb") as handle:
        handle.write(text.encode("ascii"))
        handle.write(payload)
        handle.write(b"\0" * (-len(payload) % 2880))
    os.replace(tmp, path)
