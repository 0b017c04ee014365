"""Gathers a tools/peers/run.sh run into OUT: timing/<group>/<tool>.json (each runner's timing with
its whole-process wall time), summary.json (the speed, fidelity and truth tables) and results.md
(the same tables in markdown). --deblend (run.sh --deblend): OUT/peers-deblend-crossmatch.json (every
cross-match), peers-deblend-summary.json (versions, settings, the fidelity table and the truth scores
pooled over the crowded fields) and peers-deblend-results.md.
Usage: report.py --work WORK --out OUT --pipeline P --imflow BIN [--deblend]"""
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


DEBLEND_TOOLS = {"sep": "SEP", "sextractor": "SExtractor", "imflow": "imflow",
                 "imflow-sexclean": "imflow (clean_style: sextractor)",
                 "imflow-sextractor": "imflow (clean_style, draws: sextractor)", "imflow-noclean": "imflow without CLEAN",
                 "imflow-drop": "imflow, no deblend step", "imflow-nosplit": "imflow, deblend splitting nothing"}


def pool_truth(fields: dict) -> dict:
    """One tool's crowded-field scores pooled over its fields (counts added up)."""
    total = lambda key, weight: sum((r[key] or 0) * r[weight] for r in fields.values())  # noqa: E731
    stars = sum(r["pair_stars"] for r in fields.values())
    galaxies = sum(r["galaxies"] for r in fields.values())
    detections = sum(r["detections"] for r in fields.values())
    cells = {}
    for r in fields.values():
        for row in r["pairs"]:
            cell = cells.setdefault((row["flux_ratio"], row["sep_lo"]), dict(row, pairs=0, primary=0.0,
                                                                             secondary=0.0, both=0.0))
            cell["pairs"] += row["pairs"]
            for key in ("primary", "secondary", "both"):
                cell[key] += (row[key] or 0) * row["pairs"]
    for cell in cells.values():
        for key in ("primary", "secondary", "both"):
            cell[key] = cell[key] / cell["pairs"] if cell["pairs"] else None
    return {"fields": sorted(fields), "detections": detections,
            "purity": total("purity", "detections") / detections if detections else None,
            "far_px": next(iter(fields.values()))["far_px"],
            "detections_far": sum(r["detections_far_from_truth"] for r in fields.values()),
            "pair_stars": stars, "pair_star_completeness": total("pair_star_completeness", "pair_stars") / stars,
            "galaxies": galaxies, "galaxy_completeness": total("galaxy_completeness", "galaxies") / galaxies,
            "galaxies_split": total("galaxies_split", "galaxies") / galaxies,
            "pairs": sorted(cells.values(), key=lambda c: (-c["flux_ratio"], c["sep_lo"]))}


def deblend_markdown(summary) -> str:
    lines = [f"# Peers comparison with deblending: {summary['date']}", "",
             f"imflow `{summary['imflow_version']}` with `{summary['pipeline']}`; peers: "
             + ", ".join(f"{k} {v}" for k, v in summary["peer_versions"].items()) + ".", "",
             "## Fidelity (nearest neighbour within 1 px, both ways)", "",
             "| group | A vs B | objects A / B | A matched | B matched | median abs(flux ratio - 1) | "
             "pairs with abs(flux ratio - 1) > 1e-4 (of them not deblended) | pairs with equal area | "
             "offset p95 (px) |",
             "|" + " --- |" * 9]
    for r in summary["fidelity"]:
        lines.append(f"| {r['group']} | {r['pair']} | {r['n_a']} / {r['n_b']} | {fmt(r['fraction_a_matched'])} | "
                     f"{fmt(r['fraction_b_matched'])} | {fmt(r['median_abs_flux_deviation'], '.2g')} | "
                     f"{r['pairs_flux_off_1e-4']} ({r['pairs_flux_off_1e-4_not_deblended']}) | "
                     f"{fmt(r['npix_equal_fraction'])} | "
                     f"{fmt(r['p95_offset_px'], '.2g')} |")
    lines += ["", "## Crowded fields against the truth (one-to-one match within 1 px)", "",
              f"| tool | detections | over {next(iter(summary['truth'].values()))['far_px']} px from any "
              "truth object | purity | pair stars found | "
              "galaxies found | galaxies split |", "|" + " --- |" * 7]
    for tool, r in summary["truth"].items():
        lines.append(f"| {DEBLEND_TOOLS.get(tool, tool)} | {r['detections']} | {r['detections_far']} | "
                     f"{fmt(r['purity'], '.3f')} | "
                     f"{fmt(r['pair_star_completeness'], '.3f')} | {fmt(r['galaxy_completeness'], '.3f')} | "
                     f"{fmt(r['galaxies_split'], '.3f')} |")
    seps = sorted({c["sep_lo"] for r in summary["truth"].values() for c in r["pairs"]})
    lines += ["", "Secondaries found, by flux ratio and separation (px):", "",
              "| tool | flux ratio | " + " | ".join(f"{lo}-{lo + 1}" for lo in seps) + " |",
              "|" + " --- |" * (2 + len(seps))]
    for tool, r in summary["truth"].items():
        for ratio in sorted({c["flux_ratio"] for c in r["pairs"]}, reverse=True):
            cells = {c["sep_lo"]: c["secondary"] for c in r["pairs"] if c["flux_ratio"] == ratio}
            lines.append(f"| {DEBLEND_TOOLS.get(tool, tool)} | {ratio:g} | "
                         + " | ".join(fmt(cells.get(lo), ".2f") for lo in seps) + " |")
    return "\n".join(lines + ["", "![completeness](peers-deblend-completeness.png)"]) + "\n"


def deblend_report(args, summary):
    crossmatches = {}
    for path in sorted(glob.glob(os.path.join(args.work, "crossmatch", "*", "*.json"))):
        crossmatches.setdefault(os.path.basename(os.path.dirname(path)), {})[
            os.path.basename(path)[:-len(".json")]] = load(path)
    summary["fidelity"] = [{"group": group, "pair": pair, **result["pooled"]}
                           for group, pairs in crossmatches.items() for pair, result in pairs.items()]
    summary["settings"] = {tool: load(path)["settings"] for tool in DEBLEND_TOOLS
                           for path in glob.glob(os.path.join(args.work, "cat", "real", tool, "timing.json"))}
    summary["sextractor_command"] = load(os.path.join(args.work, "cat", "real", "sextractor",
                                                      "timing.json"))["images"][0]["command"]
    truth = load(os.path.join(args.out, "peers-deblend-truth.json"))
    summary["radius_px"], summary["one_to_one"] = truth["radius_px"], truth["one_to_one"]
    summary["truth"] = {tool: pool_truth(fields) for tool, fields in truth["tools"].items()}
    prefix = os.path.join(args.out, "peers-deblend-")
    with open(prefix + "crossmatch.json", "w") as handle:
        json.dump(crossmatches, handle, indent=1)
    with open(prefix + "summary.json", "w") as handle:
        json.dump(summary, handle, indent=1)
    with open(prefix + "results.md", "w") as handle:
        handle.write(deblend_markdown(summary))
    print(f"report: {prefix}results.md")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--work", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--pipeline", required=True)
    parser.add_argument("--imflow", required=True)
    parser.add_argument("--deblend", action="store_true", help="run.sh --deblend's outputs")
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
               "peer_versions": versions}
    if args.deblend:
        return deblend_report(args, summary)
    summary.update({"speed": speed(args.work, args.out), "fidelity": fidelity(args.out)})
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
