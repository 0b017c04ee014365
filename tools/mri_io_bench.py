#!/usr/bin/env python3
"""Read and write thread time per MRI slice (ms), from the summary.json of `imflow run` over the
real slices: PNG (datasets/data/mri/slices) and NIfTI (datasets/data/mri/volumes), each through
normalize only (the I/O around it is the MRI pipeline's), on the CPU, per thread count.

usage: tools/mri_io_bench.py [--imflow LABEL=BINARY ...] [--threads 1,2] [--repeat 5]
                             [--compression 1[,6,...]] [--inputs png,nifti] [--scratch DIR] [--json OUT.json]
Several --imflow binaries are run interleaved (rep by rep), so a busy machine slows each alike;
the figures are medians over the repeats (min and max kept too), with the mean PNG output size.
"""
import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
INPUTS = {
    "png": ("datasets/data/mri/slices", '["*.png"]'),
    "nifti": ("datasets/data/mri/volumes", '["*.nii", "*.nii.gz"]'),
}
PIPELINE = """input:
  dir: {dir}
  patterns: {patterns}
  nifti_axis: 2
output:
  dir: {out}
  formats: [png]
  png_compression: {compression}
device: cpu
steps:
  - normalize: {{method: minmax, nonfinite: zero}}
"""


def run_once(binary, kind, threads, compression, scratch):
    directory, patterns = INPUTS[kind]
    out = os.path.join(scratch, "out")
    shutil.rmtree(out, ignore_errors=True)
    pipeline = os.path.join(scratch, "pipeline.yaml")
    with open(pipeline, "w") as f:
        f.write(PIPELINE.format(dir=os.path.join(ROOT, directory), patterns=patterns, out=out, compression=compression))
    subprocess.run([binary, "run", pipeline, "--device", "cpu", "--threads", str(threads)], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(os.path.join(out, "summary.json")) as f:
        totals = json.load(f)["totals"]
    items = totals["items"]
    busy = totals["stage_busy_seconds"]
    pngs = [e.path for e in os.scandir(out) if e.name.endswith(".png")]
    return {"read_ms": busy["read"] / items * 1e3, "write_ms": busy["write"] / items * 1e3,
            "slices": items, "png_bytes": sum(os.path.getsize(p) for p in pngs) / max(len(pngs), 1)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--imflow", action="append", default=[], help="LABEL=BINARY (repeatable)")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--compression", default="1", help="output.png_compression levels (0..9), comma-separated")
    parser.add_argument("--inputs", default="png,nifti")
    parser.add_argument("--scratch", default="/dev/shm" if os.path.isdir("/dev/shm") else None)
    parser.add_argument("--json")
    args = parser.parse_args()
    binaries = dict(item.split("=", 1) for item in args.imflow) or {"imflow": os.path.join(ROOT, "build/imflow")}
    threads = [int(t) for t in args.threads.split(",")]
    levels = [int(level) for level in args.compression.split(",")]
    runs = {}
    with tempfile.TemporaryDirectory(dir=args.scratch, prefix="mri-io-") as scratch:
        for _ in range(args.repeat):
            for label, binary in binaries.items():
                for kind in args.inputs.split(","):
                    for t in threads:
                        for level in levels:
                            runs.setdefault((label, kind, t, level), []).append(run_once(binary, kind, t, level, scratch))
    points = []
    for (label, kind, t, level), results in runs.items():
        point = {"imflow": label, "input": kind, "threads": t, "png_compression": level, "slices": results[0]["slices"],
                 "png_bytes": results[0]["png_bytes"], "repeats": len(results)}
        for key in ("read_ms", "write_ms"):
            values = [r[key] for r in results]
            point[key] = round(statistics.median(values), 4)
            point[key + "_min_max"] = [round(min(values), 4), round(max(values), 4)]
        points.append(point)
        print(f"{label:>10} {kind:>5} threads {t} level {level}: read {point['read_ms']:.3f} ms  write {point['write_ms']:.3f} ms"
              f"  per slice ({point['slices']} slices; PNG {point['png_bytes'] / 1024:.2f} KiB)")
    report = {"tool": "tools/mri_io_bench.py", "command": " ".join(sys.argv), "machine": platform.processor() or platform.machine(),
              "cores": os.cpu_count(), "load_average": os.getloadavg(), "points": points}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
