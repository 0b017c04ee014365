#!/usr/bin/python3
"""ctest bad_inputs: run imflow over make_bad_inputs.py's mix; every bad file gives exactly one
error line naming it, every good one its expected source count, no output escapes OUT, exit 2."""
import csv, json, os, subprocess, sys, tempfile

imflow, src = sys.argv[1], sys.argv[2]
here = os.path.dirname(os.path.abspath(__file__))
failures = []
with tempfile.TemporaryDirectory() as work:
    inp, out = os.path.join(work, "in"), os.path.join(work, "out")
    subprocess.run([sys.executable, os.path.join(here, "make_bad_inputs.py"), inp, os.path.join(work, "outside")], check=True)
    expected = json.load(open(os.path.join(inp, "expected.json")))
    for reason in expected["skipped"]:
        print("skipped case:", reason)
    pipeline = os.path.join(work, "p.yaml")
    with open(pipeline, "w") as f:
        f.write("input: {recursive: true, max_file_bytes: 20000000}\noutput: {formats: [csv, fits]}\ndevice: cpu\n"
                "steps: [background, segment, label, measure]\n")
    run = subprocess.run([imflow, "run", pipeline, "--input", inp, "--output", out, "--threads", "2"],
                         capture_output=True, text=True, errors="replace", timeout=120)
    errors = [line for line in run.stderr.splitlines() if "error" in line.split(":")[0] or "] error:" in line]
    if run.returncode != 2:
        failures.append(f"exit code {run.returncode}, expected 2")
    for name in expected["bad"]:
        hits = [e for e in errors if os.path.join(inp, name) + ":" in e or os.path.join(inp, name) + "[" in e]
        if len(hits) != 1:
            failures.append(f"{name}: {len(hits)} error lines naming it (expected 1): {hits}")
    if len(errors) != len(expected["bad"]):
        failures.append(f"{len(errors)} error lines for {len(expected['bad'])} bad files")
    for name, sources in expected["good"].items():
        stem = name
        for suffix in (".fits.gz", ".fits", ".png"):
            if stem.endswith(suffix):
                stem = stem[: -len(suffix)]
                break
        catalog = os.path.join(out, stem + ".cat.csv")
        if not os.path.isfile(catalog):
            failures.append(f"{name}: no catalog {catalog}")
            continue
        rows = list(csv.reader(open(catalog)))
        if len(rows) - 1 != sources:
            failures.append(f"{name}: {len(rows) - 1} sources, expected {sources}")
    real_out = os.path.realpath(out)
    for dirpath, _, names in os.walk(out):
        for n in names:
            target = os.path.realpath(os.path.join(dirpath, n))
            if not target.startswith(real_out + os.sep):
                failures.append(f"output escapes OUT: {target}")
            if ".tmp-" in n:
                failures.append(f"temporary file left: {n}")
    summary = json.load(open(os.path.join(out, "summary.json")))
    if summary["totals"]["failed"] != len(expected["bad"]) or summary["totals"]["succeeded"] != len(expected["good"]):
        failures.append(f"summary totals {summary['totals']['succeeded']} ok / {summary['totals']['failed']} failed")
    if failures:
        print(run.stderr)
        print("FAIL:\n  " + "\n  ".join(failures))
        sys.exit(1)
    print(f"bad inputs: {len(expected['bad'])} bad files each reported once, {len(expected['good'])} good files correct")
