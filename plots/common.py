"""Shared pieces of the plotting scripts: read routelab's tidy CSV, save a
figure as PNG and PDF. Plots read CSV and draw; they never recompute."""
import argparse
import csv
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

plt.rcParams.update({"figure.dpi": 120, "savefig.bbox": "tight", "font.size": 10})

# The order tables and legends list schemes in; a scheme not here follows them by name.
SCHEME_ORDER = ["nope", "alibi", "fox", "rope", "rope_qkv", "random_qk", "random_qkv", "learned_qk", "learned_qkv",
                "learned_qkv_alibi", "random_qkv_alibi", "learned_qkv_forget", "householder_qk", "householder_qkv",
                "path_qk", "path_qkv", "path_qk_forget", "projected_qk", "projected_qkv"]


def scheme_rank(scheme):
    """A sort key putting schemes in SCHEME_ORDER, any other after them by name."""
    return (SCHEME_ORDER.index(scheme) if scheme in SCHEME_ORDER else len(SCHEME_ORDER), scheme)


def read_rows(*paths):
    """All rows of the given CSV files as dicts of strings."""
    rows = []
    for p in paths:
        with open(p, newline="") as f:
            rows.extend(csv.DictReader(f))
    return rows


def num(row, key):
    """A numeric cell, NaN when empty."""
    v = row.get(key, "")
    return float(v) if v not in ("", None) else float("nan")


def select(rows, **eq):
    """Rows whose columns equal the given values (as strings)."""
    return [r for r in rows if all(r.get(k) == str(v) for k, v in eq.items())]


def arguments(description):
    """The command line every plot script takes: CSV files and --out BASE."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("csv", nargs="+", help="routelab CSV output")
    ap.add_argument("--out", required=True, help="output path without extension (.png and .pdf are written)")
    return ap.parse_args()


def save(fig, base):
    """Writes BASE.png and BASE.pdf."""
    os.makedirs(os.path.dirname(base) or ".", exist_ok=True)
    fig.savefig(base + ".png")
    fig.savefig(base + ".pdf")
    plt.close(fig)


def fail(script, message):
    """One line on stderr naming the script, exit status 2."""
    print(f"{script}: {message}", file=sys.stderr)
    sys.exit(2)


def read_checked(path, columns, what, script, text=("scheme",)):
    """The rows of a CSV that must hold `columns`; numbers parsed, the
    columns in `text` kept as text. Anything else is one line and exit 2."""
    if not os.path.isfile(path):
        fail(script, f"{what} CSV {path} does not exist")
    try:
        rows = read_rows(path)
    except (OSError, UnicodeDecodeError) as e:
        fail(script, f"cannot read {what} CSV {path}: {e}")
    header = list(rows[0].keys()) if rows else []
    if not rows:
        with open(path, newline="") as f:
            header = f.readline().strip().split(",")
    missing = [c for c in columns if c not in header]
    if missing:
        fail(script, f"{path} lacks column(s) {', '.join(missing)}; is it a {what} CSV?")
    if not rows:
        fail(script, f"{what} CSV {path} has no rows")
    out = []
    for i, r in enumerate(rows, start=2):
        try:
            out.append((i, {c: (r[c] if c in text else num(r, c)) for c in columns}))
        except (ValueError, TypeError):
            fail(script, f"{path} line {i}: a non-numeric cell in {', '.join(c for c in columns if c not in text)}")
    return out


def swept_columns(path, known):
    """The columns of a routelab experiment CSV beyond `known`: the keys its
    [experiment.sweep] varied, in the CSV's order."""
    with open(path, newline="") as f:
        header = next(csv.reader(f), [])
    return [c for c in header if c not in known]


def label_variants(path, checked, known):
    """Adds 'variant' to each (line, row) of read_checked(path, ...): the
    scheme, then key=value for each swept column whose values differ among
    that scheme's rows (a run that does not read a key has an empty cell and
    shows none). Without swept columns the variant is the scheme."""
    keys = swept_columns(path, known)
    raw = read_rows(path)
    varying = {}
    for r in raw:
        for k in keys:
            varying.setdefault((r["scheme"], k), set()).add(r[k])
    for (_, row), r in zip(checked, raw):
        parts = [f"{k}={r[k]}" for k in keys if r[k] != "" and len(varying[(r["scheme"], k)]) > 1]
        row["variant"] = row["scheme"] + (" " + ", ".join(parts) if parts else "")
        row["swept"] = {k: r[k] for k in keys}
    return checked
