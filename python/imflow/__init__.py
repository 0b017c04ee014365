"""imflow: streaming batch processing of scientific images, from Python.

    imflow.run(pipeline, input=None, output=None, **options)  # a pipeline over a directory
    imflow.extract_image(array, pipeline)                     # a pipeline over a 2-d array: its catalog
    imflow.read_catalog(path)                                 # a CSV or FITS catalog it wrote
    import imflow.sep as sep                                  # SEP's Background and extract
    imflow.set_device("cuda")                                 # imflow.sep's default device ("cpu")
"""
import json
import os
import pkgutil
import threading

# In a build tree the extension module is built into build/python/imflow, next to nothing else:
# with PYTHONPATH=build/python:python both directories make up the package.
__path__ = pkgutil.extend_path(__path__, __name__)

from . import _imflow  # noqa: E402
from ._imflow import ConfigError, InputError, OutputError  # noqa: E402

__version__ = _imflow.__version__
__all__ = ["run", "extract_image", "read_catalog", "set_device", "get_device", "cuda_available", "ConfigError", "InputError",
           "OutputError", "__version__"]

_DEVICES = ("cpu", "cuda")
_settings = {"device": "cpu"}  # imflow.sep's default device: a setting read at each call, no device state


def set_device(device):
    """The device imflow.sep.Background and imflow.sep.extract use when not given one: "cpu" or "cuda"."""
    _settings["device"] = _device_name(device)


def get_device():
    """The device imflow.sep uses when not given one (set_device; "cpu" by default)."""
    return _settings["device"]


def cuda_available():
    """Whether this module was built with CUDA and sees a CUDA device."""
    built, count = _imflow.cuda_status()
    return bool(built) and count > 0


def _device_name(device):
    """"cpu" or "cuda" (None: the set_device default); ValueError otherwise."""
    if device is None:
        return _settings["device"]
    if device not in _DEVICES:
        raise ValueError(f"device: {device!r} is not one of 'cpu', 'cuda'")
    return device

_RUN_OPTIONS = {"device": str, "threads": int, "buffers": int, "batch": int, "fail_fast": bool, "resume": bool,
                "trace": os.fspath, "summary": os.fspath}


def _pipeline_text(pipeline):
    """(YAML text, name for messages) of a pipeline file, YAML text, or a dict."""
    if isinstance(pipeline, dict):
        return json.dumps(pipeline), "<dict>"  # JSON is YAML
    if isinstance(pipeline, os.PathLike) or (isinstance(pipeline, str) and "\n" not in pipeline
                                              and os.path.isfile(pipeline)):
        path = os.fspath(pipeline)
        with open(path, encoding="utf-8") as stream:
            return stream.read(), path
    if isinstance(pipeline, str):
        return pipeline, "<string>"
    raise TypeError("pipeline: a YAML file path, YAML text or a dict")


def run(pipeline, input=None, output=None, progress=None, **options):
    """Run a pipeline (a YAML file, YAML text or a dict) over a directory; the run summary as a dict.

    input and output override the pipeline's input.dir and output.dir; options are imflow run's
    command-line options: device ('auto', 'cpu', 'cuda'), threads, buffers, batch, fail_fast,
    resume, trace (a Chrome trace file) and summary (where summary.json goes).
    progress: None (a tqdm bar of the files done when tqdm is installed: tqdm.auto, a widget in a
    notebook), True (the same, ImportError without tqdm), False (none), or a tqdm-like class.
    KeyboardInterrupt stops the run after the items in flight (their outputs are complete).
    """
    text, name = _pipeline_text(pipeline)
    settings = _imflow.RunSettings()
    if input is not None:
        settings.input = os.fspath(input)
    if output is not None:
        settings.output = os.fspath(output)
    for key, value in options.items():
        if key not in _RUN_OPTIONS:
            raise TypeError(f"run: unknown option {key!r} (known: progress, {', '.join(sorted(_RUN_OPTIONS))})")
        setattr(settings, key, _RUN_OPTIONS[key](value))
    bar = _progress_bar(progress)
    counts = _imflow.RunCounts()
    outcome = {}

    def work():
        try:
            outcome["summary"] = _imflow.run(text, name, settings, counts)
        except BaseException as error:  # noqa: B036  (raised again in the calling thread)
            outcome["error"] = error

    # The run goes on in a thread (without the GIL) so that this one can draw the bar and take
    # KeyboardInterrupt, which asks the run to stop.
    worker = threading.Thread(target=work, name="imflow.run", daemon=True)
    worker.start()
    shown = None
    try:
        while worker.is_alive():
            worker.join(0.1)
            if bar is not None:
                shown = _show_progress(bar, shown, counts)
    except KeyboardInterrupt:
        counts.stop()
        worker.join()
        raise
    finally:
        if shown is not None:
            _show_progress(bar, shown, counts)
            shown.close()
    if "error" in outcome:
        raise outcome["error"]
    return json.loads(outcome["summary"])


def _progress_bar(progress):
    """The tqdm-like class run draws its bar with, or None."""
    if progress is False:
        return None
    if progress is None or progress is True:
        try:
            from tqdm.auto import tqdm
        except ImportError:
            if progress:
                raise ImportError("run(progress=True) needs tqdm (pip install tqdm)") from None
            return None
        return tqdm
    return progress


def _show_progress(bar, shown, counts):
    """The bar (made once the files are listed) brought up to the run's counts."""
    if counts.files < 0:
        return shown
    if shown is None:
        shown = bar(total=counts.files, unit="file", desc="imflow")
    if counts.files_done > shown.n:
        shown.update(counts.files_done - shown.n)
    shown.set_postfix(images=counts.items_done, failed=counts.items_failed, refresh=False)
    return shown


def extract_image(data, pipeline, threads=None, device="cpu"):
    """Run a pipeline (a YAML file, YAML text or a dict) on one 2-d array and return its catalog:
    an astropy Table with the columns, units and header values of the FITS catalog ``imflow run``
    writes for the same image in a FITS file (a NumPy structured array without astropy).

    data: any numeric 2-d array, any byte order (converted to float32 as a FITS image is read);
    the masked pixels of a masked array and NaNs are invalid pixels. The steps run on the CPU
    (device="cpu" only), threads of them at once (None: all cores), the image whole (no tiling),
    without the GIL. The pipeline's input, output and engine sections are not used; measure's
    gain_keyword and zeropoint_keyword fall back to its gain and zeropoint (an array has no header).
    """
    if device != "cpu":
        raise NotImplementedError(f"device: {device!r}: extract_image runs on the CPU only (device='cpu')")
    import numpy as np
    text, name = _pipeline_text(pipeline)
    array = np.ma.filled(np.ma.asanyarray(data).astype(np.float32), np.nan) if np.ma.isMaskedArray(data) else data
    from ._apertures import _image
    result = _imflow.extract_image(text, name, _image(array), 0 if threads is None else int(threads))
    for warning in result["warnings"]:
        import warnings
        warnings.warn(f"extract_image: {warning}", RuntimeWarning, stacklevel=2)
    meta = {key: _card_value(value, numeric) for key, value, numeric, _ in result["cards"]}
    try:
        from astropy import units
        from astropy.table import Column, Table
    except ImportError:
        dtype = [(n, c.dtype) for n, c in zip(result["names"], result["columns"])]
        rows = np.empty(len(result["columns"][0]), dtype=dtype)
        for n, c in zip(result["names"], result["columns"]):
            rows[n] = c
        return rows
    columns = [Column(values, name=n, description=d or None,
                      unit=units.Unit(u, format="fits", parse_strict="silent") if u else None)
               for n, u, d, values in zip(result["names"], result["units"], result["descriptions"], result["columns"])]
    return Table(columns, meta=meta)


def _card_value(text, numeric):
    """A header value as astropy reads it from a FITS card: int, float, or the text."""
    if not numeric:
        return text
    try:
        return int(text)
    except ValueError:
        return float(text)


def read_catalog(path):
    """A catalog imflow wrote (CSV or FITS): an astropy Table when astropy is installed, else a
    NumPy structured array (FITS catalogs need astropy)."""
    path = os.fspath(path)
    try:
        from astropy.table import Table
    except ImportError:
        Table = None
    if path.lower().endswith((".fits", ".fit", ".fts", ".ldac")):
        if Table is None:
            raise ImportError(f"{path}: reading a FITS catalog needs astropy (pip install astropy)")
        return Table.read(path, hdu=_catalog_hdu(path))
    import numpy as np
    with open(path, encoding="utf-8") as stream:
        header = stream.readline().strip().split(",")
    if header == [""]:
        raise ValueError(f"{path}: empty catalog file (no header row)")
    # deletechars="": column names as written (flux_aper_7.5 keeps its '.').
    rows = np.genfromtxt(path, delimiter=",", names=True, dtype=None, encoding="utf-8", ndmin=1, deletechars="")
    return Table(rows) if Table is not None else rows


def _catalog_hdu(path):
    """The first binary table HDU of a FITS catalog (FITS_LDAC: the OBJECTS table, LDAC_OBJECTS)."""
    from astropy.io import fits
    with fits.open(path) as hdus:
        names = [hdu.name for hdu in hdus]
        if "LDAC_OBJECTS" in names:
            return names.index("LDAC_OBJECTS")
        for index, hdu in enumerate(hdus):
            if isinstance(hdu, fits.BinTableHDU):
                return index
    raise ValueError(f"{path}: no binary table in this FITS file")
