"""A detection filter after the background (SExtractor's FILTER Y) against Debian's source-extractor
2.25 and SEP 1.4.1, on the committed crops and, when datasets/fetch.sh has fetched them, the full
ISAAC frame and the globular cluster M12.

SExtractor's default configuration filters the background-subtracted image with default.conv and
thresholds it at DETECT_THRESH x the unfiltered background RMS; imflow does the same with
`convolve` placed after `background`:
  - imflow (mesh 64/3, convolve default.conv with SEP's arithmetic, segment 1.5 sigma relative_to
    background in float32, 8-connected, deblend 32 / 0.005 with CLEAN, measure with noise: global)
    with clean_style and draws sextractor against source-extractor's defaults (FILTER Y,
    WEIGHT_TYPE NONE, DETECT_MINAREA 5, GAIN 0, PHOT_AUTOPARAMS 2.5, 3.5, MASK_TYPE CORRECT), with
    CLEAN Y and N on both sides: every object paired (same bounding box), the same detected area,
    FLUX_ISO and FLUXERR_ISO within 1e-4 relative, X_IMAGE, Y_IMAGE within 1e-4 px (positions
    weighted by the filtered values), X2_IMAGE, Y2_IMAGE, A_IMAGE, B_IMAGE and ERRX2_IMAGE within
    1e-4 relative (a CLEAN survivor's from its own pixels); with `arithmetic: sextractor` on the
    objects whose photometry the image edge leaves whole (FLAGS 16 on neither side) FLUX_AUTO
    equal, KRON_RADIUS within 1e-6 and FLUXERR_AUTO within 1e-4 relative, with the neighbours SExtractor
    blanks (detections under DETECT_MINAREA, the rows its filter blanks after CLEAN), the
    crowding bit (FLAGS 1) of every object the same, and the saturated bit (FLAGS 4, each input's
    SATURATE set to its 99.9th percentile: SATUR_KEY and saturation_keyword) wherever SExtractor's
    peak is not within 1% of the level; and with CLEAN Y and a 150-line image buffer on both sides
    (MEMORY_BUFSIZE, memory_bufsize: CLEAN's list released as it slides, behind the filter's strip
    margin) the same objects, areas and isophotal columns (the photometry, which SExtractor takes
    from the lines its buffer holds, is compared with its default buffer only);
  - the same pipeline with SEP's CLEAN and draws against sep.extract(data - bkg, 1.5,
    err=bkg.globalrms, filter_kernel=default.conv, filter_type="conv"): the same objects, FLUX_ISO,
    a, b and errx2 within 1e-4 relative, x and y within 1e-4 px.
Usage: filter_peers_test.py IMFLOW SOURCE_DIR  (python3 with numpy, astropy and sep 1.4.1)"""
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import sep
from astropy.io import fits
from astropy.table import Table

from sextractor_peers import pair_by_box, sextractor

imflow, src = sys.argv[1], sys.argv[2]
sep.set_extract_pixstack(10**7)
sep.set_sub_object_limit(10**4)
work = tempfile.mkdtemp()
KERNEL = np.array([[1.0, 2.0, 1.0], [2.0, 4.0, 2.0], [1.0, 2.0, 1.0]])
PARAMS = ["NUMBER", "X_IMAGE", "Y_IMAGE", "ISOAREAF_IMAGE", "XMIN_IMAGE", "YMIN_IMAGE", "XMAX_IMAGE", "YMAX_IMAGE",
          "FLUX_ISO", "FLUXERR_ISO", "X2_IMAGE", "Y2_IMAGE", "A_IMAGE", "B_IMAGE", "ERRX2_IMAGE", "KRON_RADIUS",
          "FLUX_AUTO", "FLUXERR_AUTO", "FLAGS", "FLUX_MAX", "BACKGROUND"]
problems = []
if shutil.which("source-extractor") is None:
    sys.exit("FAIL: source-extractor not found: tools/install-deps.sh installs Debian's source-extractor package")


def run_imflow(inputs, out, style, clean=True, bufsize=1024):
    """imflow's LDAC catalogs with SExtractor's default detection and its filter after the background."""
    config = os.path.join(work, f"{style}-{clean}.yaml")
    with open(config, "w") as f:
        f.write("input: {patterns: ['*.fits']}\noutput: {formats: [ldac]}\ndevice: cpu\nsteps:\n"
                "  - background: {method: mesh, size: 64, filter_size: 3}\n"
                "  - convolve: {kernel: [[1, 2, 1], [2, 4, 2], [1, 2, 1]], apply_to: detection, arithmetic: sep}\n"
                "  - segment: {nsigma: 1.5, relative_to: background, compare: float32}\n"
                "  - label: {connectivity: 8}\n"
                f"  - deblend: {{nthresh: 32, mincont: 0.005, clean: {str(clean).lower()}, clean_param: 1.0, minarea: 5, "
                f"clean_style: {style}, draws: {style}" + (f", memory_bufsize: {bufsize}" if bufsize != 1024 else "") + "}\n"
                "  - measure: {gain: 0, noise: global, auto: {kron_fact: 2.5, min_kron_radius: 3.5}, "
                f"arithmetic: {style}, saturation: 50000, saturation_keyword: SATURATE}}\n")
    subprocess.run([imflow, "-q", "run", config, "--input", inputs, "--output", out, "--threads", "2"], check=True)


def add_card(path, key, value):
    """KEY = value appended to the primary header, byte for byte (astropy refuses to rewrite some
    ESO headers, whose cards it calls non-standard)."""
    with open(path, "rb") as f:
        data = f.read()
    end = next(at for at in range(0, len(data), 80) if data[at:at + 80] == b"END".ljust(80))
    header_end = (end // 2880 + 1) * 2880
    cards = data[:end] + f"{key:<8}= {value:>20.10G}".ljust(80).encode() + b"END".ljust(80)
    cards += b" " * (-len(cards) % 2880)
    with open(path, "wb") as f:
        f.write(cards + data[header_end:])


def relative(a, b, scale):
    return np.abs(np.asarray(a, float) - np.asarray(b, float)) / np.maximum(scale, 1e-300)


def check(label, ours, theirs, pairs, columns):
    """All objects paired both ways and every column pair within 1e-4 relative."""
    line = f"{label}: {len(pairs)} objects paired (imflow {len(ours)}, peer {len(theirs)})"
    if len(theirs) < 20 or len(pairs) != len(ours) or len(pairs) != len(theirs):
        problems.append(line)
    for name, error in columns.items():
        line += f"; {name} max {error.max() if len(error) else 0:.2g}"
        if len(error) and error.max() > 1e-4:
            problems.append(f"{label}: {name} apart by {error.max():.3g}")
    print(line, flush=True)


def compare_sextractor(stem, image, clean, bufsize=1024):
    """SExtractor's defaults (CLEAN Y or N, MEMORY_BUFSIZE) against imflow's out_sextractor-CLEAN catalogs."""
    run = clean if bufsize == 1024 else f"{clean}-{bufsize}"
    theirs = sextractor(work, image, os.path.join(work, f"sex_{stem}_{run}.ldac"), PARAMS, "-MEMORY_BUFSIZE", str(bufsize),
                        "-FILTER", "Y", "-FILTER_NAME",
                        os.path.join(work, "default.conv"), "-WEIGHT_TYPE", "NONE", "-BACK_SIZE", "64",
                        "-BACK_FILTERSIZE", "3", "-DETECT_THRESH", "1.5", "-ANALYSIS_THRESH", "1.5",
                        "-DETECT_MINAREA", "5", "-DEBLEND_NTHRESH", "32", "-DEBLEND_MINCONT", "0.005", "-CLEAN", clean,
                        "-CLEAN_PARAM", "1.0", "-GAIN", "0")
    ours = Table.read(os.path.join(work, f"out_sextractor-{run}", stem + ".ldac"), hdu=2)
    clean = run
    pairs = pair_by_box(ours, theirs)
    o, t = ours[pairs[:, 0]], theirs[pairs[:, 1]]
    area = np.asarray(o["ISOAREA_IMAGE"]) == np.asarray(t["ISOAREAF_IMAGE"])
    if not area.all():
        problems.append(f"{stem} vs SExtractor: {(~area).sum()} detected areas differ")
    flux_scale = np.maximum(np.abs(np.asarray(t["FLUX_ISO"], float)), np.asarray(t["FLUXERR_ISO"], float))
    # Positions and moments weighted by the filtered values: in pixels (a 1e-4 px tolerance,
    # SExtractor sums in float), the second moments relative to their trace.
    columns = {"FLUX_ISO": relative(o["FLUX_ISO"], t["FLUX_ISO"], flux_scale),
               "FLUXERR_ISO": relative(o["FLUXERR_ISO"], t["FLUXERR_ISO"], np.asarray(t["FLUXERR_ISO"], float)),
               "X_IMAGE, Y_IMAGE (px)": np.hypot(np.asarray(o["X_IMAGE"]) - t["X_IMAGE"], np.asarray(o["Y_IMAGE"]) - t["Y_IMAGE"])}
    size = np.asarray(t["X2_IMAGE"], float) + np.asarray(t["Y2_IMAGE"], float)
    columns.update({"X2_IMAGE": relative(o["X2_IMAGE"], t["X2_IMAGE"], size),
                    "Y2_IMAGE": relative(o["Y2_IMAGE"], t["Y2_IMAGE"], size),
                    "A_IMAGE": relative(o["A_IMAGE"], t["A_IMAGE"], np.asarray(t["A_IMAGE"], float)),
                    "B_IMAGE": relative(o["B_IMAGE"], t["B_IMAGE"], np.asarray(t["A_IMAGE"], float)),
                    "ERRX2_IMAGE": relative(o["ERRX2_IMAGE"], t["ERRX2_IMAGE"], np.asarray(t["ERRX2_IMAGE"], float))})
    # The photometry reads the image SExtractor's buffer holds (it blanks and flags only the lines
    # there: not modelled): compared with its default buffer, taller than these images.
    whole = ((np.asarray(o["FLAGS"]) | np.asarray(t["FLAGS"])) & 16) == 0
    if bufsize == 1024:
        # FLUX_AUTO where the edge leaves the photometry whole on both sides (SExtractor's FLAGS 16
        # rounds its box at the edge otherwise).
        auto_scale = np.maximum(np.abs(np.asarray(t["FLUX_AUTO"], float)), np.asarray(t["FLUXERR_AUTO"], float))[whole]
        columns.update({"KRON_RADIUS": relative(o["KRON_RADIUS"][whole], t["KRON_RADIUS"][whole],
                                                np.asarray(t["KRON_RADIUS"], float)[whole]),
                        "FLUX_AUTO": relative(o["FLUX_AUTO"][whole], t["FLUX_AUTO"][whole], auto_scale)})
        # With SExtractor's float32 arithmetic (`arithmetic: sextractor`) the same pixels in every
        # Kron ellipse: FLUX_AUTO equal, KRON_RADIUS within a few float32 steps (the moments' last bits
        # give the ellipse's coefficients), FLUXERR_AUTO within 1e-4. (SEP's double arithmetic leaves
        # KRON_RADIUS unequal on half the objects and, on M12, a pixel on one boundary counted inside.)
        error = relative(o["FLUXERR_AUTO"][whole], t["FLUXERR_AUTO"][whole], np.asarray(t["FLUXERR_AUTO"], float)[whole])
        kron = columns["KRON_RADIUS"]
        unequal = {"KRON_RADIUS": int((kron > 0).sum()), "FLUX_AUTO": int((columns["FLUX_AUTO"] > 0).sum()),
                   "FLUXERR_AUTO beyond 1e-4": int((error > 1e-4).sum())}
        print(f"{stem} CLEAN {clean}: not equal on {unequal} of {len(kron)}", flush=True)
        if unequal["FLUX_AUTO"] or unequal["FLUXERR_AUTO beyond 1e-4"] or (len(kron) and kron.max() > 1e-6):
            problems.append(f"{stem} CLEAN {clean}: AUTO photometry apart: {unequal}, KRON_RADIUS by at most "
                            f"{kron.max() if len(kron) else 0:.3g}")
    # FLAGS 4, saturated, from the header's SATURATE on both sides, where SExtractor's peak is not
    # within 1% of it (SExtractor adds the background at the centroid to the peak less the
    # background at the peak; imflow takes the peak pixel as read).
    level = fits.getval(image, "SATURATE")
    peak = np.asarray(t["FLUX_MAX"], float) + np.asarray(t["BACKGROUND"], float)
    saturated = (np.asarray(o["FLAGS"]) & 4) != 0
    differ = (saturated != ((np.asarray(t["FLAGS"]) & 4) != 0)) & (np.abs(peak - level) > 0.01 * level)
    if differ.any() or not saturated.any():
        problems.append(f"{stem} CLEAN {clean}: the saturated bit differs on {differ.sum()} objects "
                        f"({saturated.sum()} saturated)")
    crowded = (np.asarray(o["FLAGS"]) & 1) != (np.asarray(t["FLAGS"]) & 1)
    if crowded.any() and bufsize == 1024:
        problems.append(f"{stem} CLEAN {clean}: the crowding bit differs on {crowded.sum()} objects")
    check(f"{stem} FILTER Y, CLEAN {clean} vs SExtractor ({(np.asarray(t['FLAGS']) & 1).sum()} crowded, "
          f"{saturated.sum()} saturated, "
          f"{whole.sum()} with whole photometry)", ours, theirs, pairs, columns)


def compare_sep(stem, image):
    data = fits.getdata(image).astype(np.float32)
    back = sep.Background(data, bw=64, bh=64, fw=3, fh=3)
    objects = sep.extract(data - back.back(), 1.5, err=back.globalrms, minarea=5, filter_kernel=KERNEL,
                          filter_type="conv", deblend_nthresh=32, deblend_cont=0.005, clean=True, clean_param=1.0)
    theirs = Table({"X_IMAGE": objects["x"] + 1, "Y_IMAGE": objects["y"] + 1, "XMIN_IMAGE": objects["xmin"] + 1,
                    "YMIN_IMAGE": objects["ymin"] + 1, "XMAX_IMAGE": objects["xmax"] + 1,
                    "YMAX_IMAGE": objects["ymax"] + 1, "FLUX_ISO": objects["flux"], "A_IMAGE": objects["a"],
                    "B_IMAGE": objects["b"], "ERRX2_IMAGE": objects["errx2"]})
    ours = Table.read(os.path.join(work, "out_sep", stem + ".ldac"), hdu=2)
    pairs = pair_by_box(ours, theirs)
    o, t = ours[pairs[:, 0]], theirs[pairs[:, 1]]
    a = np.asarray(t["A_IMAGE"], float)
    check(f"{stem} FILTER Y vs SEP", ours, theirs, pairs,
          {"FLUX_ISO": relative(o["FLUX_ISO"], t["FLUX_ISO"], np.maximum(np.abs(np.asarray(t["FLUX_ISO"], float)), 1e-3)),
           "X_IMAGE, Y_IMAGE (px)": np.hypot(np.asarray(o["X_IMAGE"]) - t["X_IMAGE"], np.asarray(o["Y_IMAGE"]) - t["Y_IMAGE"]),
           "A_IMAGE": relative(o["A_IMAGE"], t["A_IMAGE"], a), "B_IMAGE": relative(o["B_IMAGE"], t["B_IMAGE"], a),
           "ERRX2_IMAGE": relative(o["ERRX2_IMAGE"], t["ERRX2_IMAGE"], np.asarray(t["ERRX2_IMAGE"], float))})


try:
    inputs = os.path.join(work, "in")
    os.makedirs(inputs)
    with open(os.path.join(work, "default.conv"), "w") as f:
        f.write("CONV NORM\n1 2 1\n2 4 2\n1 2 1\n")
    images = [os.path.join(src, "datasets/samples", name) for name in ("isaac_crop.fits", "dss_crop.fits")]
    for name in ("ISAAC.2006-04-13T06-32-38.944.fits", "image_M12c.fits"):  # a dense field, a globular cluster
        full = os.path.join(src, "datasets/data/astro", name)
        if os.path.exists(full):
            images.append(full)
    for path in images:
        shutil.copy(path, inputs)
        copy = os.path.join(inputs, os.path.basename(path))  # saturated: the brightest 0.1% of pixels
        add_card(copy, "SATURATE", float(np.nanpercentile(fits.getdata(copy).astype(float), 99.9)))
    for clean in ("Y", "N"):
        run_imflow(inputs, os.path.join(work, "out_sextractor-" + clean), "sextractor", clean == "Y")
    # A 150-line image buffer: SExtractor releases CLEAN's list as it slides, behind the filter's
    # strip margin (memory_bufsize).
    run_imflow(inputs, os.path.join(work, "out_sextractor-Y-150"), "sextractor", True, 150)
    run_imflow(inputs, os.path.join(work, "out_sep"), "sep")
    for path in images:
        stem = os.path.basename(path).replace(".fits", "")
        for clean in ("Y", "N"):
            compare_sextractor(stem, os.path.join(inputs, os.path.basename(path)), clean)
        compare_sextractor(stem, os.path.join(inputs, os.path.basename(path)), "Y", 150)
        compare_sep(stem, os.path.join(inputs, os.path.basename(path)))
finally:
    shutil.rmtree(work, ignore_errors=True)

if problems:
    print("\n".join("FAIL: " + p for p in problems[:40]), file=sys.stderr)
    sys.exit(1)
print("filter_peers: OK")
