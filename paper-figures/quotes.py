#!/usr/bin/env python3
"""Every number README.md and docs/results.md quote from a committed CSV.

Each quote has a name and a recipe here; a document holds it between
`<!-- q:NAME -->` and `<!-- /q -->` on one line, and the tables named here
between `<!-- claims:begin NAME -->` and `<!-- claims:end -->`, so no number
that comes from the data is typed by hand.

  quotes.py write --claims C --readings R DOC...   rewrite every quote of each DOC in place
  quotes.py check --claims C --readings R DOC...   exit 1 when a quote is not what the CSVs
                                                   give, or a number that looks like data
                                                   stands outside a quote or a generated block
  quotes.py tables --claims C --readings R DIR     write the tables, DIR/claims-NAME.md
  quotes.py plant DOC                              DOC with its first quote's first digit
                                                   changed, on stdout (the check must catch it)
  quotes.py names                                  list the recipes

C and R are `routelab claims --csv` and `--readings` over every committed
experiment CSV (paper-figures/claims-tables.sh, make_tables; `--claims` and
`--task-readings` also take the task suites'); every other
input is a committed CSV named in its recipe. A NAME is a recipe's name, or
a family and its arguments separated by `|`: `claim|qkv_rises_less|learned
64x|default` is the mean margin and its interval there. Standard library
only, so the check runs wherever python3 does. Run from the repository root.
"""
import argparse
import csv
import math
import os
import re
import statistics
import sys

SCRIPT = "quotes.py"
QUOTE = re.compile(r"<!-- q:(.*?) -->(.*?)<!-- /q -->")


def fail(message, status=2):
    print(f"{SCRIPT}: {message}", file=sys.stderr)
    sys.exit(status)


# ---------------------------------------------------------------------------
# Formatting

MINUS = "\u2212"


def f3(x):
    return f"{x:.3f}".replace("-", MINUS)


def f2(x):
    return f"{x:.2f}".replace("-", MINUS)


def s3(x):
    return f"{x:+.3f}".replace("-", MINUS)


def s2(x):
    return f"{x:+.2f}".replace("-", MINUS)


def span(values, fmt=f3):
    """min-max of the values ("0.89-2.26"; "a to b" where one is negative; one value when equal)."""
    values = list(values)
    if not values:
        fail("a range over no values: the quote's filter matches no rows")
    lo, hi = fmt(min(values)), fmt(max(values))
    if lo == hi:
        return lo
    return f"{lo} to {hi}" if MINUS in lo + hi or lo.startswith("+") else f"{lo}-{hi}"


def listed(values, fmt=f3):
    """Values in order, "a, b and c"."""
    text = [fmt(v) for v in values]
    return text[0] if len(text) == 1 else ", ".join(text[:-1]) + " and " + text[-1]


def mean(values):
    return statistics.fmean(values)


# ---------------------------------------------------------------------------
# Inputs

def read(path):
    if not os.path.isfile(path):
        fail(f"{path} does not exist (run from the repository root)")
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


class Readings:
    """`routelab claims --readings`: bits per byte by (setting, scheme, seed, ratio), each run's window over T."""

    def __init__(self, path):
        self.bpb, self.window, self.order = {}, {}, []
        for r in read(path):
            key = (r["setting"], r["scheme"], int(r["seed"]))
            self.bpb[key + (int(r["ratio"]),)] = float(r["bits_per_byte"])
            if r["window_over_t"]:
                self.window[key] = float(r["window_over_t"])
            if r["setting"] not in self.order:
                self.order.append(r["setting"])

    def seeds(self, setting, scheme):
        return sorted({k[2] for k in self.bpb if k[0] == setting and k[1] == scheme})

    def schemes(self, setting):
        return list(dict.fromkeys(k[1] for k in self.bpb if k[0] == setting))

    def ratios(self, setting, scheme):
        return sorted({k[3] for k in self.bpb if k[0] == setting and k[1] == scheme})

    def at(self, setting, scheme, seed, ratio):
        key = (setting, scheme, seed, ratio)
        if key not in self.bpb:
            fail(f"no reading of {scheme} seed {seed} at {ratio}x ({setting})")
        return self.bpb[key]

    def rise(self, setting, scheme, seed, to, frm=1):
        return self.at(setting, scheme, seed, to) - self.at(setting, scheme, seed, frm)

    def over_seeds(self, setting, scheme, f):
        """f(seed) for every seed of scheme at setting."""
        seeds = self.seeds(setting, scheme)
        if not seeds:
            fail(f"no runs of {scheme} at {setting}")
        return [f(seed) for seed in seeds]


class Claims:
    """`routelab claims --csv`: one row per (claim, subject, setting)."""

    def __init__(self, paths):
        self.rows = {(r["claim"], r["subject"], r["setting"]): r for path in paths for r in read(path)}

    def row(self, claim, subject, setting):
        key = (claim, subject, setting)
        if key not in self.rows:
            fail(f"no verdict for {claim} / {subject} / {setting}")
        return self.rows[key]

    def margins(self, claim, subject, setting):
        return [float(m) for m in self.row(claim, subject, setting)["margins"].split(";")]


class Data:
    """The inputs, each read once."""

    def __init__(self, claims, readings, task_readings=()):
        self.claims = Claims(claims)
        self.readings = Readings(readings)
        self.task_readings = [r for path in task_readings for r in read(path)]
        self._csv = {}

    def csv(self, path):
        if path not in self._csv:
            self._csv[path] = read(path)
        return self._csv[path]


# ---------------------------------------------------------------------------
# Recipes: QUOTES[name](data) and FAMILIES[name](data, *args) give the text.

QUOTES, FAMILIES, TABLES = {}, {}, {}


def quote(name):
    def register(f):
        QUOTES[name] = f
        return f
    return register


def family(name):
    def register(f):
        FAMILIES[name] = f
        return f
    return register


def table(name):
    def register(f):
        TABLES[name] = f
        return f
    return register


def value(data, name):
    if name in QUOTES:
        return QUOTES[name](data)
    head, *args = [a.strip() for a in name.split("|")]
    if head in FAMILIES:
        try:
            return FAMILIES[head](data, *args)
        except TypeError as e:
            fail(f"quote '{name}': {e}")
    fail(f"no recipe for the quote '{name}' (quotes.py names lists them)")


# -- from the claims CSV

def power_text(n):
    return "more than 1000" if n == "1001" else n


# Fields of one verdict (a row of the claims CSV), each a family named
# `claim...|CLAIM|SUBJECT|SETTING`: (what it gives, how).
CLAIM_FIELDS = {
    "claim": ("the mean margin and its 95% interval: \"+0.840 [+0.279, +1.400]\"",
              lambda r: f"{s3(float(r['margin_mean']))} [{s3(float(r['margin_lo']))}, {s3(float(r['margin_hi']))}]"),
    "claim-mean": ("the mean margin", lambda r: s3(float(r["margin_mean"]))),
    "claim-seeds": ("each seed's margin in seed order: \"+1.094, +0.663 and +0.761\"",
                    lambda r: listed([float(m) for m in r["margins"].split(";")], s3)),
    "claim-agree": ("the seeds that agree with the mean's sign: \"3 of 3\"", lambda r: f"{r['agree']} of {r['n']}"),
    "claim-verdict": ("yes, no, marginal or reading", lambda r: r["verdict"]),
    "claim-power": ("the seeds a t test would need for 80% power at the spread measured",
                    lambda r: power_text(r["seeds_for_power"])),
}
for _name, (_what, _field) in CLAIM_FIELDS.items():
    def _family(d, claim, subject, setting, field=_field):
        return field(d.claims.row(claim, subject, setting))
    _family.__doc__ = f"One verdict's field: {_what}."
    FAMILIES[_name] = _family


@family("claim-side")
def claim_side(d, claim, subject, setting, name):
    """A side reading over the seeds: a length's range ("8x", "4x-8x") or the mean in bits."""
    r = d.claims.row(claim, subject, setting)
    for part in r["side"].split("|"):
        key, _, values = part.partition("=")
        if key != name:
            continue
        xs = [float(v) for v in values.split(";") if v]
        if name == "crossover":
            lo, hi = min(xs), max(xs)
            return f"{lo:g}x" if lo == hi else f"{lo:g}x-{hi:g}x"
        return span(xs) if len(xs) > 1 else f3(xs[0])
    fail(f"{claim} / {subject} / {setting} has no side reading {name}")


@family("claim-count")
def claim_count(d, claim, setting, verdict):
    """How many subjects of a claim get a verdict at a setting."""
    return str(sum(1 for (c, _, s), r in d.claims.rows.items() if c == claim and s == setting and r["verdict"] == verdict))


@family("claim-subjects")
def claim_subjects(d, claim, setting):
    """How many subjects a claim judges at a setting."""
    return str(sum(1 for (c, _, s) in d.claims.rows if c == claim and s == setting))


# -- from the readings (bits per byte by setting, scheme, seed, length)

def schemes_arg(text):
    return [s for s in text.split(",") if s]


def settings_arg(d, text):
    return d.readings.order if text == "*" else [s for s in text.split(";") if s]


@family("bpb")
def bpb_mean(d, setting, scheme, ratio):
    """The mean over seeds of bits per byte at a length."""
    return f3(mean(d.readings.over_seeds(setting, scheme, lambda s: d.readings.at(setting, scheme, s, int(ratio)))))


@family("bpb-seeds")
def bpb_seeds(d, setting, scheme, ratio):
    """Bits per byte at a length, seed by seed."""
    return listed(d.readings.over_seeds(setting, scheme, lambda s: d.readings.at(setting, scheme, s, int(ratio))))


@family("bpb-span")
def bpb_span(d, setting, schemes, ratio):
    """The range over seeds (and schemes) of bits per byte at a length."""
    xs = [d.readings.at(setting, sc, s, int(ratio)) for sc in schemes_arg(schemes) for s in d.readings.seeds(setting, sc)]
    return span(xs)


@family("rise")
def rise_span(d, settings, schemes, to, frm="1"):
    """The range of the rise from `frm`x to `to`x over seeds, schemes and settings (`*`: every setting)."""
    xs = [d.readings.rise(st, sc, s, int(to), int(frm))
          for st in settings_arg(d, settings) for sc in schemes_arg(schemes) for s in d.readings.seeds(st, sc)]
    if not xs:
        fail(f"no runs of {schemes} at {settings}")
    return span(xs)


@family("rise-mean")
def rise_mean(d, setting, scheme, to, frm="1"):
    """The mean over seeds of the rise from `frm`x to `to`x."""
    return f3(mean(d.readings.over_seeds(setting, scheme, lambda s: d.readings.rise(setting, scheme, s, int(to), int(frm)))))


@family("rise-seeds")
def rise_seeds(d, setting, scheme, to, frm="1"):
    """The rise from `frm`x to `to`x, seed by seed."""
    return listed(d.readings.over_seeds(setting, scheme, lambda s: d.readings.rise(setting, scheme, s, int(to), int(frm))))


@family("seeds")
def seed_count(d, setting, scheme):
    """How many seeds a scheme has at a setting."""
    return str(len(d.readings.seeds(setting, scheme)))


@family("window")
def window_span(d, setting, schemes, seeds="*"):
    """The runs' windows over T ("1.65 T" or "1.4-1.9 T"), two significant digits."""
    xs = [d.readings.window[(setting, sc, s)] for sc in schemes_arg(schemes) for s in d.readings.seeds(setting, sc)
          if (setting, sc, s) in d.readings.window and (seeds == "*" or str(s) in seeds.split(","))]
    if not xs:
        fail(f"no windows of {schemes} at {setting}")
    return window_text(xs)


@family("window-seeds")
def window_seeds(d, setting, scheme):
    """Each seed's window over T, in seed order: "1.65, 1.85 and 1.78 T"."""
    xs = [d.readings.window[(setting, scheme, s)] for s in d.readings.seeds(setting, scheme)
          if (setting, scheme, s) in d.readings.window]
    return listed(xs, lambda x: f"{x:.3g}") + " T"


def sd(xs):
    return statistics.stdev(xs) if len(xs) > 1 else 0.0


@family("sd-span")
def sd_span(d, setting, schemes, ratio):
    """The range over schemes of the seeds' s.d. at a length."""
    return span([sd(d.readings.over_seeds(setting, sc, lambda s: d.readings.at(setting, sc, s, int(ratio))))
                 for sc in schemes_arg(schemes)])


@family("sd-max")
def sd_max(d, setting, schemes, ratio):
    """The largest seed s.d. over schemes at a length."""
    return f2(max(sd(d.readings.over_seeds(setting, sc, lambda s: d.readings.at(setting, sc, s, int(ratio))))
                  for sc in schemes_arg(schemes)))


@family("level-gap")
def level_gap(d, setting, a, b):
    """The range over seeds and lengths of a minus b, in the seeds both have."""
    seeds = sorted(set(d.readings.seeds(setting, a)) & set(d.readings.seeds(setting, b)))
    return span([d.readings.at(setting, a, s, r) - d.readings.at(setting, b, s, r)
                 for s in seeds for r in d.readings.ratios(setting, a)], f2)


@family("bpb-gap")
def bpb_gap(d, setting, a, b, ratio):
    """The mean over seeds of a minus that of b at a length."""
    return f2(float(bpb_mean(d, setting, a, ratio).replace(MINUS, "-")) -
              float(bpb_mean(d, setting, b, ratio).replace(MINUS, "-")))


@family("paired-span")
def paired_span(d, setting, a, b):
    """a minus b, seed by seed and length by length: its range, signed."""
    seeds = sorted(set(d.readings.seeds(setting, a)) & set(d.readings.seeds(setting, b)))
    return span([d.readings.at(setting, a, s, r) - d.readings.at(setting, b, s, r)
                 for s in seeds for r in d.readings.ratios(setting, a)], s3)


# The 97.5% point of Student's t by degrees of freedom (its standard table),
# for the 95% intervals of paired differences below.
T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228}


@family("paired")
def paired(d, a, b, scheme, ratio):
    """Setting a minus setting b for one scheme at a length, seed by seed: the mean and its 95% t interval."""
    seeds = sorted(set(d.readings.seeds(a, scheme)) & set(d.readings.seeds(b, scheme)))
    xs = [d.readings.at(a, scheme, s, int(ratio)) - d.readings.at(b, scheme, s, int(ratio)) for s in seeds]
    if len(xs) - 1 not in T975:
        fail(f"paired {a} / {b} / {scheme}: {len(xs)} seeds in common; the t table holds 2 to 11")
    m, h = mean(xs), T975[len(xs) - 1] * sd(xs) / math.sqrt(len(xs))
    return f"{s3(m)} [{s3(m - h)}, {s3(m + h)}]"


@family("lowest-everywhere")
def lowest_everywhere(d, setting, scheme):
    """In how many of its seeds a scheme is below every other scheme run with that seed, at every length."""
    seeds = d.readings.seeds(setting, scheme)
    lowest = 0
    for s in seeds:
        others = [o for o in d.readings.schemes(setting) if o != scheme and s in d.readings.seeds(setting, o)]
        lowest += all(d.readings.at(setting, scheme, s, r) < d.readings.at(setting, o, s, r)
                      for o in others for r in d.readings.ratios(setting, scheme))
    return f"{lowest} of its {len(seeds)} seeds"


# -- the seed-spread experiment: seed s's weights and angles, data_seed b's batches

def seed_spread_rise(d, scheme, seed, batches, to=64):
    rows = d.csv("paper-figures/seed-spread-cpu/seed-spread.csv")
    want = "0" if batches == seed else batches
    at = {int(r["eval_len"]) // int(r["train_len"]): float(r["bits_per_byte"]) for r in rows
          if r["scheme"] == scheme and r["seed"] == seed and r["data_seed"] == want}
    if 1 not in at or to not in at:
        fail(f"seed-spread: no {scheme} with weights {seed}, batches {batches}")
    return at[to] - at[1], at[1]


@family("seed-spread")
def seed_spread(d, scheme, seed, batches):
    """The rise 1x to 64x of one cell of seed-spread-cpu (weights and angles of `seed`, batches of `batches`)."""
    return f2(seed_spread_rise(d, scheme, seed, batches)[0])


@quote("seed-spread-1x")
def seed_spread_1x(d):
    """The range of seed-spread-cpu's 1x readings over its cells."""
    return span([seed_spread_rise(d, sc, w, b)[1] for sc in ("random_qk", "random_qkv")
                 for w, b in (("1", "1"), ("1", "3"), ("3", "1"), ("3", "3"))])


# -- retrieval (paper-figures/robustness-cpu/retrieval-passkey.csv)

RETRIEVAL = "paper-figures/robustness-cpu/retrieval-passkey.csv"
CHANCE_BITS = math.log2(10)
FLAT = ("alibi", "learned_qkv_forget")


def passkey_runs(d, path, fraction="0.25", metric="key_bits_per_byte", ratio=1):
    """(scheme, seed) -> the metric's mean over depths at a length, runs at one passkey fraction."""
    cells = {}
    for r in d.csv(path):
        if r.get("passkey_fraction", fraction) != fraction or int(r["eval_len"]) != ratio * int(r["train_len"]):
            continue
        cells.setdefault((r["scheme"], r["seed"]), []).append(float(r[metric]))
    return {k: mean(v) for k, v in cells.items()}


@quote("retrieval-runs")
def retrieval_runs(d):
    """How many runs trained with a quarter of the windows passkeys."""
    return str(len(passkey_runs(d, RETRIEVAL)))


@quote("key-bits-1x")
def key_bits_1x(d):
    """The range over those runs of the bits per key digit at 1x (mean over depths)."""
    return span(passkey_runs(d, RETRIEVAL).values())


@quote("key-bits-1x-off-chance")
def key_bits_off_chance(d):
    """The farthest any of those runs is from log2 10 bits per key digit at 1x."""
    return f2(max(abs(x - CHANCE_BITS) for x in passkey_runs(d, RETRIEVAL).values()))


@quote("key-bits-16x-rotary")
def key_bits_16x_rotary(d):
    """The range at 16x over the rotation-only runs."""
    return span(v for (sc, _), v in passkey_runs(d, RETRIEVAL, ratio=16).items() if sc not in FLAT)


@quote("key-bits-flat")
def key_bits_flat(d):
    """The range over every length of ALiBi's and the forget gate's runs."""
    return span(v for ratio in (1, 2, 4, 8, 16) for (sc, _), v in passkey_runs(d, RETRIEVAL, ratio=ratio).items()
                if sc in FLAT)


@quote("digit-accuracy-1x")
def digit_accuracy_1x(d):
    """The range over those runs of digit accuracy at 1x (mean over depths)."""
    return span(passkey_runs(d, RETRIEVAL, metric="digit_accuracy").values())


@quote("digit-accuracy-1x-above")
def digit_accuracy_1x_above(d):
    """How many of them reach 0.13 at 1x."""
    return str(sum(v >= 0.13 - 1e-9 for v in passkey_runs(d, RETRIEVAL, metric="digit_accuracy").values()))


@quote("digit-accuracy-1x-seed-means")
def digit_accuracy_seed_means(d):
    """The range over schemes of the seed means of digit accuracy at 1x."""
    runs = passkey_runs(d, RETRIEVAL, metric="digit_accuracy")
    schemes = {sc for sc, _ in runs}
    return span(mean([v for (sc, _), v in runs.items() if sc == scheme]) for scheme in schemes)


@family("key-bits")
def key_bits(d, scheme, fraction, ratios):
    """One scheme's bits per key digit at a passkey fraction and lengths (mean over depths and seeds)."""
    return span(v for ratio in ratios.split(",") for (sc, _), v in
                passkey_runs(d, RETRIEVAL, fraction=fraction, ratio=int(ratio)).items() if sc == scheme)


@family("passkey-max")
def passkey_max(d, path):
    """The largest share of key digits right in any cell of a passkey CSV, as a percentage."""
    return f"{100 * max(float(r['digit_accuracy']) for r in d.csv('paper-figures/' + path)):.1f}%"


@family("passkey-bits")
def passkey_bits(d, path):
    """The range of bits per key digit over the cells of a passkey CSV."""
    return span([float(r["key_bits_per_byte"]) for r in d.csv("paper-figures/" + path)], f2)


# -- training loss (every committed FILE-loss.csv)

LOSSES = ["extrapolation-cpu/extrapolation", "far-mass-control-cpu/extrapolation", "householder-cpu/extrapolation",
          "learned-angles-cpu/learned-angles", "robustness-cpu/robustness", "robustness-cpu/retrieval",
          "seed-spread-cpu/seed-spread"]


@family("loss-fall")
def loss_fall(d, steps, corpus):
    """The range over runs of the training loss's fall over the last third (bits per byte), runs of
    `steps` steps on `corpus`: from the 100-step block nearest 2/3 of training to the last."""
    import json
    falls = []
    for stem in LOSSES:
        with open(f"paper-figures/{stem}.csv.json") as f:
            config = json.load(f)["config"]
        base = {k: str(v) for section in config.values() if isinstance(section, dict) for k, v in section.items()}
        curves = {}
        for r in d.csv(f"paper-figures/{stem}-loss.csv"):
            run = tuple((k, v) for k, v in r.items() if k not in ("step", "loss"))
            curves.setdefault(run, {})[int(r["step"])] = float(r["loss"]) / math.log(2)
        for run, curve in curves.items():
            cells = {k: v for k, v in run if v != ""}
            if cells.get("corpus", base.get("corpus")) != corpus:
                continue
            last = max(curve)
            if last != int(steps):
                continue
            third = min(curve, key=lambda s: (abs(s - 2 * last / 3), s))
            falls.append(curve[third] - curve[last])
    if not falls:
        fail(f"loss-fall: no runs of {steps} steps on {corpus}")
    return span(falls, f2)


# -- learned angles (learned-angles-cpu): windows against rises

LEARNED_CSV = "paper-figures/learned-angles-cpu/learned-angles.csv"


def learned_settings(d):
    """The settings the learned-angles experiment's runs belong to (variants of the learned tables)."""
    return [s for s in d.readings.order if s == "default" or s.startswith("learned_") or "learned_init" in s]


def learned_runs(d):
    """(setting, scheme, seed, window over T, rise to 16x, rise to 64x) of every learned-angles run."""
    schemes = ("learned_qk", "learned_qkv", "projected_qk", "projected_qkv")
    out = []
    for st in learned_settings(d):
        for sc in schemes:
            for s in d.readings.seeds(st, sc):
                if (st, sc, s) in d.readings.window:
                    out.append((st, sc, s, d.readings.window[(st, sc, s)], d.readings.rise(st, sc, s, 16),
                                d.readings.rise(st, sc, s, 64)))
    return out


def learned_group(d, fits):
    return [r for r in learned_runs(d) if (r[3] <= 1) == fits]


def two_digits(x):
    """Two significant digits, kept ("0.070"), whole numbers from 10 on ("444")."""
    return f"{x:.0f}" if x >= 10 else f"{x:#.2g}".rstrip(".")


def window_text(xs):
    return span(xs, two_digits) + " T"


@quote("learned-runs")
def learned_runs_count(d):
    """How many learned-angle runs have a probed window."""
    return str(len(learned_runs(d)))


@family("learned")
def learned_group_quote(d, group, what):
    """The learned-angle runs whose trained window fits T (group `fit`) or lies beyond it (`beyond`): how many
    (`runs`), their windows (`windows`), their rises from 1x to 16x (`rise16`) and to 64x (`rise64`), and how
    many rise less than 0.1 bits to 16x (`near`)."""
    runs = learned_group(d, group == "fit")
    return {"runs": lambda: str(len(runs)),
            "windows": lambda: window_text([r[3] for r in runs]),
            "rise16": lambda: span([r[4] for r in runs]),
            "rise64": lambda: span([r[5] for r in runs], f2),
            "near": lambda: str(sum(r[4] < 0.1 for r in runs))}[what]()


LEARNED_ANGLES = "paper-figures/learned-angles-cpu/probe-angles.csv"


def run_setting(run):
    """A probe run's folder name -> (scheme, its setting's label, seed): learned_qk-learned_sigma=0.3-s2."""
    parts = run.rstrip("/").split("/")[-1].split("-")
    return parts[0], " ".join(parts[1:-1]) or "default", int(parts[-1][1:])


def layer_lower_median(rows, column):
    """The lower median over layers of a per-layer column (the same on each of the layer's rows)."""
    by_layer = {}
    for r in rows:
        by_layer[r["layer"]] = math.inf if r[column] == "inf" else float(r[column])
    v = sorted(by_layer.values())
    return v[(len(v) - 1) // 2]


@family("learned-window-start")
def learned_window_start(d, setting, schemes):
    """The range over runs of the layers' median window at initialisation, over T (the init's closed form)."""
    xs = []
    runs = {}
    for r in d.csv(LEARNED_ANGLES):
        runs.setdefault(r["run"], []).append(r)
    for run, rows in runs.items():
        scheme, st, _ = run_setting(run)
        if st == setting and scheme in schemes_arg(schemes):
            xs.append(layer_lower_median(rows, "layer_window_median_init") / float(rows[0]["train_len"]))
    if not xs:
        fail(f"learned-window-start: no runs of {schemes} at {setting}")
    return window_text(xs)


@family("phases")
def phases(d, column, group):
    """A phase statistic of learned-angles-cpu's probe at routes of T/8, T/4 and T/2, the mean over layers
    and runs of each start, its range over the group's starts and the three lengths: independent (N(0, 1),
    N(0, 3^2) and projected angles), uniform, sigma 0.03."""
    members = {"independent": [("default", "learned"), ("learned_sigma=3", "learned"), ("default", "projected")],
               "uniform": [("learned_init=uniform", "learned")],
               "sigma 0.03": [("learned_sigma=0.03", "learned")]}[group]
    cells = {}
    for r in d.csv("paper-figures/learned-angles-cpu/probe-phases.csv"):
        scheme, st, _ = run_setting(r["run"])
        start = (st, "projected" if scheme.startswith("projected") else "learned")
        n = 8 * int(r["distance"]) // int(r["train_len"])
        if start in members and r[column] and n in (1, 2, 4):
            cells.setdefault((start, n), []).append(float(r[column]))
    return span([mean(v) for v in cells.values()], f3 if column == "mean_abs_corr" else f2)


@quote("projected-cost")
def projected_cost(d):
    """Projected angles minus the N(0, 1) table at 1x, seed by seed, qk and qkv."""
    xs = [d.readings.at("default", f"projected_{v}", s, 1) - d.readings.at("default", f"learned_{v}", s, 1)
          for v in ("qk", "qkv") for s in d.readings.seeds("default", f"projected_{v}")]
    return span(xs, f2)


# -- the probes

@family("probe")
def probe_mean(d, path, scheme, column, ratio):
    """A probe column's mean over layers, heads (and windows) for one scheme at a length."""
    xs = [float(r[column]) for r in d.csv("paper-figures/" + path)
          if r["scheme"] == scheme and int(r["eval_len"]) == int(ratio) * int(r["train_len"])]
    if not xs:
        fail(f"probe: no rows of {scheme} at {ratio}x in {path}")
    m = mean(xs)
    return f"{m:.2g}" if m < 1e-3 else f"{m:.3f}" if m < 1 else f"{m:.1f}"


@family("probe-violations")
def probe_violations(d, path):
    """Proposition 3's violations over a probe's rows: "0 violations in 1344 rows"."""
    rows = d.csv("paper-figures/" + path)
    return f"{sum(int(float(r['bound_violations'])) for r in rows)} violations in {len(rows)} rows"


@family("probe-windows")
def probe_windows(d, schemes, column):
    """probe-cpu's per-layer windows (bytes) over the layers of some schemes: their range."""
    xs = [float(r[column]) for r in d.csv("paper-figures/probe-cpu/probe-angles.csv")
          if r["scheme"] in schemes_arg(schemes) and r[column] != "inf"]
    return span(xs, lambda x: f"{x:.0f}")


@family("layer-windows")
def layer_windows(d, path, run):
    """The range over layers of one run's median window (bytes)."""
    xs = [float(r["layer_window_median"]) for r in d.csv("paper-figures/" + path) if r["run"].endswith("/" + run)]
    return span(xs, lambda x: f"{x:.0f}")


def phase_rows(d, path, schemes=None):
    return [r for r in d.csv("paper-figures/" + path) if r["mean_cos_iid"] and (schemes is None or r["scheme"] in schemes)]


@family("phase-gap")
def phase_gap(d, schemes):
    """The largest |measured - i.i.d.| transport (mean_cos) over robustness-cpu's probed runs of some schemes."""
    rows = phase_rows(d, "robustness-cpu/probe-phases.csv", schemes_arg(schemes))
    return f"{max(abs(float(r['mean_cos']) - float(r['mean_cos_iid'])) for r in rows):.1g}"


@family("phase-gap-file")
def phase_gap_file(d, path):
    """The largest |measured - i.i.d.| transport over every row of a phases CSV."""
    rows = phase_rows(d, path)
    return f3(max(abs(float(r["mean_cos"]) - float(r["mean_cos_iid"])) for r in rows))


@family("phase-diff")
def phase_diff(d, path):
    """measured minus i.i.d. transport over every row of a phases CSV, signed."""
    return span([float(r["mean_cos"]) - float(r["mean_cos_iid"]) for r in phase_rows(d, path)], s3)


@family("phase-at")
def phase_at(d, path, mode, distance):
    """The measured transport at a distance over the reflection runs or PaTH's."""
    rows = [r for r in phase_rows(d, path) if ("reflection" in r["run"]) == (mode == "reflection")
            and int(r["distance"]) == int(distance)]
    return span([float(r["mean_cos"]) for r in rows], f2)


@family("head-far-mass")
def head_far_mass(d, run, ratio):
    """The range over layers and heads of one run's far mass at a length (householder-cpu's probe)."""
    xs = [float(r["far_mass"]) for r in d.csv("paper-figures/householder-cpu/probe.csv")
          if r["run"].endswith("/" + run) and int(r["eval_len"]) == int(ratio) * int(r["train_len"])]
    return span(xs, f2)


@family("trace-power")
def trace_power(d, run, multiple):
    """(1/d) tr M^n at n = multiple x T per layer, from the probed directions' beta: its range over layers."""
    by_layer = {}
    for r in d.csv("paper-figures/householder-cpu/probe-s1-angles.csv"):
        if r["run"].endswith("/" + run):
            n = int(multiple) * int(r["train_len"])
            by_layer.setdefault(r["layer"], []).append(float(r["beta"]) ** n)
    return span([mean(v) for v in by_layer.values()], f2)


# -- the tasks (docs/tasks.md): read error from a task CSV or its loss CSV

def percent(x):
    """A read error as a percentage: one decimal, two significant digits below 1%."""
    p = 100 * x
    return f"{p:.1f}%" if p >= 1 or p == 0 else f"{p:.2g}%"


def task_training_p(path):
    """The p a flip-flop experiment trained on (its sidecar's configuration), or None."""
    import json
    side = path + ".json"
    if not os.path.isfile(side):
        fail(f"{side} does not exist: a task CSV's quotes read the training p from its sidecar")
    with open(side) as f:
        data = json.load(f).get("config", {}).get("data", {})
    return data.get("flipflop_p") if data.get("task") == "flipflop" else None


def task_filters(rows, filters):
    """The rows whose columns match every `column=value` filter."""
    for f in filters:
        column, _, want = f.partition("=")
        if not rows or column not in rows[0]:
            fail(f"task quote: the filter {f} names no column of the CSV")
        rows = [r for r in rows if r[column] == want]
    return rows


def task_rows(d, path, scheme, where, filters):
    """A task CSV's rows of one scheme at one set, one per seed. `where`: `Nx` (the training law at N
    times the training length), `p=X` (FFL(X) at the training length), `d=D` (the distance set at D)."""
    full = "paper-figures/" + path
    rows = task_filters([r for r in d.csv(full) if r["scheme"] == scheme], filters)
    if where.endswith("x"):
        p = task_training_p(full)
        rows = [r for r in rows if r["set"] == "length" and int(r["eval_len"]) == int(where[:-1]) * int(r["train_len"])
                and (p is None or float(r["p"]) == float(p))]
    elif where.startswith("p="):
        rows = [r for r in rows if r["set"] == "length" and r["eval_len"] == r["train_len"]
                and float(r["p"]) == float(where[2:])]
    elif where.startswith("d="):
        rows = [r for r in rows if r["set"] == "distance" and r["distance"] == where[2:]]
    else:
        fail(f"task quote: '{where}' is not Nx, p=X or d=D")
    seeds = [r["seed"] for r in rows]
    if not rows:
        fail(f"task quote: no rows of {scheme} at {where} in {path} ({' '.join(filters) or 'no filters'})")
    if len(set(seeds)) != len(seeds):
        fail(f"task quote: {scheme} at {where} in {path} has several runs per seed; add column=value filters")
    return rows


@family("task")
def task_error(d, path, scheme, where, *filters):
    """A scheme's read error at a set, the mean over its seeds: `task|tasks-cpu/flipflop.csv|rope|2x|layers=1`."""
    return percent(mean([float(r["error_rate"]) for r in task_rows(d, path, scheme, where, filters)]))


@family("task-range")
def task_range(d, path, scheme, where, *filters):
    """A scheme's read error at a set, the lowest and highest of its seeds, for prose that must not quote a
    mean no seed shows: `task-range|tasks-cpu/flipflop.csv|learned_qkv|1x|layers=1` gives "13.0-22.2%"."""
    rates = sorted(float(r["error_rate"]) for r in task_rows(d, path, scheme, where, filters))
    low, high = percent(rates[0]), percent(rates[-1])
    return low if low == high else f"{low[:-1]}-{high}"


@family("task-seeds")
def task_seeds(d, path, scheme, where, *filters):
    """How many seeds a scheme's quote rests on, and their reads: "1 seed, 1967 reads"."""
    rows = task_rows(d, path, scheme, where, filters)
    reads = sum(int(r["reads"]) for r in rows)
    return f"{len(rows)} seed{'s' if len(rows) > 1 else ''}, {reads} reads"


@family("task-curve")
def task_curve(d, path, scheme, step, *filters):
    """The read error of a loss CSV's 100-step block ending at a step (the batches' error before their
    update), the mean over the runs the filters leave: `task-curve|tasks-cpu/flipflop-pilot-loss.csv|...`."""
    rows = task_filters([r for r in d.csv("paper-figures/" + path) if r["scheme"] == scheme and r["step"] == step],
                        filters)
    if not rows:
        fail(f"task-curve: no row of {scheme} at step {step} in {path}")
    return percent(mean([float(r["read_error"]) for r in rows]))


@family("task-window")
def task_window(d, setting, scheme, *filters):
    """A scheme's probed mixing window in bytes at a task setting, the span over seeds, "never" where the angles
    do not mix, from the window rule's readings (`routelab claims --readings` over a task CSV):
    `task-window|latest_value|householder_qk|seed=1`."""
    rows = task_filters([r for r in d.task_readings if r["setting"] == setting and r["scheme"] == scheme
                         and r["window"]], filters)
    if not rows:
        fail(f"task-window: no probed run of {scheme} at {setting} ({' '.join(filters) or 'no filters'})")
    runs = [math.inf if r["window"] == "inf" else int(r["window"]) for r in rows]
    if any(math.isinf(w) for w in runs):
        if not all(math.isinf(w) for w in runs):
            fail(f"task-window: some runs of {scheme} mix and some never do; quote them apart with filters")
        return "never"
    lo, hi = min(runs), max(runs)
    return f"{lo} bytes" if lo == hi else f"{lo}-{hi} bytes"


@family("task-window-rule")
def task_window_rule(d, setting):
    """The window rule's verdicts over every run of a task setting that has one (a probed window and a learned
    task), from `routelab claims --readings`: `task-window-rule|latest_value` gives "6 hits and 23 misses"."""
    rules = [r["window_rule"] for r in d.task_readings if r["setting"] == setting and r["window_rule"]]
    if not rules:
        fail(f"task-window-rule: no run at {setting} has a window rule verdict")
    hits, misses = rules.count("hit"), rules.count("miss")
    if hits + misses != len(rules):
        fail(f"task-window-rule: verdicts other than hit and miss at {setting}")
    return f"{hits} hit{'' if hits == 1 else 's'} and {misses} miss{'' if misses == 1 else 'es'}"


# ---------------------------------------------------------------------------
# Tables: TABLES[name](data) is the markdown between `<!-- claims:begin name -->` and its end.

SCHEME_ORDER = ["nope", "alibi", "fox", "rope", "rope_qkv", "random_qk", "random_qkv", "learned_qk", "learned_qkv",
                "projected_qk", "projected_qkv", "learned_qkv_alibi", "random_qkv_alibi", "learned_qkv_forget",
                "householder_qk", "householder_qkv", "path_qk", "path_qkv", "path_qk_forget"]
RATIOS = [1, 2, 4, 8, 16, 32, 64]


def ordered(schemes):
    return sorted(schemes, key=lambda s: (SCHEME_ORDER.index(s) if s in SCHEME_ORDER else len(SCHEME_ORDER), s))


def length(r):
    return f"{r}x"


def mean_sd(xs):
    return f3(mean(xs)) if len(xs) == 1 else f"{f3(mean(xs))} ± {f3(sd(xs))}"


def mean_range(xs, fmt=s3):
    return fmt(mean(xs)) if len(xs) == 1 else f"{fmt(mean(xs))} [{fmt(min(xs))}, {fmt(max(xs))}]"


def bpb_table(d, rows, ratios=RATIOS):
    """Rows (label, setting, scheme): seeds and mean ± s.d. over them at each length."""
    out = ["| scheme | seeds | " + " | ".join(length(r) for r in ratios) + " |",
           "|---|---:|" + "---:|" * len(ratios)]
    for label, setting, scheme in rows:
        seeds = d.readings.seeds(setting, scheme)
        if not seeds:
            continue
        cells = [mean_sd([d.readings.at(setting, scheme, s, r) for s in seeds]) for r in ratios]
        out.append(f"| {label} | {len(seeds)} | " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


@table("bpb-default")
def bpb_default(d):
    """The default setting's schemes, and the learned tables from the uniform start."""
    rows = [(sc, "default", sc) for sc in ("nope", "alibi", "rope", "rope_qkv", "random_qk", "random_qkv", "learned_qk",
                                           "learned_qkv")]
    rows += [(f"{sc} (uniform)", "learned_init=uniform", sc) for sc in ("learned_qk", "learned_qkv")]
    return bpb_table(d, rows)


@table("bpb-far-mass")
def bpb_far_mass(d):
    """The far-mass-control runs beside RoPE, ALiBi and learned_qkv."""
    return bpb_table(d, [(sc, "default", sc) for sc in ("rope", "alibi", "learned_qkv", "learned_qkv_alibi",
                                                        "random_qkv_alibi", "learned_qkv_forget")])


@table("bpb-householder")
def bpb_householder(d):
    """The Householder runs, both modes, beside RoPE, ALiBi and learned_qkv."""
    rows = [("rope (extrapolation-cpu)", "default", "rope"), ("alibi (extrapolation-cpu)", "default", "alibi"),
            ("learned_qkv", "default", "learned_qkv")]
    rows += [(f"{sc}, PaTH β", "default", sc) for sc in ("householder_qk", "householder_qkv")]
    rows += [(f"{sc}, β = 2", "householder_beta=reflection", sc) for sc in ("householder_qk", "householder_qkv")]
    return bpb_table(d, rows)


def robustness_settings(d):
    """The default setting and the settings robustness-cpu and retrieval-cpu move to."""
    return [s for s in d.readings.order if "learned_" not in s and "householder_" not in s]


@table("settings")
def settings_table(d):
    """Per setting and scheme: seeds, 1x, and the rises to 16x, from 16x to 64x and to 64x (mean [min, max])."""
    out = ["| setting | scheme | seeds | 1x | rise to 16x | 16x→64x | rise to 64x |",
           "|---|---|---:|---:|---:|---:|---:|"]
    for st in robustness_settings(d):
        for sc in ordered(d.readings.schemes(st)):
            seeds = d.readings.seeds(st, sc)
            if 64 not in d.readings.ratios(st, sc):
                continue

            def over(f):
                return [f(s) for s in seeds]
            out.append(f"| {st} | {sc} | {len(seeds)} | {mean_range(over(lambda s: d.readings.at(st, sc, s, 1)), f3)} | "
                       f"{mean_range(over(lambda s: d.readings.rise(st, sc, s, 16)))} | "
                       f"{mean_range(over(lambda s: d.readings.rise(st, sc, s, 64, 16)))} | "
                       f"{mean_range(over(lambda s: d.readings.rise(st, sc, s, 64)))} |")
    return "\n".join(out) + "\n"


@table("changes")
def changes_table(d):
    """Per setting, the verdicts that differ from the default setting's, and the one-seed readings whose
    sign is against the default's verdict."""
    out = []
    rows = d.claims.rows
    for st in robustness_settings(d)[1:]:
        notes = []
        for (claim, subject, setting), r in rows.items():
            if setting != st or (claim, subject, "default") not in rows:
                continue
            base = rows[(claim, subject, "default")]["verdict"]
            mean_margin = float(r["margin_mean"])
            if r["verdict"] == "reading":
                if (base == "yes" and mean_margin < 0) or (base == "no" and mean_margin > 0):
                    notes.append(f"`{claim}` {subject}: one seed reads {s3(mean_margin)} (default: {base})")
            elif r["verdict"] != base and base != "reading":
                notes.append(f"`{claim}` {subject}: {r['verdict']} (default: {base})")
        out.append(f"- `{st}`: " + ("; ".join(notes) if notes else "none"))
    return "\n".join(out) + "\n"


def variant_label(setting, scheme):
    if scheme.startswith("projected"):
        return scheme
    if setting == "default":
        return f"{scheme} N(0, 1)"
    if setting == "learned_shared=true":
        return f"{scheme} N(0, 1), one table"
    if setting == "learned_init=uniform":
        return f"{scheme} U(−f_b, f_b)"
    if setting == "context=256 learned_init=uniform":
        return f"{scheme} U(−f_b, f_b), T = 256"
    if setting.startswith("learned_sigma="):
        return f"{scheme} N(0, {setting.split('=')[1]}²)"
    return f"{scheme} {setting}"


@table("learned-variants")
def learned_variants(d):
    """Every learned-angle variant: seeds, mean ± s.d. at 1x, 2x, 4x, 16x and 64x, and its window over T at
    the start (the init's closed form) and after training (the probe), each a range over the runs probed."""
    starts = {}
    runs = {}
    for r in d.csv(LEARNED_ANGLES):
        runs.setdefault(r["run"], []).append(r)
    for run, rows in runs.items():
        scheme, st, _ = run_setting(run)
        starts.setdefault((st, scheme), []).append(
            layer_lower_median(rows, "layer_window_median_init") / float(rows[0]["train_len"]))
    ratios = [1, 2, 4, 16, 64]
    out = ["| variant | n | " + " | ".join(length(r) for r in ratios) + " | window / T at start | window / T trained |",
           "|---|---:|" + "---:|" * (len(ratios) + 2)]
    keys = [(st, sc) for st in learned_settings(d) for sc in ("learned_qkv", "learned_qk", "projected_qkv",
                                                              "projected_qk")
            if (st, sc) in starts]
    keys.sort(key=lambda k: (k[1].startswith("projected"), k[1] != "learned_qkv", min(starts[k])))
    for st, sc in keys:
        seeds = d.readings.seeds(st, sc)
        trained = [d.readings.window[(st, sc, s)] for s in seeds if (st, sc, s) in d.readings.window]
        cells = [mean_sd([d.readings.at(st, sc, s, r) for s in seeds]) for r in ratios]
        out.append(f"| {variant_label(st, sc)} | {len(seeds)} | " + " | ".join(cells) +
                   f" | {span(starts[(st, sc)], two_digits)} | {span(trained, two_digits)} |")
    return "\n".join(out) + "\n"


@table("householder-probe")
def householder_probe(d):
    """householder-cpu's probe: far mass, far-weight norm and logit range, each run's mean over layers and
    heads at 1x -> 64x, the range over seeds."""
    per_run = {}
    for r in d.csv("paper-figures/householder-cpu/probe.csv"):
        ratio = int(r["eval_len"]) // int(r["train_len"])
        if ratio in (1, 64):
            per_run.setdefault((r["run"], ratio), []).append(r)
    out = ["| variant | far mass ρ_D | far-weight norm a_D | logit range λ |", "|---|---|---|---|"]
    for scheme in ("householder_qk", "householder_qkv"):
        for mode, label in (("", "PaTH β"), ("reflection", "β = 2")):
            cells = []
            for column, fmt in (("far_mass", f3), ("far_norm", f3), ("logit_range", f2)):
                ends = []
                for ratio in (1, 64):
                    xs = [mean([float(r[column]) for r in rows]) for (run, rt), rows in per_run.items()
                          if rt == ratio and run.split("/")[-1].startswith(scheme + "-")
                          and ("reflection" in run) == bool(mode)]
                    ends.append(span(xs, fmt))
                cells.append(" → ".join(ends))
            out.append(f"| {scheme}, {label} | " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


@table("probe-far-mass")
def probe_far_mass(d):
    """probe-cpu's far mass (keys more than 32 back), mean over layers and heads, by scheme and length."""
    rows = d.csv("paper-figures/probe-cpu/probe.csv")
    by = {}
    for r in rows:
        by.setdefault((r["scheme"], int(r["eval_len"]) // int(r["train_len"])), []).append(float(r["far_mass"]))
    schemes = ordered({k[0] for k in by})
    out = ["| scheme | " + " | ".join(length(r) for r in RATIOS) + " |", "|---|" + "---:|" * len(RATIOS)]
    for sc in schemes:
        cells = []
        for r in RATIOS:
            m = mean(by[(sc, r)])
            cells.append(f"{m:.2g}" if m < 1e-3 else f"{m:.3f}")
        out.append(f"| {sc} | " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("command", choices=["write", "check", "tables", "plant", "names"])
    ap.add_argument("paths", nargs="*", help="the documents (write, check) or the folder (tables)")
    ap.add_argument("--claims", nargs="+",
                    help="`routelab claims --csv` over every committed experiment CSV (and over the task CSVs)")
    ap.add_argument("--readings", help="`routelab claims --readings` over the same")
    ap.add_argument("--task-readings", action="append", default=[],
                    help="`routelab claims --readings` over the task suites' CSVs (the window rule's readings); "
                         "may be given more than once")
    args = ap.parse_intermixed_args()
    if args.command == "names":
        for name, f in sorted({**QUOTES, **FAMILIES, **TABLES}.items()):
            print(f"{name}: {(f.__doc__ or '').strip().splitlines()[0] if f.__doc__ else ''}")
        return 0
    if args.command == "plant":
        with open(args.paths[0]) as f:
            text = f.read()
        m = next((m for m in QUOTE.finditer(text) if re.search(r"\d", m.group(2))), None)
        if m is None:
            fail(f"{args.paths[0]} has no quoted number to plant an error in")
        digit = re.search(r"\d", m.group(2))
        wrong = m.group(2)[:digit.start()] + str((int(digit.group(0)) + 1) % 10) + m.group(2)[digit.end():]
        sys.stdout.write(text[:m.start(2)] + wrong + text[m.end(2):])
        return 0
    if not args.claims or not args.readings:
        fail(f"{args.command} needs --claims and --readings")
    data = Data(args.claims, args.readings, args.task_readings)
    if args.command == "tables":
        if len(args.paths) != 1 or not os.path.isdir(args.paths[0]):
            fail("tables takes one folder")
        for name, f in TABLES.items():
            with open(os.path.join(args.paths[0], f"claims-{name}.md"), "w") as out:
                out.write(f(data))
        return 0
    status = 0
    for doc in args.paths:
        with open(doc) as f:
            text = f.read()
        new = rewrite(data, text, doc)
        if args.command == "write":
            if new != text:
                with open(doc + ".tmp", "w") as f:
                    f.write(new)
                os.replace(doc + ".tmp", doc)
            continue
        for line, name, had, want in stale(text, new):
            print(f"{doc}:{line}: the quote {name} reads '{had}'; the CSVs give '{want}'", file=sys.stderr)
            status = 1
        for line, number in unquoted(text):
            print(f"{doc}:{line}: {number} looks like data but is not quoted (<!-- q:NAME -->...<!-- /q -->) "
                  "nor in a generated block", file=sys.stderr)
            status = 1
    return status


def outside_code(line, f):
    """The line with f applied to its parts outside `code spans`."""
    parts = line.split("`")
    return "`".join(f(p) if i % 2 == 0 else p for i, p in enumerate(parts))


def rewrite(data, text, doc):
    """The text with every quote's value recomputed (quotes in code, fenced or `inline`, are text)."""
    out, fence = [], False
    for n, line in enumerate(text.split("\n"), 1):
        if line.startswith("```"):
            fence = not fence
        if fence:
            out.append(line)
            continue
        bare = outside_code(line, lambda p: p)
        prose = "".join(p for i, p in enumerate(bare.split("`")) if i % 2 == 0)
        if prose.count("<!-- q:") != prose.count("<!-- /q -->"):
            fail(f"{doc}:{n}: a quote must open and close on one line")
        out.append(outside_code(line, lambda p: QUOTE.sub(
            lambda m: f"<!-- q:{m.group(1)} -->{value(data, m.group(1))}<!-- /q -->", p)))
    return "\n".join(out)


def stale(text, new):
    """(line, name, had, want) for every quote whose value changed."""
    for n, (a, b) in enumerate(zip(text.split("\n"), new.split("\n")), 1):
        if a == b:
            continue
        for x, y in zip(QUOTE.finditer(a), QUOTE.finditer(b)):
            if x.group(2) != y.group(2):
                yield n, x.group(1), x.group(2), y.group(2)


# Decimal numbers the prose may state without a quote: settings and
# constants, not readings (each with where it comes from).
CONSTANTS = {
    "0.1": "the rules' threshold in bits; a uniform guess's digit accuracy",
    "0.05": "the mixing window's eps",
    "0.25": "passkey_fraction, a depth",
    "0.75": "a depth",
    "0.5": "a depth",
    "0.3": "learned_sigma",
    "0.03": "learned_sigma",
    "1.0": "learned_sigma, angle_scale",
    "3.32": "log2 10, a uniform guess's bits per key digit",
    "0.13": "the digit accuracy the retrieval count is stated at",
    "0.35": "the cosine schedule's learning rate at two thirds of training, over its peak",
    "0.8": "flip-flop's training law, FFL(0.8)",
    "0.98": "sparse flip-flop, FFL(0.98)",
}
# Wall times and speeds are measurements of a machine, not of the data.
TIMING = re.compile(r"\d+(\.\d+)?(-\d+(\.\d+)?)?( h| min| s|x RoPE's)\b")
NUMBER = re.compile(r"(?<![\w.\-/=^])\d+\.\d+(?![\w.])")
SKIP_BLOCK = re.compile(r"^<!-- (claims|numbers):begin")
END_BLOCK = re.compile(r"^<!-- (claims|numbers):end")


def unquoted(text):
    """(line, number) for every decimal number outside quotes, code, generated
    blocks and `<!-- numbers:begin WHY -->` regions (closed forms, not data)."""
    inside = fence = False
    for n, line in enumerate(text.split("\n"), 1):
        if line.startswith("```"):
            fence = not fence
            continue
        if SKIP_BLOCK.match(line):
            inside = True
        if END_BLOCK.match(line):
            inside = False
            continue
        if fence or inside or line.startswith("!["):
            continue
        prose = QUOTE.sub("", line)
        prose = re.sub(r"`[^`]*`", "", prose)
        prose = re.sub(r"\]\([^)]*\)", "]", prose)
        prose = TIMING.sub("", prose)
        for m in NUMBER.finditer(prose):
            if m.group(0) not in CONSTANTS:
                yield n, m.group(0)


if __name__ == "__main__":
    sys.exit(main())
