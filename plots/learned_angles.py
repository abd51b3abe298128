"""Learned accumulated angles against the theory's prediction (issue 14).

Reads a swept `routelab experiment` CSV (with its .json sidecar, which names
each run's directory) and `routelab probe` over those runs (-angles.csv and
-phases.csv). For every run: the rise of bits per byte from 1x to 16x and to
64x the training length, against the layers' median mixing window (per layer
the lower median over blocks of w_eps(beta_b), B.2; then the lower median over
layers) divided by the training length, after training (probe) and at
initialisation (the init's closed form). The theory (Theorem 1, B.2) says a
model extrapolates when its windows fit inside the training length, since
then the near/far split it learned is the one it meets at any length.

Panels: (a) bits per byte against length for the learned and projected
variants (mean over seeds), (b) rise to 16x and (c) to 64x against the window
ratio, every run a point coloured by its start, (d) Theorem 2's independence
across blocks: the variance ratio Var(sum_b cos Theta_b) / sum_b Var(cos
Theta_b) against the route length n (1 for independent blocks), table against
projected angles. Tables to stdout: one row per run (predicted, observed,
agree) and the phase statistics by start. Recomputes nothing but medians,
means over seeds and differences of the CSVs' numbers."""
import argparse
import json
import math
import sys

import numpy as np

from common import fail as common_fail
from common import plt, read_rows, save

SCRIPT = "learned_angles.py"
# "Stays near its 1x value": a rise of at most this many bits per byte.
NEAR = 0.1


def fail(message):
    common_fail(SCRIPT, message)


def arguments():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", help="results CSV of a swept routelab experiment (its .json sidecar beside it)")
    ap.add_argument("--angles", required=True, help="routelab probe -angles CSV over the experiment's runs")
    ap.add_argument("--phases", required=True, help="routelab probe -phases CSV over the same runs")
    ap.add_argument("--out", required=True, help="output path without extension (.png and .pdf are written)")
    ap.add_argument("--near", type=float, default=NEAR,
                    help=f"a rise of at most this many bits per byte counts as extrapolating (default {NEAR})")
    return ap.parse_args()


def number(text, where):
    try:
        return float(text)
    except ValueError:
        fail(f"{where}: '{text}' is not a number")


def window(text, where):
    return math.inf if text == "inf" else number(text, where)


def lower_median(values):
    v = sorted(values)
    return v[(len(v) - 1) // 2]


def start_of(run):
    """A run's start, as the legend names it."""
    s = run["swept"]
    scheme = run["scheme"]
    if scheme.startswith("projected"):
        return f"projected, sigma {s.get('learned_sigma') or '1'}"
    init = s.get("learned_init") or "normal"
    label = f"normal, sigma {s.get('learned_sigma') or '1'}" if init == "normal" else init
    if s.get("learned_shared") == "true":
        label += ", one table"
    if s.get("context") and s["context"] != "128":
        label += f", T = {s['context']}"
    return label


def load_runs(csv_path):
    try:
        side = json.load(open(csv_path + ".json"))
    except (OSError, ValueError) as e:
        fail(f"cannot read the experiment sidecar {csv_path}.json: {e}")
    if "runs" not in side:
        fail(f"{csv_path}.json is not a routelab experiment sidecar (no 'runs')")
    keys = side.get("swept_keys", [])
    rows = read_rows(csv_path)
    if not rows:
        fail(f"{csv_path} has no rows")
    runs = []
    for r in side["runs"]:
        # The study is of learned and projected angles; reference schemes are not points.
        if not r["scheme"].startswith(("learned_", "projected_")):
            continue
        swept = {k: r["swept"].get(k, "") for k in keys}
        mine = [x for x in rows if x["scheme"] == r["scheme"] and x["seed"] == str(r["seed"])
                and all(x.get(k, "") == v for k, v in swept.items())]
        bpb = {}
        for x in mine:
            ratio = number(x["eval_len"], csv_path) / number(x["train_len"], csv_path)
            bpb[ratio] = number(x["bits_per_byte"], csv_path)
        if 1.0 not in bpb:
            fail(f"{csv_path}: no 1x row for run {r['run']}")
        runs.append({"run": r["run"], "scheme": r["scheme"], "seed": r["seed"], "swept": swept, "bpb": bpb,
                     "train_len": number(mine[0]["train_len"], csv_path)})
    for run in runs:
        run["start"] = start_of(run)
    return runs


def attach_windows(runs, angles_path):
    rows = read_rows(angles_path)
    for c in ("run", "layer", "layer_window_median", "layer_window_median_init"):
        if rows and c not in rows[0]:
            fail(f"{angles_path} lacks column {c}; is it a routelab probe -angles CSV?")
    by_run = {}
    for r in rows:
        by_run.setdefault(r["run"], {})[int(r["layer"])] = (window(r["layer_window_median"], angles_path),
                                                            window(r["layer_window_median_init"], angles_path))
    for run in runs:
        layers = by_run.get(run["run"])
        if not layers:
            fail(f"{angles_path} has no rows for run {run['run']}; probe every run of the experiment")
        run["window"] = lower_median([w for w, _ in layers.values()])
        run["window_init"] = lower_median([w for _, w in layers.values()])


def load_phases(path):
    rows = read_rows(path)
    for c in ("run", "layer", "distance", "variance_ratio", "mean_abs_corr", "train_len"):
        if rows and c not in rows[0]:
            fail(f"{path} lacks column {c}; is it a routelab probe -phases CSV?")
    return rows


COLOURS = {"uniform": "black", "rope": "0.5"}


def colour_of(start):
    if start.startswith("normal, sigma ") and "," not in start[len("normal, sigma "):]:
        sigma = float(start.split(" ")[-1])
        return plt.get_cmap("viridis")(min(1.0, max(0.0, (math.log10(sigma) + 1.6) / 2.2)))
    if start.startswith("projected"):
        return "tab:red"
    if "one table" in start:
        return "tab:orange"
    if "T = " in start:
        return "tab:purple"
    return COLOURS.get(start, "tab:gray")


def marker_of(run):
    return "o" if run["scheme"].endswith("_qkv") else "s"


def rise(run, ratio):
    return run["bpb"].get(ratio, math.nan) - run["bpb"][1.0]


def main():
    args = arguments()
    runs = load_runs(args.csv)
    attach_windows(runs, args.angles)
    phases = load_phases(args.phases)
    starts = sorted({r["start"] for r in runs})

    fig, axes = plt.subplots(2, 2, figsize=(11.5, 8.6))
    (ax_len, ax16), (ax64, ax_ph) = axes

    # (a) bits per byte against length, mean over seeds, one line per variant.
    variants = {}
    for r in runs:
        variants.setdefault((r["scheme"], r["start"]), []).append(r)
    for (scheme, start), rs in sorted(variants.items()):
        ratios = sorted(set.intersection(*[set(r["bpb"]) for r in rs]))
        mean = [np.mean([r["bpb"][x] for r in rs]) for x in ratios]
        ax_len.plot(ratios, mean, color=colour_of(start), ls="-" if scheme.endswith("_qkv") else "--",
                    marker=marker_of(rs[0]), ms=3, lw=1.2, mfc="white" if not scheme.endswith("_qkv") else None,
                    label=f"{scheme}: {start} ({len(rs)} seed{'s' if len(rs) > 1 else ''})")
    ax_len.set_xscale("log", base=2)
    ticks = sorted({x for r in runs for x in r["bpb"]})
    ax_len.set_xticks(ticks)
    ax_len.set_xticklabels([f"{x:g}x" for x in ticks])
    ax_len.minorticks_off()
    ax_len.axvline(1, color="0.3", ls=":", lw=1)
    ax_len.set_xlabel("evaluation length / training length")
    ax_len.set_ylabel("bits per byte (validation)")
    ax_len.set_title("(a) bits per byte against length, mean over seeds", fontsize=10)
    ax_len.grid(True, alpha=0.3)
    ax_len.legend(fontsize=5.5, ncol=1, loc="upper left")

    # (b), (c) the rise against the window ratio; never-mixing windows at the right edge.
    finite = [r["window"] / r["train_len"] for r in runs if math.isfinite(r["window"])]
    finite += [r["window_init"] / r["train_len"] for r in runs if math.isfinite(r["window_init"])]
    edge = 2 * max(finite + [1.0])
    for ax, ratio, tag in ((ax16, 16.0, "(b)"), (ax64, 64.0, "(c)")):
        for r in runs:
            x = r["window"] / r["train_len"] if math.isfinite(r["window"]) else edge
            x0 = r["window_init"] / r["train_len"] if math.isfinite(r["window_init"]) else edge
            y = rise(r, ratio)
            ax.plot([x0, x], [y, y], color=colour_of(r["start"]), lw=0.6, alpha=0.4)
            ax.plot(x, y, marker=marker_of(r), color=colour_of(r["start"]), ms=5, ls="none",
                    mec="black", mew=0.4)
        ax.axvline(1, color="0.3", ls=":", lw=1)
        ax.axhline(args.near, color="0.3", ls="--", lw=0.8)
        ax.text(1, 0.98, " window = training length", transform=ax.get_xaxis_transform(), fontsize=7, va="top")
        ax.set_xscale("log")
        ax.set_xlabel("median mixing window / training length (eps 0.05; right edge: never)")
        ax.set_ylabel(f"bits per byte at {ratio:g}x minus at 1x")
        ax.set_title(f"{tag} rise to {ratio:g}x against the window after training\n(thin line: from the window "
                     f"at initialisation; dashed: rise {args.near:g})", fontsize=9)
        ax.grid(True, alpha=0.3)
    handles = [plt.Line2D([], [], color=colour_of(s), marker="o", ls="none", label=s) for s in starts]
    handles += [plt.Line2D([], [], color="0.4", marker="o", ls="none", label="QKV"),
                plt.Line2D([], [], color="0.4", marker="s", ls="none", label="QK")]
    ax16.legend(handles=handles, fontsize=6, loc="upper left")

    # (d) the variance ratio against the route length, by start (mean over runs and layers).
    by_run = {r["run"]: r for r in runs}
    groups, corr = {}, {}
    for p in phases:
        run = by_run.get(p["run"])
        if run is None or p["variance_ratio"] == "":
            continue
        n = number(p["distance"], args.phases) / number(p["train_len"], args.phases)
        groups.setdefault(run["start"], {}).setdefault(n, []).append(number(p["variance_ratio"], args.phases))
        if p["mean_abs_corr"] != "":
            corr.setdefault(run["start"], {}).setdefault(n, []).append(number(p["mean_abs_corr"], args.phases))
    for start, by_n in sorted(groups.items()):
        ns = sorted(by_n)
        ax_ph.plot(ns, [np.mean(by_n[n]) for n in ns], color=colour_of(start), marker="o", ms=3, label=start)
    ax_ph.axhline(1, color="0.3", ls=":", lw=1)
    ax_ph.set_xscale("log", base=2)
    spread = [v for g in groups.values() for n in g for v in g[n]]
    if spread and max(spread) / max(min(spread), 1e-9) > 3:
        ax_ph.set_yscale("log")
    ax_ph.set_xlabel("route length n / training length")
    ax_ph.set_ylabel(r"Var$(\sum_b \cos\Theta_b)$ / $\sum_b$ Var$(\cos\Theta_b)$")
    ax_ph.set_title("(d) dependence across blocks (1: independent, as Theorem 2 assumes)\n"
                    "mean over layers and runs", fontsize=9)
    ax_ph.grid(True, alpha=0.3)
    ax_ph.legend(fontsize=6)
    fig.tight_layout()
    save(fig, args.out)

    def wtext(w, T):
        return "never" if math.isinf(w) else f"{w / T:.3g}"

    print(f"every run: the layers' median mixing window over the training length (eps 0.05) at initialisation and "
          f"after training; predicted to extrapolate when the trained window fits (<= 1); observed to when the "
          f"rise to 16x is at most {args.near:g} bits per byte")
    print("| run | scheme | start | seed | window/T init | window/T trained | 1x | rise 16x | rise 64x | "
          "predicted | observed | agree |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---|---|---|")
    agree = 0
    judged = 0
    for r in runs:
        T = r["train_len"]
        predicted = r["window"] <= T
        if math.isnan(rise(r, 16.0)):
            observed = None
        else:
            observed = rise(r, 16.0) <= args.near
            judged += 1
            agree += predicted == observed
        yes = {True: "yes", False: "no", None: "–"}
        print(f"| {r['run'].split('/')[-1]} | {r['scheme']} | {r['start']} | {r['seed']} | "
              f"{wtext(r['window_init'], T)} | {wtext(r['window'], T)} | {r['bpb'][1.0]:.3f} | "
              f"{rise(r, 16.0):+.3f} | {rise(r, 64.0):+.3f} | {yes[predicted]} | {yes[observed]} | "
              f"{'–' if observed is None else 'yes' if predicted == observed else 'NO'} |")
    print(f"\nthe prediction agrees with {agree} of the {judged} runs evaluated at 16x")
    # How much the verdict hangs on the threshold: the thresholds at which
    # the agreement is largest (it changes only at the observed rises).
    pairs = [(rise(r, 16.0), r["window"] <= r["train_len"]) for r in runs if not math.isnan(rise(r, 16.0))]
    if pairs:
        cuts = sorted({x for x, _ in pairs})
        best, lo, hi = -1, None, None
        for k, c in enumerate(cuts):
            n = sum(p == (x <= c) for x, p in pairs)
            nxt = cuts[k + 1] if k + 1 < len(cuts) else math.inf
            if n > best:
                best, lo, hi = n, c, nxt
        print(f"at most {best} of {len(pairs)} agree, for any threshold from {lo:.3f} up to (not including) "
              f"{hi:.3f} bits per byte")

    print("\nblock dependence by start (mean over runs and layers): variance ratio (1 = independent) and mean "
          "|corr| between blocks, at each route length n / T")
    ns = sorted({n for g in groups.values() for n in g})
    print("| start | " + " | ".join(f"ratio n={n:g}T" for n in ns) + " | "
          + " | ".join(f"abs corr n={n:g}T" for n in ns) + " |")
    print("|---|" + "---:|" * (2 * len(ns)))
    for start, by_n in sorted(groups.items()):
        c = corr.get(start, {})
        print(f"| {start} | " + " | ".join(f"{np.mean(by_n[n]):.2f}" if n in by_n else "–" for n in ns) + " | "
              + " | ".join(f"{np.mean(c[n]):.3f}" if n in c else "–" for n in ns) + " |")


if __name__ == "__main__":
    main()
