# imflow.sep.Background against sep.Background (SEP 1.4.1): the same maps and global values on
# the committed crops and a crowded field, with masks, other dtypes, byte orders and layouts.
import numpy as np
import pytest
import sep

import imflow.sep as isep
from conftest import native

NAMES = ["isaac_crop", "dss_crop", "crowded_400"]


def relative(ours, theirs):
    ours, theirs = np.asarray(ours, np.float64), np.asarray(theirs, np.float64)
    return float(np.max(np.abs(ours - theirs) / np.maximum(np.abs(theirs), 1e-30)))


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("mesh", [(64, 64, 3, 3), (32, 48, 5, 3), (64, 64, 0, 0)])  # fw = fh = 0: no filter, as SEP
def test_maps_equal_seps(images, name, mesh):
    bw, bh, fw, fh = mesh
    ours = isep.Background(images[name], bw=bw, bh=bh, fw=fw, fh=fh)  # big-endian FITS data as they are
    theirs = sep.Background(native(images[name]), bw=bw, bh=bh, fw=fw, fh=fh)
    assert ours.back(np.float32).shape == images[name].shape
    assert relative(ours.back(np.float32), theirs.back(np.float32)) <= 1e-6
    assert relative(ours.rms(np.float32), theirs.rms(np.float32)) <= 1e-6
    assert ours.globalback == pytest.approx(theirs.globalback, rel=1e-6)
    assert ours.globalrms == pytest.approx(theirs.globalrms, rel=1e-6)
    assert ours.globalrms > 0


@pytest.mark.parametrize("name", NAMES)
def test_mask_and_maskthresh(images, name):
    data = native(images[name]).astype(np.float32)
    h, w = data.shape
    weights = np.zeros((h, w), np.float32)
    weights[h // 4: h // 2, w // 3: w - 5] = 2.0   # masked with maskthresh 1.5
    weights[: h // 5, : w // 5] = 1.0              # kept with maskthresh 1.5
    ours = isep.Background(data, mask=weights, maskthresh=1.5, bw=32, bh=32)
    theirs = sep.Background(data, mask=weights, maskthresh=1.5, bw=32, bh=32)
    assert relative(ours.back(), theirs.back()) <= 1e-6
    assert relative(ours.rms(), theirs.rms()) <= 1e-6
    plain = isep.Background(data, bw=32, bh=32)
    assert relative(plain.back(), ours.back()) > 1e-6  # the mask mattered
    boolean = weights > 1.5
    assert relative(isep.Background(data, mask=boolean, bw=32, bh=32).back(),
                    sep.Background(data, mask=boolean, bw=32, bh=32).back()) <= 1e-6


def test_dtypes_layouts_and_subtraction(images):
    data = native(images["isaac_crop"]).astype(np.float64) * 3.1
    theirs = sep.Background(data)
    for variant in (data, np.asfortranarray(data), data.astype(">f8")):
        ours = isep.Background(variant)
        assert ours.back().dtype == theirs.back().dtype == np.float64
        assert relative(ours.back(), theirs.back()) <= 1e-6
        assert relative(ours.rms(), theirs.rms()) <= 1e-6
    ours = isep.Background(data)
    assert relative(data - ours, data - theirs) <= 1e-6
    copy = data.copy()
    ours.subfrom(copy)
    assert relative(copy, data - theirs) <= 1e-6
    single = data.astype(np.float32)
    assert np.array_equal(single - isep.Background(single), single - sep.Background(single))
    integers = native(images["dss_crop"])  # int32, as SEP takes it
    assert relative(isep.Background(images["dss_crop"]).back(np.float32),
                    sep.Background(integers).back(np.float32)) <= 1e-6
    with pytest.raises(ValueError, match="2-d"):
        isep.Background(np.zeros(10))
    with pytest.raises(ValueError, match="masked array"):  # SEP 1.4.1 would drop its mask silently
        isep.Background(np.ma.masked_greater(data, 1e3))
    with pytest.raises(ValueError, match="complex"):
        isep.extract(data.astype(np.complex64), 3.0)


def test_integer_data_masks_and_numpy_arithmetic_as_seps(images):
    # int32 data (SEP's integer type): maps, `data - bkg` and subfrom in int32, rounded as SEP rounds.
    integers = native(images["dss_crop"]).astype(np.int32)
    ours, theirs = isep.Background(integers), sep.Background(integers)
    for name in ("back", "rms"):
        assert getattr(ours, name)().dtype == np.int32
        np.testing.assert_array_equal(getattr(ours, name)(), getattr(theirs, name)())
    np.testing.assert_array_equal(integers - ours, integers - theirs)
    mine, seps = integers.copy(), integers.copy()
    ours.subfrom(mine)
    theirs.subfrom(seps)
    np.testing.assert_array_equal(mine, seps)
    with pytest.raises(ValueError, match="uint8"):
        isep.Background(integers * 5).back(dtype=np.uint8)  # would wrap: SEP refuses the dtype
    # numpy takes the background map where it needs an array, as with SEP's Background.
    data = native(images["isaac_crop"]).astype(np.float32)
    ours, theirs = isep.Background(data), sep.Background(data)
    for ours_result, seps_result in ((ours - data, theirs - data), (data / ours, data / theirs),
                                     (np.sqrt(ours), np.sqrt(theirs)), (data + ours, data + theirs)):
        assert ours_result.dtype == seps_result.dtype
        assert relative(ours_result, seps_result) <= 1e-6
    # A NaN mask value, or a NaN maskthresh, masks (SEP's background keeps pixels whose mask <= maskthresh).
    mask = np.zeros(data.shape, np.float32)
    mask[:40, :50] = np.nan
    ours, theirs = isep.Background(data, mask=mask), sep.Background(data, mask=mask)
    assert ours.globalback == pytest.approx(theirs.globalback, rel=1e-6)
    assert relative(ours.back(), theirs.back()) <= 1e-6
    assert isep.__version__ == sep.__version__ == "1.4.1"


def test_integers_sep_cannot_subtract_give_float32_not_wrapped_values(images):
    # uint16 as astropy reads a BZERO=32768 image (SEP refuses the dtype): pixels below the
    # background would wrap around to ~65535 in place.
    data = np.clip(native(images["isaac_crop"]), 0, 60000).astype(np.uint16)
    ours = isep.Background(data)
    subtracted = data - ours
    assert subtracted.dtype == np.float32
    np.testing.assert_array_equal(subtracted, data.astype(np.float32) - ours.back(np.float32))
    assert subtracted.min() < 0
    with pytest.raises(ValueError, match="do not fit dtype uint16; subtract from a float copy"):
        ours.subfrom(data.copy())
    signed = np.clip(data, 0, 30000).astype(np.int16)  # int16 holds the result: in place, the map rounded
    background = isep.Background(signed)
    expected = signed.astype(np.int64) - background.back(np.int16)
    background.subfrom(signed)
    np.testing.assert_array_equal(signed, expected)
    # Boolean data: the maps are float32.
    flags = native(images["isaac_crop"]) > np.median(native(images["isaac_crop"]))
    assert isep.Background(flags).back().dtype == np.float32
    assert (flags - isep.Background(flags)).dtype == np.float32
