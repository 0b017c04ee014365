#!/usr/bin/env python3
"""Nsight Compute's time of each GPU kernel for one or more imflow builds on the same inputs,
alternated round by round in one call (a b, b a, ...): every launch's gpu__time_duration.sum
(clocks and caches left as they run); per kernel the median, min and max per launch and the
launches per run; per run the total of the kernels matched (divide by the inputs for a time per
image); and each build's ratios against the first.
Standard library only; needs ncu (default /usr/local/cuda/bin/ncu) and a GPU.

usage: kernel-times.py --build NAME=IMFLOW [--build NAME=IMFLOW ...] --pipeline P.yaml --input DIR
                       --kernels REGEX --out OUT.json [--rounds 2] [--ncu PATH] [-- imflow run options]
e.g.   tools/gpu/kernel-times.py --build before=/tmp/imflow-old --build after=build-dev/imflow \\
           --pipeline config/astro.yaml --input /dev/shm/in8 --kernels "segments_kernel|accumulate_kernel" \\
           --out /tmp/measure.json -- --device cuda --streams 1 --threads 4
With --parse NAME=CSV ... it summarises saved `ncu --csv` outputs instead of running anything."""
import argparse
import csv
import json
import os
import re
import shutil
import statistics
import subprocess
import tempfile


def kernel_name(full):
    """The kernel's own name: no return type, parameters, template arguments or namespaces."""
    name = full[5:] if full.startswith("void ") else full
    name = name.split("(", 1)[0]
    while True:
        shorter = re.sub(r"<[^<>]*>", "", name)
        if shorter == name:
            break
        name = shorter
    return name.split("::")[-1]


def launches(ncu_csv_text):
    """(kernel, microseconds) per launch from `ncu --csv --metrics gpu__time_duration.sum` output."""
    lines = ncu_csv_text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        raise SystemExit("kernel-times: no kernel was profiled (does --kernels match a launch?)")
    scale = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3}
    for row in csv.DictReader(lines[start:]):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        yield kernel_name(row["Kernel Name"]), float(row["Metric Value"].replace(",", "")) * scale[row["Metric Unit"]]


def summarise(times_by_build, totals_by_build):
    builds = {}
    for build, times in times_by_build.items():
        runs = totals_by_build[build]
        kernels = {}
        for kernel, values in sorted(times.items()):
            kernels[kernel] = {"median_us": round(statistics.median(values), 3), "min_us": round(min(values), 3),
                               "max_us": round(max(values), 3), "launches_per_run": round(len(values) / len(runs), 3)}
        builds[build] = {"kernels": kernels, "runs": len(runs), "total_us_per_run": [round(t, 3) for t in runs],
                         "median_total_us_per_run": round(statistics.median(runs), 3)}
    first = next(iter(builds.values()))
    for summary in list(builds.values())[1:]:
        ratios = {"total": round(summary["median_total_us_per_run"] / first["median_total_us_per_run"], 4)}
        for kernel, k in summary["kernels"].items():
            if kernel in first["kernels"]:
                ratios[kernel] = round(k["median_us"] / first["kernels"][kernel]["median_us"], 4)
        summary["ratios_to_first"] = ratios
    return builds


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", action="append", default=[], help="NAME=path of an imflow binary")
    parser.add_argument("--parse", action="append", default=[], help="NAME=path of a saved ncu --csv output")
    parser.add_argument("--pipeline")
    parser.add_argument("--input")
    parser.add_argument("--kernels", default=".", help="ncu's -k regex: the kernels to time")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--ncu", default="/usr/local/cuda/bin/ncu")
    parser.add_argument("--out", required=True)
    parser.add_argument("run_options", nargs="*", help="after --: options for imflow run")
    args = parser.parse_args()
    times, totals = {}, {}

    def add_run(name, text):
        total = 0.0
        for kernel, us in launches(text):
            times.setdefault(name, {}).setdefault(kernel, []).append(us)
            total += us
        totals.setdefault(name, []).append(total)

    record = {"tool": "tools/gpu/kernel-times.py", "metric": "gpu__time_duration.sum, clocks and caches uncontrolled"}
    if args.parse:
        for item in args.parse:
            name, path = item.split("=", 1)
            add_run(name, open(path).read())
    else:
        if not (args.build and args.pipeline and args.input):
            parser.error("--build, --pipeline and --input are required (or --parse)")
        builds = [item.split("=", 1) for item in args.build]
        order = []
        for round_index in range(args.rounds):  # a b, then b a, ...
            order += builds if round_index % 2 == 0 else builds[::-1]
        for name, binary in order:
            scratch = tempfile.mkdtemp(prefix="kernel-times-")  # a fresh output folder: a run resumes none
            command = [args.ncu, "-k", f"regex:{args.kernels}", "--metrics", "gpu__time_duration.sum",
                       "--clock-control", "none", "--cache-control", "none", "--csv", binary, "run",
                       args.pipeline, "-i", args.input, "-o", os.path.join(scratch, "out"), *args.run_options]
            result = subprocess.run(command, capture_output=True, text=True)
            shutil.rmtree(scratch, ignore_errors=True)
            if result.returncode != 0:
                raise SystemExit(f"kernel-times: {' '.join(command)} failed ({result.returncode}):\n{result.stderr[-2000:]}")
            add_run(name, result.stdout)
        record.update({"builds": dict(builds), "pipeline": args.pipeline, "input": os.path.abspath(args.input),
                       "kernels_regex": args.kernels, "rounds": args.rounds, "run_options": args.run_options})
    record["results"] = summarise(times, totals)
    with open(args.out, "w") as f:
        json.dump(record, f, indent=1)
        f.write("\n")
    for name, summary in record["results"].items():
        print(name, summary["median_total_us_per_run"], "us per run;", {k: v["median_us"] for k, v in summary["kernels"].items()})


if __name__ == "__main__":
    main()
