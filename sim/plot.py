"""The timeline of a simulation run as a picture (``kcontroller simulate --plot FILE.png``).

Drawn from the run's time series (:func:`sim.series.series`, the columns ``--series`` writes), so each
figure has one definition. Three panels over simulated time: partitions offline, unavailable to
clients, under-replicated and under min ISR (the most during each interval); produce errors per
interval by error code; produce latency of acknowledged writes (p50, p99, max per interval, log
scale). Counts have integer ticks. The scenario's steps that change the cluster's health are marked
on every panel (faults grey, the others green) and named on the first by their target
(``kill_broker(broker=5)``); each controller elected after the first is marked with its broker and
epoch; unclean elections are red dashed lines, and each moment acknowledged writes were lost for good is a
red mark with how many (the five largest named). The headline under the title: acknowledged writes lost
(when any), unavailable and offline partition-seconds. matplotlib is imported here only, with its file-only Agg backend, so nothing else
pays for it.
"""
from __future__ import annotations

from sim.metrics import FAULT_ACTIONS, Metrics, fault_label
from sim.series import GAUGES, PRODUCE_ERRORS, series as make_series

_GAUGE_STYLE = {"offline": ("offline", "tab:red", "-"), "unavailable": ("unavailable to clients", "black", "-"),
                "under_replicated": ("under-replicated", "tab:orange", "-"),
                "under_min_isr": ("under min ISR", "tab:purple", "--")}
_LABEL_ARGS = ("broker", "controller", "isolate", "from", "groups", "dir")   # what names a fault's target


def plot_timeline(metrics: Metrics, path: str, title: str = "", series: dict | None = None,
                  summary: dict | None = None) -> None:
    """Draw the run into the PNG file ``path`` (``series`` and ``summary``: the run's, made here if not given)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    s = series if series is not None else make_series(metrics)
    t = s["time_s"] + [s["end_s"][-1]]

    def steps(column: str) -> list:
        values = s[column]
        return values + values[-1:]

    fig, (ax1, ax2, ax3) = plt.subplots(3, 1, sharex=True, figsize=(11, 8),
                                        gridspec_kw={"height_ratios": [3, 2, 2]})
    for name, _ in GAUGES:
        label, color, style = _GAUGE_STYLE[name]
        ax1.step(t, steps(name), where="post", label=label, color=color, linestyle=style,
                 linewidth=1.6 if name == "unavailable" else 1.2)
    ax1.set_ylabel("partitions")
    ax1.set_ylim(bottom=0)
    ax1.legend(loc="upper right", fontsize="small")

    codes = [c for c in list(PRODUCE_ERRORS) + sorted(k[len("errors_"):] for k in s if k.startswith("errors_")
                                                      and k[len("errors_"):] not in PRODUCE_ERRORS)
             if any(s[f"errors_{c}"])]
    widths = [b - a for a, b in zip(s["time_s"], s["end_s"])]
    bottom = [0] * len(s["time_s"])
    for code in codes:
        heights = s[f"errors_{code}"]
        ax2.bar(s["time_s"], heights, width=widths, align="edge", bottom=bottom, label=code)
        bottom = [b + h for b, h in zip(bottom, heights)]
    interval = widths[0] if widths else 1
    ax2.set_ylabel(f"produce errors / {interval:g}s")
    if codes:
        ax2.legend(loc="upper right", fontsize="small")

    drawn = False
    for column, label, color in (("latency_max_ms", "max", "tab:red"), ("latency_p99_ms", "p99", "tab:orange"),
                                 ("latency_p50_ms", "p50", "tab:green")):
        if any(v is not None for v in s[column]):
            # An interval without acknowledged writes is a gap in the line, not a ramp across it; a 0 ms latency
            # is drawn at 0.5 ms on the log axis.
            ys = [float("nan") if v is None else max(v, 0.5) for v in s[column]]
            ax3.plot([x + interval / 2 for x in s["time_s"]], ys, marker=".", markersize=3, linewidth=0.9,
                     label=label, color=color)
            drawn = True
    ax3.set_ylabel("produce latency (ms)")
    if drawn:
        ax3.set_yscale("log")
        ax3.legend(loc="upper right", fontsize="small")
    ax3.set_xlabel("simulated time (s)")
    ax3.set_xlim(0, s["end_s"][-1])
    for ax in (ax1, ax2):
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))

    for f in metrics.faults:
        fault = f["action"] in FAULT_ACTIONS
        x = f["at_ms"] / 1000
        for ax in (ax1, ax2, ax3):
            ax.axvline(x, color="grey" if fault else "tab:green", linewidth=0.8, linestyle=":")
        ax1.annotate(fault_label(f["action"], {k: v for k, v in f["args"].items() if k in _LABEL_ARGS and
                                               v is not False and not (k == "controller" and "broker" in f["args"])}),
                     (x, 0.98), xycoords=("data", "axes fraction"), rotation=90, va="top", ha="right",
                     fontsize="small", color="dimgrey" if fault else "darkgreen",
                     bbox={"boxstyle": "round,pad=0.15", "facecolor": "white", "edgecolor": "none", "alpha": 0.8})
    epoch = s["controller_epoch"][0]
    for x, cid, e in zip(s["time_s"], s["controller_id"], s["controller_epoch"]):
        if e != epoch:       # a controller elected after the first
            epoch = e
            for ax in (ax1, ax2, ax3):
                ax.axvline(x, color="tab:blue", linewidth=0.8, linestyle="--", alpha=0.6)
            ax1.annotate(f"controller {cid} (epoch {e})", (x, 0.02), xycoords=("data", "axes fraction"),
                         rotation=90, va="bottom", ha="left", fontsize="x-small", color="tab:blue")

    # Unclean elections, and the acknowledged writes lost (at the moment each loss became certain).
    for x, n in zip(s["time_s"], s.get("elections_unclean", ())):
        if n:
            for ax in (ax1, ax2, ax3):
                ax.axvline(x + interval / 2, color="tab:red", linewidth=1.0, linestyle="--", alpha=0.7)
            ax1.annotate(f"{n} unclean election{'s' if n > 1 else ''}", (x + interval / 2, 0.5),
                         xycoords=("data", "axes fraction"), rotation=90, va="center", ha="left",
                         fontsize="small", color="tab:red")
    summary = summary if summary is not None else metrics.summary()
    lost_at: dict[float, int] = {}
    for e in summary.get("loss_events", ()):
        lost_at[e["at_s"]] = lost_at.get(e["at_s"], 0) + e["lost"]
    top = sorted(lost_at.items(), key=lambda kv: -kv[1])[:5]
    for x, n in lost_at.items():
        ax1.plot([x], [1], marker="v", color="tab:red", markersize=9, transform=ax1.get_xaxis_transform(),
                 clip_on=False, zorder=5)
    for x, n in top:
        ax1.annotate(f"{n:,} acknowledged writes lost", (x, 1.0), xycoords=("data", "axes fraction"),
                     xytext=(6, -14), textcoords="offset points", fontsize="small", color="tab:red",
                     fontweight="bold")
    lost = summary["acknowledged_writes_lost"]
    headline = (f"{lost:,} acknowledged writes lost" if lost else "no acknowledged write lost") + (
        f"; unavailable to clients {summary['unavailable_partition_seconds']:,g} partition-s, offline "
        f"{summary['offline_partition_seconds']:,g} partition-s")
    fig.suptitle(title or metrics.sim.scenario.name, fontsize="large")
    fig.text(0.5, 0.935, headline, ha="center", fontsize="medium", color="tab:red" if lost else "black",
             fontweight="bold" if lost else "normal")
    fig.tight_layout(rect=(0, 0, 1, 0.93))
    fig.savefig(path, dpi=100)
    plt.close(fig)
