#!/usr/bin/python3
# plot_bench.py: imflow bench.json -> PNG plots (throughput per swept parameter, speedup with the
# Amdahl/Gustafson fit, stage utilisation per point) and a timeline from a Chrome --trace file.
"""Usage: tools/plot_bench.py BENCH.json [--out DIR] [--trace TRACE.json ...] [--title TEXT]"""
import argparse
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

STAGE_COLORS = {"read": "#4c72b0", "write": "#dd8452", "h2d": "#8172b3", "d2h": "#937860",
                "kernels": "#c44e52", "background": "#55a868", "segment": "#da8bc3", "label": "#8c8c8c",
                "measure": "#ccb974", "convolve": "#64b5cd", "normalize": "#2ca02c", "svd_reconstruct": "#d62728"}
EXTRA = ["#1f77b4", "#ff7f0e", "#9467bd", "#17becf", "#bcbd22", "#7f7f7f"]


def color(stage, cache={}):
    if stage in STAGE_COLORS:
        return STAGE_COLORS[stage]
    return cache.setdefault(stage, EXTRA[len(cache) % len(EXTRA)])


def subtitle(bench):
    m = bench.get("machine", {})
    gpus = ", ".join(g["name"] for g in m.get("gpus", [])) or "no GPU"
    return (f"{os.path.basename(bench.get('pipeline', ''))} on {m.get('hostname', '?')} ({m.get('cores', '?')} cores, "
            f"{gpus}), {bench.get('device', '')}, {bench.get('mode', '')}, {bench.get('date', '')[:10]}")


def plot_throughput(bench, out, title):
    sweeps = bench.get("sweeps", {})
    names = [n for n in sweeps if len(sweeps[n]) > 1] or list(sweeps) or ["threads"]
    fig, axes = plt.subplots(1, len(names), figsize=(5.5 * len(names), 4.2), squeeze=False)
    for ax, name in zip(axes[0], names):
        lines = {}
        for p in bench["points"]:
            rest = tuple(sorted((k, v) for k, v in p["params"].items() if k != name))
            lines.setdefault(rest, []).append(p)
        for rest, pts in sorted(lines.items()):
            pts.sort(key=lambda p: p["engine"].get(name, p["params"].get(name, 0)))
            x = [p["engine"].get(name, p["params"].get(name)) for p in pts]
            y = [p["images_per_second"]["median"] for p in pts]
            lo = [p["images_per_second"]["median"] - p["images_per_second"]["min"] for p in pts]
            hi = [p["images_per_second"]["max"] - p["images_per_second"]["median"] for p in pts]
            label = " ".join(f"{k}={v}" for k, v in rest) or "median"
            ax.errorbar(x, y, yerr=[lo, hi], marker="o", capsize=3, label=label)
        ax.set_xlabel(name)
        ax.set_ylabel("images/s (median, min..max)")
        ax.set_xticks(sorted({p["engine"].get(name, p["params"].get(name)) for p in bench["points"]}))
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(f"{title}throughput\n{subtitle(bench)}", fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def plot_scaling(bench, out, title):
    scaling = bench["scaling"]
    fig, ax = plt.subplots(figsize=(6, 4.2))
    top = 1
    for line in scaling["lines"]:
        n, s = line["relative_workers"], line["speedup"]
        order = sorted(range(len(n)), key=lambda i: n[i])
        n, s = [n[i] for i in order], [s[i] for i in order]
        top = max(top, max(n))
        label = " ".join(f"{k}={v}" for k, v in line["fixed"].items()) or "measured"
        if "amdahl" in line:
            f = line["amdahl"]["serial_fraction"]
            label += f" (Amdahl f={f:.3f})"
        else:
            f = line["gustafson"]["serial_fraction"]
            label += f" (Gustafson s={f:.3f})"
        (handle,) = ax.plot(n, s, marker="o", label=label)
        grid = [1 + i * (max(n) - 1) / 50 for i in range(51)]
        if "amdahl" in line:
            model = [1 / (f + (1 - f) / g) if f + (1 - f) / g > 0 else float("nan") for g in grid]
        else:
            model = [g - f * (g - 1) for g in grid]
        ax.plot(grid, model, linestyle=":", color=handle.get_color())
    ax.plot([1, top], [1, top], color="black", linewidth=0.8, label="ideal")
    ax.set_xlabel(f"{scaling['axis']} (relative to the baseline point)")
    ax.set_ylabel("scaled speedup" if scaling["mode"] == "scaled-size" else "speedup")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(f"{title}{scaling['mode']} scaling; dotted: fitted model\n{subtitle(bench)}", fontsize=9)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def plot_utilisation(bench, out, title):
    points = bench["points"]
    stages = sorted({s for p in points for s in p["utilisation"]})
    fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(points) + 2), 4.5))
    width = 0.8 / max(1, len(stages))
    for k, stage in enumerate(stages):
        xs = [i + (k - (len(stages) - 1) / 2) * width for i in range(len(points))]
        ax.bar(xs, [100 * p["utilisation"].get(stage, 0) for p in points], width, label=stage, color=color(stage))
    for i, p in enumerate(points):
        ax.annotate(p["bottleneck"]["stage"], (i, 100 * p["bottleneck"]["utilisation"]), ha="center", va="bottom",
                    fontsize=7, xytext=(0, 3), textcoords="offset points")
    ax.set_xticks(range(len(points)))
    ax.set_xticklabels([p["label"].replace(" ", "\n") for p in points], fontsize=8)
    ax.set_ylabel("utilisation % = busy / (wall x workers)")
    peak = max(100 * p["bottleneck"]["utilisation"] for p in points)
    ax.set_ylim(0, peak * 1.35 + 5)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8, ncol=min(4, len(stages)))
    ax.set_title(f"{title}stage utilisation per point (label: bottleneck)\n{subtitle(bench)}", fontsize=9)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def plot_timeline(trace_path, out, title):
    with open(trace_path) as f:
        events = json.load(f)["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e["name"] == "thread_name"}
    spans = [e for e in events if e.get("ph") == "X"]
    tids = sorted({e["tid"] for e in spans}, key=lambda t: names.get(t, str(t)))
    row = {t: i for i, t in enumerate(tids)}
    t0 = min((e["ts"] for e in spans), default=0)
    fig, ax = plt.subplots(figsize=(11, 0.45 * len(tids) + 1.6))
    by_stage = {}
    for e in spans:
        by_stage.setdefault(e["name"], []).append(e)
    for stage, evs in sorted(by_stage.items()):
        for tid in tids:
            bars = [((e["ts"] - t0) / 1e3, max(e["dur"] / 1e3, 1e-3)) for e in evs if e["tid"] == tid]
            if bars:
                ax.broken_barh(bars, (row[tid] - 0.4, 0.8), facecolors=color(stage))
        ax.bar(0, 0, color=color(stage), label=stage)  # legend entry
    ax.set_yticks(range(len(tids)))
    ax.set_yticklabels([names.get(t, str(t)) for t in tids], fontsize=8)
    ax.set_xlabel("time since the run started (ms)")
    ax.invert_yaxis()
    ax.legend(fontsize=8, ncol=min(6, len(by_stage)), loc="upper center", bbox_to_anchor=(0.5, -0.18))
    ax.set_title(f"{title}timeline: {os.path.basename(trace_path)} ({len(spans)} spans)", fontsize=9)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("bench", help="bench.json from imflow bench")
    parser.add_argument("--out", help="directory for the PNGs (default: next to bench.json)")
    parser.add_argument("--trace", action="append", default=[], help="Chrome trace JSON (imflow run/bench --trace)")
    parser.add_argument("--title", default="", help="prefix for the plot titles")
    args = parser.parse_args()
    with open(args.bench) as f:
        bench = json.load(f)
    if not bench.get("points"):
        sys.exit(f"{args.bench}: no points to plot")
    out = args.out or os.path.dirname(os.path.abspath(args.bench))
    os.makedirs(out, exist_ok=True)
    title = f"{args.title}: " if args.title else ""
    written = [os.path.join(out, n) for n in ("throughput.png", "scaling.png", "utilisation.png")]
    plot_throughput(bench, written[0], title)
    plot_scaling(bench, written[1], title)
    plot_utilisation(bench, written[2], title)
    for trace in args.trace:
        name = os.path.basename(trace).replace(".trace.json", "").replace(".json", "")
        written.append(os.path.join(out, f"timeline-{name}.png"))
        plot_timeline(trace, written[-1], title)
    for path in written:
        print(path)


if __name__ == "__main__":
    main()
