"""The timeline of a simulation run as a picture (``kcontroller simulate --plot FILE.png``).

Three panels over simulated time: offline, under-replicated and under-min-ISR partitions (as the
controller's state says, the way Kafka's own metrics count them); produce errors per second by
error code; the controller epoch. The scenario's fault steps are marked on every panel.
matplotlib is imported here only, with its file-only Agg backend, so nothing else pays for it.
"""
from __future__ import annotations

from sim.metrics import FAULT_ACTIONS, Metrics


def plot_timeline(metrics: Metrics, path: str, title: str = "") -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    end_s = metrics.sim.loop.now / 1000
    points = metrics.timeline + [[metrics.sim.loop.now, *metrics.timeline[-1][1:]]]
    t = [p[0] / 1000 for p in points]
    fig, (ax1, ax2, ax3) = plt.subplots(3, 1, sharex=True, figsize=(10, 7),
                                        gridspec_kw={"height_ratios": [3, 2, 1]})
    ax1.step(t, [p[1] for p in points], where="post", label="offline", color="tab:red")
    ax1.step(t, [p[2] for p in points], where="post", label="under-replicated", color="tab:orange")
    ax1.step(t, [p[3] for p in points], where="post", label="under min ISR", color="tab:purple", linestyle="--")
    ax1.set_ylabel("partitions")
    ax1.legend(loc="upper right", fontsize="small")

    codes = sorted({code for bucket in metrics.error_buckets.values() for code in bucket})
    seconds = sorted(metrics.error_buckets)
    bottom = [0] * len(seconds)
    for code in codes:
        heights = [metrics.error_buckets[s].get(code, 0) for s in seconds]
        ax2.bar(seconds, heights, width=1.0, align="edge", bottom=bottom, label=code)
        bottom = [b + h for b, h in zip(bottom, heights)]
    ax2.set_ylabel("produce errors / s")
    if codes:
        ax2.legend(loc="upper right", fontsize="small")

    ax3.step(t, [p[4] for p in points], where="post", color="tab:blue")
    ax3.set_ylabel("controller epoch")
    ax3.set_xlabel("simulated time (s)")
    ax3.set_xlim(0, end_s)
    for f in metrics.faults:
        if f["action"] in FAULT_ACTIONS:
            for ax in (ax1, ax2, ax3):
                ax.axvline(f["at_ms"] / 1000, color="grey", linewidth=0.8, linestyle=":")
            ax1.annotate(f["action"], (f["at_ms"] / 1000, 1), xycoords=("data", "axes fraction"),
                         rotation=90, va="top", ha="right", fontsize="x-small", color="grey")
    fig.suptitle(title or metrics.sim.scenario.name)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
