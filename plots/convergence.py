"""Whether the trained models had converged: each run's training loss by
block of 100 steps (the FILE-loss.csv every `routelab experiment` writes
beside FILE.csv), one panel per experiment and setting, one line per scheme
(mean over seeds), in bits per byte. A setting is what a run's swept values
change from its experiment's base configuration (FILE.csv.json), as in
`routelab claims`. Prints a markdown table: per experiment, setting and
scheme, the loss of the last block and its fall over the last third of
training (mean over seeds, and the seeds' range), so a model still falling
at the end shows as one. Reads CSV; the only arithmetic is nats to bits,
means and differences."""
import argparse
import json
import math
import os
from collections import defaultdict

from common import fail, plt, read_checked, save, scheme_rank, swept_columns

SCRIPT = "convergence.py"
COLUMNS = ["scheme", "seed", "step", "loss"]
PER_ROW = 4


def arguments():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("loss", nargs="+", help="experiment loss CSVs (FILE-loss.csv, each beside FILE.csv.json)")
    ap.add_argument("--out", required=True, help="output path without extension (.png and .pdf are written)")
    return ap.parse_args()


def base_values(side):
    """key -> value of the experiment's base configuration, every section flattened."""
    out = {}
    for section in side.get("config", {}).values():
        if isinstance(section, dict):
            out.update(section)
    return out


def same(cell, value):
    """A CSV cell against a sidecar value: numbers as numbers, else as text."""
    if isinstance(value, bool):
        return cell == ("true" if value else "false")
    try:
        return float(cell) == float(value)
    except (TypeError, ValueError):
        return str(cell) == str(value)


def setting_of(swept, base):
    """'k=v ...' for each swept value the run changes from the base (a corpus by its folder), or 'default'
    (every committed experiment's base is the default setting)."""
    parts = []
    for k, v in swept.items():
        if v == "" or (k in base and same(v, base[k])):
            continue
        parts.append(f"{k}={v.rstrip('/').split('/')[-1] if k == 'corpus' else v}")
    return " ".join(parts) or "default"


def curves(paths):
    """(experiment, setting, scheme) -> seed -> {step: bits per byte}."""
    out = defaultdict(lambda: defaultdict(dict))
    for path in paths:
        if not path.endswith("-loss.csv"):
            fail(SCRIPT, f"{path} is not an experiment's loss CSV (FILE-loss.csv)")
        side_path = path[: -len("-loss.csv")] + ".csv.json"
        try:
            with open(side_path) as f:
                side = json.load(f)
        except (OSError, ValueError):
            fail(SCRIPT, f"cannot read {side_path}, the sidecar of {path}'s experiment")
        base = base_values(side)
        keys = swept_columns(path, COLUMNS)
        # Folder and file: two experiments may share either (far-mass-control-cpu/extrapolation).
        experiment = os.path.join(os.path.basename(os.path.dirname(os.path.abspath(path))),
                                  os.path.basename(path)[: -len("-loss.csv")])
        for line, r in read_checked(path, COLUMNS + keys, "loss", SCRIPT, text=["scheme"] + keys):
            if r["loss"] != r["loss"] or r["loss"] <= 0:
                fail(SCRIPT, f"{path} line {line}: loss {r['loss']} is not a positive number")
            setting = setting_of({k: r[k] for k in keys}, base)
            out[(experiment, setting, r["scheme"])][int(r["seed"])][int(r["step"])] = r["loss"] / math.log(2)
    return out


def fall_over_last_third(curve):
    """(last block's loss, its fall from the block closest to 2/3 of training)."""
    steps = sorted(curve)
    last = steps[-1]
    third = min(steps, key=lambda s: (abs(s - 2 * last / 3), s))
    return curve[last], curve[third] - curve[last]


def table(data):
    print("training loss in bits per byte (training batches, mean of each 100-step block; mean over seeds, "
          "the seeds' range in brackets); fall: from the block at 2/3 of training to the last")
    print()
    print("| experiment | setting | scheme | seeds | steps | last block | fall over the last third |")
    print("|---|---|---|---:|---:|---:|---:|")
    for key in sorted(data, key=lambda k: (k[0], k[1] != "default", k[1], scheme_rank(k[2]))):
        experiment, setting, scheme = key
        ends = [fall_over_last_third(c) for c in data[key].values()]
        last = [e[0] for e in ends]
        fall = [e[1] for e in ends]
        steps = max(max(c) for c in data[key].values())

        def cell(xs):
            m = sum(xs) / len(xs)
            return f"{m:.3f}" if len(xs) == 1 else f"{m:.3f} [{min(xs):.3f}, {max(xs):.3f}]"

        print(f"| {experiment} | {setting} | {scheme} | {len(ends)} | {steps} | {cell(last)} | {cell(fall)} |")


def draw(data, out):
    panels = sorted({(e, s) for e, s, _ in data}, key=lambda p: (p[0], p[1] != "default", p[1]))
    rows = math.ceil(len(panels) / PER_ROW)
    fig, axes = plt.subplots(rows, min(PER_ROW, len(panels)), figsize=(4 * min(PER_ROW, len(panels)), 3 * rows),
                             squeeze=False)
    for ax, (experiment, setting) in zip(axes.flat, panels):
        lows = []
        for scheme in sorted({k[2] for k in data if k[:2] == (experiment, setting)}, key=scheme_rank):
            runs = data[(experiment, setting, scheme)]
            steps = sorted(set.intersection(*(set(c) for c in runs.values())))
            mean = [sum(c[s] for c in runs.values()) / len(runs) for s in steps]
            ax.plot(steps, mean, label=f"{scheme} ({len(runs)})", lw=1)
            lows.append(min(mean))
        # The tail is what convergence is judged by; the first blocks (about 4.7 bits) would flatten it.
        ax.set_ylim(min(lows) - 0.05, min(lows) + 0.8)
        ax.set_title(f"{experiment}: {setting}", fontsize=9)
        ax.set_xlabel("step")
        ax.legend(fontsize=6)
    for ax in axes.flat[len(panels):]:
        ax.axis("off")
    for ax in axes[:, 0]:
        ax.set_ylabel("training bits per byte")
    fig.tight_layout()
    save(fig, out)


def main():
    a = arguments()
    data = curves(a.loss)
    if not data:
        fail(SCRIPT, "no runs in the loss CSVs")
    table(data)
    draw(data, a.out)


if __name__ == "__main__":
    main()
