# imflow.run over the committed crops (the deblending pipeline of config/peers-deblend.yaml) and
# imflow.read_catalog of what it wrote: the catalogs are imflow.sep.extract's objects on the same
# images; errors come back as Python exceptions naming the file and the reason.
import os

import numpy as np
import pytest

import imflow
import imflow.sep as isep
from conftest import ROOT

try:
    import astropy  # noqa: F401
    HAVE_ASTROPY = True
except ImportError:
    HAVE_ASTROPY = False

PIPELINE = {
    "input": {"dir": os.path.join(ROOT, "datasets", "samples"), "patterns": ["*_crop.fits"]},
    "output": {"dir": "unused", "formats": ["csv", "fits"]},
    "device": "cpu",
    "steps": [{"background": {"method": "mesh", "size": 64, "filter_size": 3}},
              {"segment": {"nsigma": 1.5, "relative_to": "background", "compare": "float32"}},
              {"label": {"connectivity": 8}},
              {"deblend": {"nthresh": 32, "mincont": 0.005, "clean": True, "clean_param": 1.0, "minarea": 5}},
              "measure"],
}


def test_run_and_read_catalog_match_extract(tmp_path, images):
    summary = imflow.run(PIPELINE, output=tmp_path, threads=2)
    assert summary["totals"]["items"] == 2
    records = {os.path.basename(r["file"]): r for r in summary["items"]}
    assert sorted(records) == ["dss_crop.fits", "isaac_crop.fits"]
    for name, record in records.items():
        assert record["status"] == "ok"
        csv = next(path for path in record["outputs"] if path.endswith(".csv"))
        catalog = imflow.read_catalog(csv)
        assert len(catalog) == record["nsources"] > 10
        data = images[name[:-5]].astype(np.float32)
        bkg = isep.Background(data)
        objects = isep.extract(data - bkg, 1.5, err=bkg.globalrms, filter_kernel=None)
        assert len(objects) == len(catalog)
        assert np.allclose(np.asarray(catalog["x"]), objects["x"], rtol=0, atol=1e-9)
        assert np.allclose(np.asarray(catalog["y"]), objects["y"], rtol=0, atol=1e-9)
        assert np.allclose(np.asarray(catalog["flux_iso"]), objects["flux"], rtol=1e-12, atol=0)
        fits = next(path for path in record["outputs"] if path.endswith(".fits"))
        if HAVE_ASTROPY:
            assert np.allclose(np.asarray(imflow.read_catalog(fits)["x"]), objects["x"], rtol=0, atol=1e-9)
        else:  # FITS catalogs need astropy; the CSV one comes as a NumPy structured array
            assert isinstance(catalog, np.ndarray) and catalog.dtype.names[:3] == ("id", "x", "y")
            with pytest.raises(ImportError, match="astropy"):
                imflow.read_catalog(fits)


def test_errors_name_the_file_and_reason(tmp_path):
    bad = dict(PIPELINE, steps=[{"segment": {"nsigma": "many"}}])
    with pytest.raises(imflow.ConfigError, match="nsigma"):
        imflow.run(bad, output=tmp_path)
    with pytest.raises(TypeError, match="unknown option"):
        imflow.run(PIPELINE, output=tmp_path, colour="blue")
    with pytest.raises(Exception, match="does-not-exist"):
        imflow.run(PIPELINE, input=tmp_path / "does-not-exist", output=tmp_path)


def test_photometry_columns_reach_python(tmp_path):
    """measure's photometry columns come back from imflow.run's catalogs by name, the CSV's and the
    FITS table's equal, 'flux_aper_7.5' spelled as written, magnitudes from the zeropoint."""
    measure = {"measure": {"apertures": [3, 7.5], "auto": True, "zeropoint": 25.0}}
    pipeline = dict(PIPELINE, steps=PIPELINE["steps"][:-1] + [measure])
    summary = imflow.run(pipeline, output=tmp_path, threads=2)
    assert all(r["status"] == "ok" for r in summary["items"])
    record = next(r for r in summary["items"] if r["file"].endswith("isaac_crop.fits"))
    csv = next(path for path in record["outputs"] if path.endswith(".csv"))
    catalog = imflow.read_catalog(csv)
    names = list(catalog.dtype.names) if isinstance(catalog, np.ndarray) else catalog.colnames
    assert names[36:] == ["kron_radius", "flux_auto", "flux_auto_err", "mag_auto", "magerr_auto", "flags_auto",
                          "flux_aper_3", "flux_aper_err_3", "mag_aper_3", "magerr_aper_3", "flux_aper_7.5",
                          "flux_aper_err_7.5", "mag_aper_7.5", "magerr_aper_7.5", "flags_phot", "mag_iso",
                          "magerr_iso"]
    flux = np.asarray(catalog["flux_aper_7.5"], dtype=np.float64)
    assert np.all(np.isfinite(flux)) and len(flux) > 10
    mags = np.asarray(catalog["mag_aper_7.5"], dtype=np.float64)
    assert np.allclose(mags[flux > 0], 25.0 - 2.5 * np.log10(flux[flux > 0]), rtol=1e-12, atol=0)
    assert np.all(mags[flux <= 0] == 99.0)
    if HAVE_ASTROPY:
        fits = next(path for path in record["outputs"] if path.endswith(".fits"))
        assert np.array_equal(np.asarray(imflow.read_catalog(fits)["flux_aper_7.5"]), flux)


class RecordingBar:
    """A tqdm-like bar that records what imflow.run shows."""
    made = []

    def __init__(self, total, unit, desc):
        self.total, self.n, self.postfix, self.closed = total, 0, {}, False
        RecordingBar.made.append(self)

    def update(self, n):
        self.n += n

    def set_postfix(self, refresh=True, **values):
        self.postfix = values

    def close(self):
        self.closed = True


def test_progress_bar_counts_files_and_images(tmp_path):
    RecordingBar.made.clear()
    summary = imflow.run(PIPELINE, output=tmp_path, threads=2, progress=RecordingBar)
    (bar,) = RecordingBar.made
    assert (bar.total, bar.n, bar.closed) == (2, 2, True)
    assert bar.postfix == {"images": 2, "failed": 0} and summary["totals"]["items"] == 2
    # tqdm itself (tqdm.auto: a widget in a notebook, text here), the default when installed.
    import tqdm  # noqa: F401
    summary = imflow.run(PIPELINE, output=tmp_path / "tqdm", threads=2)
    assert summary["totals"]["items"] == 2
    with pytest.raises(TypeError, match="unknown option"):
        imflow.run(PIPELINE, output=tmp_path, progress_bar=True)


def test_a_stopped_run_takes_no_new_items(tmp_path):
    """What KeyboardInterrupt does to imflow.run: the counts' stop() ends the run between items."""
    import json
    counts = imflow._imflow.RunCounts()
    assert (counts.files, counts.items_done) == (-1, 0)
    counts.stop()
    settings = imflow._imflow.RunSettings()
    settings.output = os.fspath(tmp_path)
    summary = json.loads(imflow._imflow.run(json.dumps(PIPELINE), "<dict>", settings, counts))
    assert counts.files == 2 and counts.items_done == 0 and summary["items"] == []
    assert "interrupted" in summary["totals"]["stopped_early"]
