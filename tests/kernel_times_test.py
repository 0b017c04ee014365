"""tools/gpu/kernel-times.py's summary of saved Nsight Compute CSV outputs (no GPU needed): kernel
names stripped of namespaces, templates and parameters, times in any unit, the launches per run,
the totals per run and the ratios against the first build.
Usage: kernel_times_test.py SOURCE_DIR"""
import json
import os
import subprocess
import sys
import tempfile

src = sys.argv[1]
header = '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",' \
         '"Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"\n'


def row(i, kernel, unit, value):
    return (f'"{i}","1","imflow","host","{kernel}","1","13","(256, 1, 1)","(132, 1, 1)","0","9.0",'
            f'"Command line profiler metrics","gpu__time_duration.sum","{unit}","{value}"\n')


sort = "void cub::DeviceRadixSortOnesweepKernel<cub::policy_hub<unsigned int, cub::NullType>::Policy1000, 0>(const unsigned int *)"
clip = "imflow::<unnamed>::clip_kernel(imflow::<unnamed>::ClipParams)"
runs = {  # build -> runs -> [(kernel, unit, value)]
    "before": [[(sort, "ns", "30,000"), (sort, "ns", "28,000"), (clip, "us", "108")],
               [(sort, "ns", "29,000"), (sort, "ns", "31,000"), (clip, "us", "110")]],
    "after": [[(sort, "ns", "30,000"), (sort, "ns", "30,000"), (clip, "ms", "0.1")],
              [(sort, "ns", "29,000"), (sort, "ns", "29,000"), (clip, "us", "102")]],
}
work = tempfile.mkdtemp()
arguments = []
for build, build_runs in runs.items():
    for n, launches in enumerate(build_runs):
        path = os.path.join(work, f"{build}-{n}.csv")
        with open(path, "w") as f:
            f.write("==PROF== Connected to process 1 (imflow)\nimflow: 8 items, 0 failed\n" + header)
            for i, launch in enumerate(launches):
                f.write(row(i, *launch))
        arguments += ["--parse", f"{build}={path}"]
out = os.path.join(work, "times.json")
subprocess.run([sys.executable, os.path.join(src, "tools/gpu/kernel-times.py"), *arguments, "--out", out], check=True)
results = json.load(open(out))["results"]
before, after = results["before"], results["after"]
assert set(before["kernels"]) == {"DeviceRadixSortOnesweepKernel", "clip_kernel"}, before["kernels"]
assert before["kernels"]["DeviceRadixSortOnesweepKernel"] == {"median_us": 29.5, "min_us": 28.0, "max_us": 31.0, "launches_per_run": 2.0}
assert before["kernels"]["clip_kernel"]["median_us"] == 109.0
assert before["total_us_per_run"] == [166.0, 170.0] and before["median_total_us_per_run"] == 168.0
assert after["kernels"]["clip_kernel"]["median_us"] == 101.0, after["kernels"]["clip_kernel"]
assert after["median_total_us_per_run"] == 160.0 and after["total_us_per_run"] == [160.0, 160.0]
assert after["ratios_to_first"]["clip_kernel"] == round(101.0 / 109.0, 4)
assert after["ratios_to_first"]["total"] == round(160.0 / 168.0, 4)
assert "ratios_to_first" not in before
print("kernel-times summary: ok")
