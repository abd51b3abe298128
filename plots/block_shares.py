"""Where random angles' models put their score, block by block, against how
much they degrade: for every probed run of the given schemes, the rotary
blocks are split by their law's step modulus beta_b (the probe's `beta`
column) into those mixed within the training length T (beta_b^T < 1/2),
those that shift past it (beta_b^T >= 1/2 > beta_b^(64T)) and those that
stay constant to 64T (beta_b^(64T) >= 1/2); each group's score share (the
probe's `score_share`, summed over the group's blocks, mean over layers)
is set beside the run's rise in bits per byte from 1x to 16x and to 64x
(from the experiment CSVs, matched to the run through their sidecars).
Prints a markdown table; draws the shifting blocks' share against the rise
to 64x. Reads CSV; the grouping is the only arithmetic."""
import argparse
import json
import math
import sys
from collections import defaultdict

from common import fail, plt, read_checked, save

SCRIPT = "block_shares.py"
EVAL_COLUMNS = ["scheme", "seed", "train_len", "eval_len", "bits_per_byte"]
ANGLE_COLUMNS = ["run", "scheme", "train_len", "layer", "block", "beta", "score_share"]

HALF = 0.5
LONGEST = 64  # the longest length, in multiples of T


def arguments():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--angles", nargs="+", required=True, help="probe angles CSVs (routelab probe --csv P.csv writes P-angles.csv)")
    ap.add_argument("--eval", nargs="+", required=True, help="experiment CSVs, each beside its E.csv.json")
    ap.add_argument("--schemes", default="random_qk,random_qkv", help="comma-separated schemes (default: random_qk,random_qkv)")
    ap.add_argument("--out", required=True, help="output path without extension (.png and .pdf are written)")
    return ap.parse_args()


def curves(eval_paths):
    """run directory -> {L/T: bits per byte}, from experiment CSVs and the run list of their sidecars."""
    out = {}
    for path in eval_paths:
        try:
            with open(path + ".json") as f:
                side = json.load(f)
        except (OSError, ValueError):
            fail(SCRIPT, f"cannot read {path}.json, the experiment's sidecar")
        if not isinstance(side.get("runs"), list):
            fail(SCRIPT, f"{path}.json lists no runs; is {path} an experiment's CSV?")
        swept = side.get("swept_keys", [])
        rows = [r for _, r in read_checked(path, EVAL_COLUMNS + swept, "experiment", SCRIPT, text=["scheme"] + swept)]
        for run in side["runs"]:
            def matches(r):
                return (r["scheme"] == run["scheme"] and r["seed"] == run["seed"]
                        and all(r.get(k, "") in ("", v) for k, v in run.get("swept", {}).items()))
            curve = {int(r["eval_len"]) // int(r["train_len"]): r["bits_per_byte"]
                     for r in filter(matches, rows) if r["eval_len"] % r["train_len"] == 0}
            if curve:
                out[run["run"]] = curve
    return out


def groups(betas, T):
    """Block indices mixed within T, shifting past it, constant to 64T."""
    mixed = [b for b, beta in betas.items() if beta ** T < HALF]
    constant = [b for b, beta in betas.items() if beta ** (LONGEST * T) >= HALF]
    shifting = [b for b in betas if b not in mixed and b not in constant]
    return mixed, shifting, constant


def setting_of(run, scheme):
    """What a run directory's name says beside its scheme and seed: random_qk-context=64-s1 -> context=64."""
    name = run.rstrip("/").split("/")[-1]
    name = name[len(scheme):] if name.startswith(scheme) else name
    return name.rsplit("-s", 1)[0].strip("-") or "default"


def span(blocks):
    return f"{min(blocks)}-{max(blocks)}" if len(blocks) > 1 else (str(blocks[0]) if blocks else "none")


def main():
    a = arguments()
    schemes = a.schemes.split(",")
    rises = curves(a.eval)
    runs = defaultdict(lambda: defaultdict(dict))  # run -> layer -> block -> (beta, share)
    meta = {}
    for path in a.angles:
        for _, r in read_checked(path, ANGLE_COLUMNS, "probe angles", SCRIPT, text=("run", "scheme")):
            if r["scheme"] not in schemes or math.isnan(r["score_share"]):
                continue
            runs[r["run"]][int(r["layer"])][int(r["block"])] = (r["beta"], r["score_share"])
            meta[r["run"]] = (r["scheme"], int(r["train_len"]))
    if not runs:
        fail(SCRIPT, f"no probed run of {a.schemes} with score shares in {', '.join(a.angles)}")
    table = []
    for run in sorted(runs, key=lambda r: (meta[r][1], r)):
        scheme, T = meta[run]
        layers = runs[run]
        betas = {b: beta for b, (beta, _) in next(iter(layers.values())).items()}
        mixed, shifting, constant = groups(betas, T)

        def share(blocks):
            return sum(sum(layer[b][1] for b in blocks) for layer in layers.values()) / len(layers)

        curve = rises.get(run, {})
        rise = {n: curve[n] - curve[1] if 1 in curve and n in curve else math.nan for n in (16, LONGEST)}
        table.append((run, T, span(shifting), share(shifting), len(shifting) / len(betas), share(mixed),
                      share(constant), rise[16], rise[LONGEST]))
    print("| run | T | shifting blocks | their score share | equal share | share of blocks mixed within T "
          "| of constant blocks | rise to 16x | rise to 64x |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|")
    for run, T, blocks, s, eq, m, c, r16, r64 in table:
        name = run.rstrip("/").split("/")[-1]
        print(f"| {name} | {T} | {blocks} | {s:.2f} | {eq:.2f} | {m:.2f} | {c:.2f} | {r16:+.3f} | {r64:+.3f} |")
    fig, ax = plt.subplots(figsize=(5.5, 4))
    for scheme, marker in zip(schemes, "os^vD"):
        pts = [(s - eq, r64) for run, _, _, s, eq, _, _, _, r64 in table if meta[run][0] == scheme and not math.isnan(r64)]
        if pts:
            ax.scatter(*zip(*pts), marker=marker, label=scheme)
    labelled = set()
    for run, _, _, s, eq, _, _, _, r64 in table:
        setting = setting_of(run, meta[run][0])
        if setting not in labelled and not math.isnan(r64):
            labelled.add(setting)
            ax.annotate(setting, (s - eq, r64), textcoords="offset points", xytext=(4, -10), fontsize=7)
    ax.axvline(0, color="grey", lw=0.8, ls="--")
    ax.set_xlabel("shifting blocks' score share minus an equal split")
    ax.set_ylabel(f"rise from 1x to {LONGEST}x (bits per byte)")
    ax.set_title("random angles: score on the blocks that shift past T, against the rise")
    ax.legend()
    save(fig, a.out)


if __name__ == "__main__":
    main()
