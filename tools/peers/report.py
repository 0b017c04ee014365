"""Gathers a tools/peers/run.sh run into OUT: timing/<group>/<tool>.json (each runner's timing with
its whole-process wall time), summary.json (the speed, fidelity and truth tables) and results.md
(the same tables in markdown). Usage: report.py --work WORK --out OUT --pipeline P --imflow BIN"""
import argparse
import glob
import json
import os
import platform
import subprocess

SPEED_TOOLS = ("sep", "sextractor", "photutils", "imflow-t1", "imflow-all")


def load(path):
    with open(path) as handle:
        return json.load(handle)


def speed(work, out):
    """Per group and tool: seconds per image (extraction; imflow-all: imflow's wall / images,
    i.e. throughput with reads and writes) and whole-process seconds per image."""
    rows = {}
    for group_dir in sorted(glob.glob(os.path.join(work, "cat", "*"))):
        group = os.path.basename(group_dir)
        if group == "synth-all":
            continue
        row = {}
        for tool in SPEED_TOOLS:
            timing_path = os.path.join(group_dir, tool, "timing.json")
            if not os.path.exists(timing_path):
                continue
            timing = load(timing_path)
            wall_path = os.path.join(group_dir, tool, "process_wall.json")
            if os.path.exists(wall_path):
                timing.update(load(wall_path))
            os.makedirs(os.path.join(out, "timing", group), exist_ok=True)
            with open(os.path.join(out, "timing", group, tool + ".json"), "w") as handle:
                json.dump(timing, handle, indent=1)
            images = timing["images"]
            n = len(images)
            per_image = sum(i["seconds"] for i in images) / n
            if tool == "imflow-all":
                per_image = timing["imflow_wall_seconds"] / n
            row[tool] = {"images": n, "seconds_per_image": per_image,
                         "process_seconds_per_image": timing.get("process_wall_seconds", float("nan")) / n,
                         "megapixels_per_image": sum(i["width"] * i["height"] for i in images) / n / 1e6,
                         "sources": sum(i["nsources"] for i in images)}
        sep = row.get("sep", {}).get("seconds_per_image")
        sep_process = row.get("sep", {}).get("process_seconds_per_image")
        for values in row.values():
            values["sep_over_tool"] = sep / values["seconds_per_image"] if sep else None
            values["sep_over_tool_process"] = (sep_process / values["process_seconds_per_image"]
                                               if sep_process else None)
        rows[group] = row
    return rows


def fidelity(out):
    rows = []
    for path in sorted(glob.glob(os.path.join(out, "crossmatch", "*", "*.json"))):
        result = load(path)
        pooled = result["pooled"]
        rows.append({"group": os.path.basename(os.path.dirname(path)),
                     "pair": os.path.basename(path)[:-len(".json")], **pooled})
    return rows


def fmt(value, spec=".4g"):
    return "-" if value is None else format(value, spec)


def markdown(summary) -> str:
    lines = [f"# Peers comparison: {summary['machine']} {summary['date']}", "",
             f"imflow `{summary['imflow_version']}` with `{summary['pipeline']}`; peers: "
             + ", ".join(f"{k} {v}" for k, v in summary["peer_versions"].items()) + ".", "",
             f"CPU: {summary['cpu']}, {summary['cores']} cores; load average at the end "
             f"{summary['loadavg']}.", "", "## Speed (seconds per image, and SEP's time / the tool's)", "",
             "Extraction: SEP Background+extract, photutils Background2D+detect_sources+SourceCatalog, "
             "imflow-t1 its compute stages (no read/write), imflow-all imflow's wall / images "
             "(throughput, reads and writes included), SExtractor the whole process per image.", ""]
    head = "| group | images | Mpx/image | " + " | ".join(SPEED_TOOLS) + " |"
    lines += [head, "|" + " --- |" * (3 + len(SPEED_TOOLS))]
    for group, row in summary["speed"].items():
        any_tool = next(iter(row.values()))
        cells = [f"{fmt(row[t]['seconds_per_image'])} ({fmt(row[t]['sep_over_tool'], '.3g')}x)"
                 if t in row else "-" for t in SPEED_TOOLS]
        lines.append(f"| {group} | {any_tool['images']} | {any_tool['megapixels_per_image']:.3g} | "
                     + " | ".join(cells) + " |")
    lines += ["", "Whole process (interpreter start, imports, FITS reads, catalog writes) per image:", "",
              head, "|" + " --- |" * (3 + len(SPEED_TOOLS))]
    for group, row in summary["speed"].items():
        any_tool = next(iter(row.values()))
        cells = [f"{fmt(row[t]['process_seconds_per_image'])} ({fmt(row[t]['sep_over_tool_process'], '.3g')}x)"
                 if t in row else "-" for t in SPEED_TOOLS]
        lines.append(f"| {group} | {any_tool['images']} | {any_tool['megapixels_per_image']:.3g} | "
                     + " | ".join(cells) + " |")
    lines += ["", "## Fidelity (nearest neighbour within 1 px, both ways; flux ratio A/B)", "",
              "| group | A vs B | sources A / B | A matched | B matched | median flux ratio | "
              "offset median / p95 (px) |", "|" + " --- |" * 7]
    for r in summary["fidelity"]:
        lines.append(f"| {r['group']} | {r['pair']} | {r['n_a']} / {r['n_b']} | "
                     f"{fmt(r['fraction_a_matched'])} | {fmt(r['fraction_b_matched'])} | "
                     f"{fmt(r['median_flux_ratio'], '.6g')} | {fmt(r['median_offset_px'], '.3g')} / "
                     f"{fmt(r['p95_offset_px'], '.3g')} |")
    truth = summary.get("truth")
    if truth:
        key = f"completeness_snr_ge_{truth['snr_cut']:g}"
        lines += ["", f"## Synthetic fields: completeness (S/N >= {truth['snr_cut']:g}, and by S/N bin) "
                      f"and purity (match within {truth['radius_px']:g} px)", "",
                  "| tool | field | stars | detections | completeness | S/N 5-10 | 10-20 | 20-50 | "
                  "purity | iso flux / true (S/N>=50) |", "|" + " --- |" * 10]
        for tool, fields in truth["tools"].items():
            for field, r in fields.items():
                bins = {b["snr_lo"]: b["completeness"] for b in r["completeness_by_snr"]}
                lines.append(f"| {tool} | {field} | {r['stars']} | {r['detections']} | {fmt(r[key])} | "
                             f"{fmt(bins.get(5))} | {fmt(bins.get(10))} | {fmt(bins.get(20))} | "
                             f"{fmt(r['purity'])} | "
                             f"{fmt(r['median_isoflux_over_true_flux_snr_ge_50'])} |")
        lines += ["", "![completeness](completeness.png)"]
    if summary.get("background_check"):
        lines += ["", "## Background map vs SEP (|imflow - SEP| / SEP background)", "",
                  "imflow's map is image - its `bgsub` output; a constant one means `bgsub` "
                  "subtracted a scalar, so the row does not measure the mesh.", "",
                  "| group | median of medians | max over all pixels | images with a constant imflow map |",
                  "| --- | --- | --- | --- |"]
        for group, r in summary["background_check"].items():
            lines.append(f"| {group} | {r['median_of_medians_rel_to_back']:.3g} | "
                         f"{r['max_rel_to_back_all_images']:.3g} | "
                         f"{r.get('images_with_constant_imflow_background', '-')} |")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--work", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--pipeline", required=True)
    parser.add_argument("--imflow", required=True)
    args = parser.parse_args()
    versions = {}
    for tool in ("sep", "sextractor", "photutils"):
        paths = glob.glob(os.path.join(args.work, "cat", "*", tool, "timing.json"))
        if paths:
            versions[tool] = load(paths[0])["version"]
    import numpy, scipy, astropy  # noqa: E401 - versions for the record
    versions.update({"astropy": astropy.__version__, "numpy": numpy.__version__,
                     "scipy": scipy.__version__})
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")),
               platform.machine())
    summary = {"machine": os.path.basename(args.out.rstrip("/")), "date": subprocess.run(
                   ["date", "-u", "+%Y-%m-%dT%H:%M:%SZ"], capture_output=True, text=True).stdout.strip(),
               "cpu": cpu, "cores": os.cpu_count(), "loadavg": [round(v, 2) for v in os.getloadavg()],
               "pipeline": args.pipeline, "imflow_version": subprocess.run(
                   [args.imflow, "--version"], capture_output=True, text=True).stdout.strip(),
               "peer_versions": versions, "speed": speed(args.work, args.out),
               "fidelity": fidelity(args.out)}
    truth_path = os.path.join(args.out, "truth.json")
    if os.path.exists(truth_path):
        summary["truth"] = load(truth_path)
    checks = sorted(glob.glob(os.path.join(args.out, "background_check", "*.json")))
    summary["background_check"] = {os.path.basename(p)[:-5]: {k: v for k, v in load(p).items() if k != "images"}
                                   for p in checks}
    with open(os.path.join(args.out, "summary.json"), "w") as handle:
        json.dump(summary, handle, indent=1)
    with open(os.path.join(args.out, "results.md"), "w") as handle:
        handle.write(markdown(summary))
    print(f"report: {args.out}/results.md")


if __name__ == "__main__":
    main()
