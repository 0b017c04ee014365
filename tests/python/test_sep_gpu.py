# imflow.sep with device="cuda" against device="cpu" on the committed crops and a crowded field:
# the same background maps to float rounding, the same objects in the same order (SEP's filters
# included), the same segmentation map and columns within the engine's GPU tests' tolerances. Skipped
# with the reason where the module has no CUDA or sees no device; needs neither sep nor astropy.
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import imflow
import imflow.sep as isep
from imflow import _imflow
from conftest import native

NAMES = ["isaac_crop", "dss_crop", "crowded_400"]
INTEGER = ("npix", "tnpix", "xmin", "xmax", "ymin", "ymax", "xpeak", "ypeak", "xcpeak", "ycpeak", "flag")
FLOAT = ("thresh", "x", "y", "x2", "y2", "xy", "errx2", "erry2", "errxy", "a", "b", "cxx", "cyy", "cxy", "cflux",
         "flux", "cpeak", "peak")


def cuda_or_skip():
    built, count = _imflow.cuda_status()
    if not built:
        pytest.skip("imflow._imflow was built without CUDA")
    if count == 0:
        pytest.skip("imflow._imflow reports no CUDA device")


def subtracted(images, name):
    """The image less imflow's CPU background and its globalrms: the same input for both devices."""
    data = native(images[name]).astype(np.float32)
    bkg = isep.Background(data, device="cpu")
    return data - bkg, bkg


def same_objects(gpu, cpu):
    """Asserts the GPU's catalog and map equal the CPU's (integers, map, flags exact; floats to the
    engine's GPU tolerances: the device's measurement sums in another order)."""
    (g, gmap), (c, cmap) = gpu, cpu
    assert len(g) == len(c)
    np.testing.assert_array_equal(gmap, cmap)
    for name in INTEGER:
        np.testing.assert_array_equal(g[name], c[name], err_msg=name)
    for name in FLOAT:
        np.testing.assert_allclose(g[name], c[name], rtol=1e-7, atol=1e-9, equal_nan=True, err_msg=name)
    finite = np.isfinite(c["theta"])
    np.testing.assert_array_equal(np.isfinite(g["theta"]), finite)
    assert np.all(np.abs(np.remainder(g["theta"][finite] - c["theta"][finite] + np.pi / 2, np.pi) - np.pi / 2) < 1e-6)


def both(data, **kwargs):
    kwargs.setdefault("filter_kernel", None)
    return [isep.extract(data, segmentation_map=True, device=d, **kwargs) for d in ("cuda", "cpu")]


@pytest.mark.parametrize("name", NAMES)
def test_background_cuda_equals_cpu(images, name):
    cuda_or_skip()
    data = native(images[name]).astype(np.float32)
    gpu, cpu = isep.Background(data, device="cuda"), isep.Background(data, device="cpu")
    assert gpu.globalback == pytest.approx(cpu.globalback, rel=1e-5, abs=1e-3 * cpu.globalrms)
    assert gpu.globalrms == pytest.approx(cpu.globalrms, rel=1e-5)
    for g, c in ((gpu.back(), cpu.back()), (gpu.rms(), cpu.rms())):
        scale = np.maximum(np.abs(c.astype(np.float64)), 1e-3 * cpu.globalrms)
        assert np.max(np.abs(g.astype(np.float64) - c) / scale) <= 1e-5


@pytest.mark.parametrize("name", NAMES)
def test_extract_cuda_equals_cpu(images, name):
    cuda_or_skip()
    data, bkg = subtracted(images, name)
    gpu, cpu = both(data, thresh=1.5, err=bkg.globalrms)
    assert len(cpu[0]) > 10
    same_objects(gpu, cpu)
    if name == "crowded_400":
        assert np.count_nonzero(cpu[0]["flag"] & isep.OBJ_MERGED) > 0  # the deblending split blends


@pytest.mark.parametrize("noise", ["err", "var"])
def test_extract_cuda_noise_maps_mask_gain(images, noise):
    cuda_or_skip()
    data, bkg = subtracted(images, "crowded_400")
    rms = bkg.rms()
    mask = np.zeros(data.shape, dtype=bool)
    mask[100:140, 200:260] = True
    kwargs = {noise: rms if noise == "err" else rms * rms}
    gpu, cpu = both(data, thresh=1.5, mask=mask, gain=2.0, minarea=3, deblend_cont=0.01, **kwargs)
    assert len(cpu[0]) > 10
    same_objects(gpu, cpu)


SETUPS = {  # SEP's filters: default_kernel by conv with one sigma, matched and conv with maps, a 5x3 kernel
    "default_conv": lambda bkg: {"err": bkg.globalrms, "filter_kernel": isep.default_kernel},
    "matched_err": lambda bkg: {"err": bkg.rms(), "filter_kernel": isep.default_kernel},
    "matched_var": lambda bkg: {"var": bkg.rms() ** 2, "filter_kernel": isep.default_kernel},
    "conv_err_map": lambda bkg: {"err": bkg.rms(), "filter_kernel": isep.default_kernel, "filter_type": "conv"},
    "wide_kernel": lambda bkg: {"err": bkg.globalrms,
                                "filter_kernel": np.outer([1.0, 2.0, 1.0], [1.0, 3.0, 4.0, 3.0, 1.0])},
}


@pytest.mark.parametrize("setup", sorted(SETUPS))
@pytest.mark.parametrize("name", ["isaac_crop", "crowded_400"])
def test_extract_cuda_filters_equal_cpu(images, name, setup):
    cuda_or_skip()
    data, bkg = subtracted(images, name)
    gpu, cpu = both(data, thresh=1.5, **SETUPS[setup](bkg))
    assert len(cpu[0]) > 10
    same_objects(gpu, cpu)


def test_extract_cuda_absolute_threshold_no_clean(images):
    cuda_or_skip()
    data, bkg = subtracted(images, "isaac_crop")
    gpu, cpu = both(data, thresh=3.0 * float(bkg.globalrms), clean=False, deblend_nthresh=16)
    assert len(cpu[0]) > 5
    same_objects(gpu, cpu)
    assert np.all(cpu[0]["errx2"] == 0.0)  # SEP: no err, zero errors


def test_extract_cuda_threads_and_default_device(images):
    cuda_or_skip()
    data, bkg = subtracted(images, "crowded_400")
    expected = isep.extract(data, 1.5, err=bkg.globalrms, filter_kernel=None, segmentation_map=True, device="cpu")
    imflow.set_device("cuda")
    try:
        with ThreadPoolExecutor(4) as pool:
            results = list(pool.map(lambda _: isep.extract(data, 1.5, err=bkg.globalrms, filter_kernel=None,
                                                           segmentation_map=True), range(8)))
    finally:
        imflow.set_device("cpu")
    for result in results:
        same_objects(result, expected)


def test_cuda_large_image_in_several_transfer_chunks():
    """A 2,100 x 2,050 field (17 MB: three 8 MB staging chunks, the last partial): the maps the GPU
    keeps and downloads on request, the objects with and without the segmentation map, tnpix."""
    cuda_or_skip()
    from compare_sep_deblend import crowded
    data = crowded(np, 2100, 11)[:2050]
    gpu, cpu = isep.Background(data, device="cuda"), isep.Background(data, device="cpu")
    for g, c in ((gpu.rms(), cpu.rms()), (gpu.back(), cpu.back())):
        assert g.shape == data.shape
        scale = np.maximum(np.abs(c.astype(np.float64)), 1e-3 * cpu.globalrms)
        assert np.max(np.abs(g.astype(np.float64) - c) / scale) <= 1e-5
    np.testing.assert_array_equal(data - gpu, data - gpu.back())  # subfrom: the downloaded map, kept
    sub = data - cpu
    cpu_objects, cpu_map = isep.extract(sub, 1.5, err=cpu.globalrms, filter_kernel=None, segmentation_map=True)
    assert len(cpu_objects) > 1000
    same_objects(isep.extract(sub, 1.5, err=cpu.globalrms, filter_kernel=None, segmentation_map=True, device="cuda"),
                 (cpu_objects, cpu_map))
    alone = isep.extract(sub, 1.5, err=cpu.globalrms, filter_kernel=None, device="cuda")
    same_objects((alone, cpu_map), (cpu_objects, cpu_map))
    assert np.sum(alone["tnpix"]) > 0 and np.all(alone["tnpix"] <= alone["npix"])


def test_cuda_refuses_what_it_cannot_do(images):
    data, bkg = subtracted(images, "isaac_crop")
    with pytest.raises(NotImplementedError, match="segmentation_map"):
        isep.extract(data, 1.5, err=bkg.globalrms, filter_kernel=None, device="cuda",
                     segmentation_map=np.zeros(data.shape, dtype=np.int32))
    with pytest.raises(ValueError, match="device"):
        isep.extract(data, 1.5, device="gpu")
    with pytest.raises(ValueError, match="device"):
        imflow.set_device("tpu")
    assert imflow.get_device() == "cpu"


def test_cuda_without_device_says_so(images):
    built, count = _imflow.cuda_status()
    if built and count > 0:
        pytest.skip("a CUDA device is present")
    data, _ = subtracted(images, "isaac_crop")
    message = "no CUDA device" if built else "built without CUDA"
    assert not imflow.cuda_available()
    with pytest.raises(RuntimeError, match=message):
        isep.extract(data, 1.5, filter_kernel=None, device="cuda")
    with pytest.raises(RuntimeError, match=message):
        isep.Background(data, device="cuda")
