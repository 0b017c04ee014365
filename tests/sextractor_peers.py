"""What the tests against Debian's source-extractor share: its catalogs with the default
configuration and given options, the noise-modelled weight map of a real image, and which sources
are isolated. Imported by weight_peers_test.py, weight_photometry_peers_test.py and
ldac_photometry_peers_test.py (numpy and astropy)."""
import os
import subprocess

import numpy as np
from astropy.io import fits
from astropy.table import Table


def sextractor(work, image, catalog, columns, *options):
    """source-extractor on `image` with its default configuration (written once into `work`) and
    `options`, the catalog's columns `columns`; returns LDAC_OBJECTS."""
    params = os.path.join(work, "peers.param")
    with open(params, "w") as f:
        f.write("\n".join(columns) + "\n")
    config = os.path.join(work, "default.sex")
    if not os.path.exists(config):
        with open(config, "w") as f:
            f.write(subprocess.run(["source-extractor", "-dd"], capture_output=True, text=True, check=True).stdout)
    subprocess.run(["source-extractor", image, "-c", config, "-PARAMETERS_NAME", params, "-CATALOG_TYPE", "FITS_LDAC",
                    "-CATALOG_NAME", catalog, "-VERBOSE_TYPE", "QUIET", "-CHECKIMAGE_TYPE", "NONE", *options],
                   check=True, cwd=work)
    return Table.read(catalog, hdu=2)


def pair_by_box(ours, theirs, distance=None):
    """Indices (i ours, j theirs) of the LDAC rows with the same bounding box (XMIN_IMAGE..YMAX_IMAGE)
    and, with `distance`, X_IMAGE, Y_IMAGE within that many pixels."""
    box = ("XMIN_IMAGE", "YMIN_IMAGE", "XMAX_IMAGE", "YMAX_IMAGE")
    key = {tuple(int(row[k]) for k in box): j for j, row in enumerate(theirs)}
    pairs = []
    for i, row in enumerate(ours):
        j = key.get(tuple(int(row[k]) for k in box))
        if j is None:
            continue
        if distance is None or np.hypot(row["X_IMAGE"] - theirs[j]["X_IMAGE"], row["Y_IMAGE"] - theirs[j]["Y_IMAGE"]) < distance:
            pairs.append((i, j))
    return np.array(pairs, int).reshape(-1, 2)


def sky_sigma(data):
    """The pixel-to-pixel noise of an image, free of the sources' structure."""
    step = np.diff(data, axis=1).ravel() / np.sqrt(2.0)
    return 1.4826 * np.median(np.abs(step - np.median(step)))


def modelled_weights(path, inputs, rng):
    """A real image given a dither pattern's exposure map E (0.4 to 1 across the columns, halved in a
    band of rows; none in a 6-column chip gap and a corner) and noise so that its noise is
    sigma / sqrt(E), written into `inputs` with its weight map E (maps/STEM.weight.fits, 0 where
    unexposed) and RMS map sigma / sqrt(E) (maps/STEM.rms.fits, 1e31: bad, where unexposed). Returns
    the stem, the noisy image (float64), the bad-pixel mask and sigma."""
    with fits.open(path) as hdus:
        header, data = hdus[0].header, hdus[0].data.astype(np.float64)
    height, width = data.shape
    sigma = sky_sigma(data)
    exposure = np.tile(0.4 + 0.6 * np.arange(width) / (width - 1), (height, 1))
    exposure[height // 3: height // 3 + height // 8, :] *= 0.5
    bad = np.zeros(data.shape, bool)
    bad[:, int(0.7 * width): int(0.7 * width) + 6] = True  # a chip gap
    bad[: height // 10, : width // 10] = True  # an unexposed corner
    data = data + rng.normal(0.0, sigma * np.sqrt(1.0 / exposure - 1.0))
    stem = os.path.basename(path).replace(".fits", "")
    fits.writeto(os.path.join(inputs, stem + ".fits"), data.astype(np.float32), header, output_verify="silentfix")
    os.makedirs(os.path.join(inputs, "maps"), exist_ok=True)  # beside the images, not listed as images
    fits.writeto(os.path.join(inputs, "maps", stem + ".weight.fits"), np.where(bad, 0.0, exposure).astype(np.float32))
    rms = np.where(bad, 1e31, sigma / np.sqrt(exposure)).astype(np.float32)
    fits.writeto(os.path.join(inputs, "maps", stem + ".rms.fits"), rms)
    return stem, data, bad, sigma


def isolated(labels, rows, reach, bad=None):
    """Which of `rows` (LDAC_OBJECTS with NUMBER, X_IMAGE, Y_IMAGE) have no other segment of `labels`
    (and no pixel of the mask `bad`) within `reach(row)` px, that reach inside the image."""
    height, width = labels.shape
    yy, xx = np.mgrid[0:height, 0:width]
    keep = []
    for row in rows:
        x, y, r = row["X_IMAGE"] - 1, row["Y_IMAGE"] - 1, reach(row)
        if x - r < 0 or y - r < 0 or x + r > width - 1 or y + r > height - 1:
            keep.append(False)
            continue
        x0, x1, y0, y1 = int(x - r), int(x + r) + 2, int(y - r), int(y + r) + 2
        near = np.hypot(xx[y0:y1, x0:x1] - x, yy[y0:y1, x0:x1] - y) <= r
        found = labels[y0:y1, x0:x1][near]
        clear = not np.any((found != 0) & (found != row["NUMBER"]))
        keep.append(clear and (bad is None or not bad[y0:y1, x0:x1][near].any()))
    return np.array(keep, bool)


def nearest(ours, theirs, distance):
    """For each of SExtractor's rows, the index of imflow's nearest one and whether it is within
    `distance` px."""
    gap = np.hypot(np.asarray(theirs["X_IMAGE"])[:, None] - np.asarray(ours["X_IMAGE"])[None, :],
                   np.asarray(theirs["Y_IMAGE"])[:, None] - np.asarray(ours["Y_IMAGE"])[None, :])
    return gap.argmin(axis=1), gap.min(axis=1) <= distance


def values(table, name):
    """A column as float64 rows (vector columns keep their length)."""
    column = np.asarray(table[name], float)
    return column.reshape(len(table), -1)
