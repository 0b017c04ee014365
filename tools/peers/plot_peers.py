"""Plots completeness against S/N for each tool (one panel per PSF, sizes pooled) from
OUT/truth.json into OUT/completeness.png; --deblend: the close pairs' secondaries found against
separation, one panel per flux ratio, from OUT/peers-deblend-summary.json (report.py --deblend)
into OUT/peers-deblend-completeness.png. Runs under /usr/bin/python3 (Debian's matplotlib).
Usage: plot_peers.py OUT [--deblend]"""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def pooled_curve(fields: dict, psf: str):
    """(bin centres, completeness) over the fields of one PSF, counts pooled."""
    stars, found, centres = {}, {}, {}
    for field, r in fields.items():
        if not field.endswith(psf):
            continue
        for b in r["completeness_by_snr"]:
            lo = b["snr_lo"]
            stars[lo] = stars.get(lo, 0) + b["stars"]
            found[lo] = found.get(lo, 0) + (b["completeness"] or 0) * b["stars"]
            hi = b["snr_hi"] or 2 * lo
            centres[lo] = max(1.0, (max(lo, 1.0) * hi) ** 0.5)
    los = sorted(lo for lo in stars if stars[lo])
    return [centres[lo] for lo in los], [found[lo] / stars[lo] for lo in los]


def plot_deblend(out: str):
    with open(os.path.join(out, "peers-deblend-summary.json")) as handle:
        summary = json.load(handle)
    truth = summary["truth"]
    ratios = sorted({c["flux_ratio"] for r in truth.values() for c in r["pairs"]}, reverse=True)
    fig, axes = plt.subplots(2, (len(ratios) + 1) // 2, figsize=(12, 6.5), sharex=True, sharey=True)
    styles = {"sep": ("o", "-"), "sextractor": ("x", "--"), "imflow": (".", ":"), "imflow-noclean": ("v", "-."),
              "imflow-drop": ("s", "-"), "imflow-nosplit": ("^", "-")}
    for ax, ratio in zip(axes.flat, ratios):
        for order, (tool, r) in enumerate(truth.items()):  # the first tools drawn on top
            cells = [c for c in r["pairs"] if c["flux_ratio"] == ratio and c["pairs"]]
            marker, line = styles.get(tool, ("o", "-"))
            ax.plot([c["sep_lo"] + 0.5 for c in cells], [c["secondary"] for c in cells], marker=marker,
                    linestyle=line, label=tool, zorder=len(truth) - order)
        ax.set_title(f"secondary / primary flux {ratio:g}")
        ax.grid(True, alpha=0.3)
    for ax in axes[-1]:
        ax.set_xlabel("pair separation (px)")
    for ax in axes[:, 0]:
        ax.set_ylabel("secondaries found")
    axes.flat[0].legend(fontsize=8)
    fig.suptitle("Close pairs on the crowded fields (Gaussian and Moffat PSF, FWHM 3 px): "
                 f"one-to-one match within {summary.get('radius_px', 1):g} px", fontsize=10)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "peers-deblend-completeness.png"), dpi=100)
    print(f"plot_peers: {out}/peers-deblend-completeness.png")


def main():
    out = sys.argv[1]
    if "--deblend" in sys.argv[2:]:
        return plot_deblend(out)
    with open(os.path.join(out, "truth.json")) as handle:
        truth = json.load(handle)
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for ax, psf in zip(axes, ("gauss", "moffat")):
        for tool, fields in truth["tools"].items():
            x, y = pooled_curve(fields, psf)
            ax.plot(x, y, marker="o", label=tool, linestyle="--" if "global" in tool else "-")
        ax.set_xscale("log")
        ax.set_xlabel("true S/N")
        ax.set_title(f"{psf} PSF, all sizes pooled")
        ax.grid(True, alpha=0.3)
    axes[0].set_ylabel(f"completeness (match within {truth['radius_px']:g} px)")
    axes[1].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "completeness.png"), dpi=110)
    print(f"plot_peers: {out}/completeness.png")


if __name__ == "__main__":
    main()
