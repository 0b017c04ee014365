# imflow.extract_image on in-memory arrays against `imflow run` on the same images written to FITS
# files: the same catalog (columns, units, values, header values) for the photometry pipeline and
# SExtractor's deblending pipeline; dtypes, byte orders and masked arrays; errors.
import os
import sys

import numpy as np
import pytest

fits = pytest.importorskip("astropy.io.fits", reason="imflow.extract_image returns an astropy Table")

import imflow  # noqa: E402
from conftest import ROOT  # noqa: E402

CONFIG = os.path.join(ROOT, "config")
RESULT_KEYS = ("BKG_MED", "BKG_STD", "THRESH", "GAIN", "MAGZERO")


def run_on_fits(tmp_path, pipeline, data):
    """The FITS catalog `imflow run` writes for `data` stored as a FITS file (read by astropy)."""
    (tmp_path / "in").mkdir()
    fits.PrimaryHDU(data).writeto(tmp_path / "in" / "image.fits")
    summary = imflow.run(pipeline, input=tmp_path / "in", output=tmp_path / "out", threads=2)
    (record,) = summary["items"]
    assert record["status"] == "ok", record
    return imflow.read_catalog(next(p for p in record["outputs"] if p.endswith(".cat.fits")))


def assert_same_catalog(table, written):
    assert table.colnames == written.colnames
    for name in table.colnames:
        assert table[name].unit == written[name].unit, name
        # read_catalog's description: the TTYPEn comment, cut where the 80-character card ends
        assert (table[name].description or "").startswith(written[name].description or ""), name
        mine, theirs = np.asarray(table[name]), np.asarray(written[name])
        assert mine.dtype.kind == theirs.dtype.kind, name
        assert np.array_equal(mine, theirs, equal_nan=mine.dtype.kind == "f"), name
    assert sum(bool(written[name].description) for name in written.colnames) > len(written.colnames) // 2
    for key in RESULT_KEYS:
        assert (key in table.meta) == (key in written.meta), key
        if key in table.meta:  # the header's values, 15 significant digits as CFITSIO writes them
            assert table.meta[key] == written.meta[key], key


def test_photometry_pipeline_matches_run(tmp_path, images):
    pipeline = os.path.join(CONFIG, "astro-photometry.yaml")
    data = images["isaac_crop"]  # big-endian float32, as FITS stores it
    table = imflow.extract_image(data, pipeline, threads=2)
    assert len(table) > 20
    assert {"flux_auto", "mag_aper_10", "flux_radius_0.5", "xwin", "mag_iso"} <= set(table.colnames)
    assert str(table["flux_auto"].unit) == "adu" and str(table["x"].unit) == "pix"
    assert table["mag_aper_10"].unit.to_string() == "mag" and table["cxx"].unit.to_string() == "1 / pix2"
    assert table.meta["MAGZERO"] == 25.0  # no MAGZPT keyword: measure's zeropoint
    assert np.all(np.isfinite(table["flux_auto"])) and np.sum(table["flags"] & 4) > 0  # deblended objects
    assert_same_catalog(table, run_on_fits(tmp_path, pipeline, data))


def test_deblend_pipeline_matches_run(tmp_path, images):
    pipeline = os.path.join(CONFIG, "astro-sextractor.yaml")
    data = images["dss_crop"]  # big-endian int16
    table = imflow.extract_image(data, pipeline)
    assert len(table) > 20 and np.sum(table["flags"] & 4) > 0
    assert "flux_auto" not in table.colnames and table.colnames[-1] == "flags"
    assert_same_catalog(table, run_on_fits(tmp_path, pipeline, data))


PIPELINE = {"steps": [{"background": {"method": "mesh", "size": 32}}, {"segment": {"nsigma": 3.0}}, "label",
                      {"measure": {"apertures": [4], "zeropoint": 20.0}}]}


def test_dtypes_byte_orders_and_masks(images):
    data = np.asarray(images["isaac_crop"], dtype=np.float32)
    reference = imflow.extract_image(data, PIPELINE, threads=1)
    assert len(reference) > 10 and reference.meta["MAGZERO"] == 20.0
    for variant in (data.astype(">f8"), np.asfortranarray(data), data.astype(np.float64)):
        table = imflow.extract_image(variant, PIPELINE)
        for name in reference.colnames:
            assert np.array_equal(table[name], reference[name], equal_nan=True), name
    # A masked array's masked pixels are invalid pixels, as NaNs are (and as a FITS reader's blanks).
    mask = np.zeros(data.shape, dtype=bool)
    mask[100:110, 40:60] = True
    with_nan = data.copy()
    with_nan[mask] = np.nan
    masked = imflow.extract_image(np.ma.masked_array(data, mask), PIPELINE)
    nans = imflow.extract_image(with_nan, PIPELINE)
    assert len(masked) == len(nans) > 10
    for name in nans.colnames:
        assert np.array_equal(masked[name], nans[name], equal_nan=True), name
    assert not np.array_equal(nans["flux"], reference["flux"])  # the mask changed something


def test_yaml_text_and_dict_give_the_same(images):
    text = ("steps:\n  - background: {method: mesh, size: 32}\n  - segment: {nsigma: 3.0}\n  - label\n"
            "  - measure: {apertures: [4], zeropoint: 20.0}\n")
    data = images["dss_crop"]
    a, b = imflow.extract_image(data, text), imflow.extract_image(data, PIPELINE)
    assert a.colnames == b.colnames and all(np.array_equal(a[n], b[n], equal_nan=True) for n in a.colnames)


def test_without_astropy_a_structured_array(images, monkeypatch):
    expected = imflow.extract_image(images["dss_crop"], PIPELINE)
    for name in ("astropy", "astropy.units", "astropy.table"):
        monkeypatch.setitem(sys.modules, name, None)
    rows = imflow.extract_image(images["dss_crop"], PIPELINE)
    assert isinstance(rows, np.ndarray) and rows.dtype.names == tuple(expected.colnames)
    assert rows["id"].dtype == np.int64 and np.array_equal(rows["flux_aper_4"], expected["flux_aper_4"])


def test_errors(images):
    data = images["dss_crop"]
    with pytest.raises(imflow.ConfigError, match="no catalog"):
        imflow.extract_image(data, {"steps": ["background", "segment"]})
    with pytest.raises(imflow.ConfigError, match="nsigma"):
        imflow.extract_image(data, {"steps": [{"segment": {"nsigma": "many"}}]})
    with pytest.raises(NotImplementedError, match="CPU only"):
        imflow.extract_image(data, PIPELINE, device="cuda")
    with pytest.raises(ValueError, match="device: 'gpu' is not 'cpu'"):  # a misspelt device, not "not implemented"
        imflow.extract_image(data, PIPELINE, device="gpu")
    with pytest.raises(ValueError, match="2-d"):
        imflow.extract_image(np.zeros((3, 4, 5)), PIPELINE)
    with pytest.raises(imflow.InputError, match="zeropoint_keyword"):  # no header and no zeropoint to fall back to
        imflow.extract_image(data, {"steps": ["background", "segment", "label",
                                              {"measure": {"apertures": [4], "zeropoint_keyword": "MAGZPT"}}]})
