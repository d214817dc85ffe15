"""Plots, written as PNG files atomically (matplotlib's Agg backend, no display needed)."""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from trainer.atomic import atomic_path  # noqa: E402


def coord_check_grid(sizes: pd.DataFrame, table: pd.DataFrame, path: str | Path, title: str) -> None:
    """The classic coordinate-check grid: one panel per step, mean |x| against width (log-log), a line per module.

    Modules that pass are thin grey lines; those that fail are drawn in colour and named in the legend.
    """
    failed = list(table.loc[~table["passed"], "module"])
    colours = {module: plt.get_cmap("tab20")(i % 20) for i, module in enumerate(failed)}
    mean = sizes.groupby(["step", "module", "width"], sort=False)["size"].mean().reset_index()
    steps = sorted(mean["step"].unique())
    fig, axes = plt.subplots(1, len(steps), figsize=(3.2 * len(steps), 3.4), sharey=True, squeeze=False)
    for ax, step in zip(axes[0], steps):
        for module, g in mean[mean["step"] == step].groupby("module", sort=False):
            g = g[g["size"] > 0]
            bad = module in colours
            ax.plot(g["width"], g["size"], marker=".", lw=1.4 if bad else 0.7, alpha=1.0 if bad else 0.45,
                    color=colours.get(module, "grey"), label=module if bad else None, zorder=2 if bad else 1)
        ax.set(xscale="log", yscale="log", title=f"t = {step}", xlabel="width")
        ax.set_xticks(sorted(mean["width"].unique()), labels=[str(w) for w in sorted(mean["width"].unique())])
        ax.minorticks_off()
    axes[0][0].set_ylabel("mean |x|")
    if failed:
        axes[0][-1].legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.02, 1.0), title="fails", title_fontsize=7)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=110, format="png", bbox_inches="tight")
    plt.close(fig)
