"""imflow: streaming batch processing of scientific images, from Python.

    imflow.run(pipeline, input=None, output=None, **options)  # a pipeline over a directory
    imflow.read_catalog(path)                                 # a CSV or FITS catalog it wrote
    import imflow.sep as sep                                  # SEP's Background and extract
    imflow.set_device("cuda")                                 # imflow.sep's default device ("cpu")
"""
import json
import os
import pkgutil

# In a build tree the extension module is built into build/python/imflow, next to nothing else:
# with PYTHONPATH=build/python:python both directories make up the package.
__path__ = pkgutil.extend_path(__path__, __name__)

from . import _imflow  # noqa: E402
from ._imflow import ConfigError, InputError, OutputError  # noqa: E402

__version__ = _imflow.__version__
__all__ = ["run", "read_catalog", "set_device", "get_device", "cuda_available", "ConfigError", "InputError",
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


def run(pipeline, input=None, output=None, **options):
    """Run a pipeline (a YAML file, YAML text or a dict) over a directory; the run summary as a dict.

    input and output override the pipeline's input.dir and output.dir; options are imflow run's
    command-line options: device ('auto', 'cpu', 'cuda'), threads, buffers, batch, fail_fast,
    resume, trace (a Chrome trace file) and summary (where summary.json goes).
    """
    text, name = _pipeline_text(pipeline)
    settings = _imflow.RunSettings()
    if input is not None:
        settings.input = os.fspath(input)
    if output is not None:
        settings.output = os.fspath(output)
    for key, value in options.items():
        if key not in _RUN_OPTIONS:
            raise TypeError(f"run: unknown option {key!r} (known: {', '.join(sorted(_RUN_OPTIONS))})")
        setattr(settings, key, _RUN_OPTIONS[key](value))
    return json.loads(_imflow.run(text, name, settings))


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
