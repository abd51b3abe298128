#!/usr/bin/python3
"""Training throughput of `routelab train` beside a PyTorch peer, alternately (issue 4).

  /usr/bin/python3 bench/run_train.py [--bin build/routelab] [--rounds 3] [--steps 30]
      [--schemes rope,learned_qkv] [--warmup 3] [--threads 2]
      [--peer-coretype auto|none|NAME] [--peer-isa native|avx2] [--eval-run DIR|trained]
      [--eval-lengths 16x,64x]
      [--out bench/out/train.csv] [--device cpu|cuda] [--tf32] [--size cpu|gpu|task]
      [--base-bin OTHER/routelab] [--python /usr/bin/python3]

--device cuda (issue 6): both sides train on the GPU, routelab with
`train --device cuda` and the peer with torch on CUDA (fused
scaled_dot_product_attention); --tf32 gives both TF32 matmuls. --size gpu is
the GPU-scale configuration (d_model 512, 8 heads, 8 layers, mlp_ratio 4,
context 512, batch 16), the default with --device cuda; --size cpu the issue-4
default below; --size task the tasks' model of issue 51 (1 layer, d_model 64, 2
heads, mlp_ratio 4, context 512, batch 16). The BLAS checks below concern the CPU peer and are skipped on
the GPU. The target (>= 2x) is issue 4's, for the CPU; on the GPU the ratio is
reported as measured.

Training: per scheme and round, `routelab train` runs N steps of the default
configuration (d_model 128, 4 heads, 4 layers, mlp_ratio 4, context 128,
batch 16; log_every 1) into a fresh temporary run directory, and
bench/peers/train_torch.py (the same model in PyTorch, float32) runs N steps
of the same TOML file; which of the two goes first alternates from round to
round, since this machine's speed shifts between levels. The first --warmup
steps of every run are dropped; the rest are per-step tokens/s (batch x context
over the step's wall time). Printed per scheme: the median of each side, the
ratio of the medians (routelab / torch), the median of the per-round paired
ratios, and whether the issue's target (>= 2x) is met.

Threads: routelab runs with --threads 2, OMP_NUM_THREADS=2 and the rest of the environment
untouched. The peer runs torch.set_num_threads(2), OMP_NUM_THREADS=2,
OPENBLAS_NUM_THREADS=2, with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE removed
from its environment alone, and Debian's OpenBLAS forced by prepending
/usr/lib/x86_64-linux-gnu/openblas-pthread to LD_LIBRARY_PATH (Debian's torch
links libblas.so.3, which the alternatives system may point at the reference
BLAS: about 15x slower, and a win over it means nothing). Every peer run's
/proc/self/maps is checked: if the reference BLAS is mapped, or no OpenBLAS,
the script stops without reporting.

OpenBLAS 0.3.21 does not know every newer CPU; left unset it falls back to its
generic 'Prescott' kernels on this machine (family 6 model 207). With
--peer-coretype auto (default) the script probes the kernel OpenBLAS picks
with the variables unset, and if it is a generic one names the matching kernel
(SkylakeX with AVX-512, Haswell with AVX2) for the peer and says so loudly;
--peer-coretype none keeps what OpenBLAS picks; NAME sets it. --peer-isa avx2
holds torch to its avx2 ATen kernels and OpenBLAS to Haswell's (as in
run_walks.py), for an AVX2 build of ours on a CPU that also has AVX-512.

Evaluation: with --eval-run DIR (a trained run directory; `trained` keeps the
last round's routelab run of each scheme and uses those), `routelab eval --run
DIR --lengths L` runs once per length under /usr/bin/time -v; printed are
tokens/s (the CSV's tokens over the sidecar JSON's wall_seconds, and over the
process's whole wall time) and the peak RSS in MiB.

OpenMP waiting: with other work on the two cores, two-thread runs whose
OpenMP threads spin at barriers (libgomp's default) can slow down many times
over; --omp-wait-policy passive sets OMP_WAIT_POLICY for both sides alike.
The load average before each run is printed and kept in the CSV.

Today's build against another (--base-bin OTHER/routelab, e.g. a build of the
commit before a change): a third side, `base`, trains in every round beside
the two others, the three in an order that rotates from round to round, and
the summary adds the base's tokens/s and routelab / base.

routelab against itself (issues 14 and 15): --between rope,learned_qkv,projected_qkv
times those schemes' `routelab train` runs alone (no peer), each round in a
rotated order, and prints each scheme's median tokens/s and its cost over the
first (first / this); with --eval-run trained, each scheme's kept run is then
evaluated at --eval-lengths, rotated the same way, and the tokens/s of
evaluation are compared the same way (use --corpus tests/data/brown-slice to
keep 64x evaluation short).

Everything measured is written to --out as one long CSV.
"""
import argparse
import csv
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from run_walks import cpu_flags, isa_coretype, limit_peer_isa, loud  # one copy of the machine checks for both drivers

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PEER = os.path.join(HERE, "peers", "train_torch.py")
PY = "/usr/bin/python3"  # Debian's python3 with python3-torch
OPENBLAS_DIR = "/usr/lib/x86_64-linux-gnu/openblas-pthread"
GENERIC_KERNELS = {"prescott", "katmai", "coppermine", "northwood", "banias", "atom", "core2", "penryn",
                   "dunnington"}
TARGET = 2.0
nan = float("nan")

CONFIG = """[model]
d_model = {d_model}
heads = {heads}
layers = {layers}
mlp_ratio = {mlp_ratio}
context = {context}
scheme = "{scheme}"
[train]
batch = {batch}
steps = {steps}
checkpoint_every = 1000000
log_every = 1
seed = {seed}
[data]
corpus = "{corpus}"
"""


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "?"


# ---------------------------------------------------------------- the peer's environment and BLAS

def loadavg():
    try:
        with open("/proc/loadavg") as f:
            return float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return float("nan")


def peer_env(threads, coretype, wait_policy="unset"):
    env = dict(os.environ)
    if wait_policy != "unset":
        env["OMP_WAIT_POLICY"] = wait_policy.upper()
    env.pop("OPENBLAS_CORETYPE", None)
    env.pop("OPENBLAS_L2_SIZE", None)
    env.update(OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    if coretype:
        env["OPENBLAS_CORETYPE"] = coretype
    if os.path.isdir(OPENBLAS_DIR):
        old = env.get("LD_LIBRARY_PATH")
        env["LD_LIBRARY_PATH"] = OPENBLAS_DIR + (":" + old if old else "")
    return env


def diagnostics(stderr):
    """The '# key: value' lines the peer writes to stderr."""
    d = {"blas-lib": []}
    for line in stderr.splitlines():
        if not line.startswith("# "):
            continue
        k, sep, v = line[2:].partition(": ")
        if not sep:
            continue
        if k == "blas-lib":
            d[k].append(v.split(" (mapped as")[0])
        elif k in ("openblas-core", "openblas-config", "sgemm-gflops"):
            d[k] = v
    return d


def check_blas(d, where):
    """Stops the script unless OpenBLAS, and only OpenBLAS, is the peer's BLAS."""
    libs = d["blas-lib"]
    openblas = [p for p in libs if "openblas" in p]
    reference = [p for p in libs if "openblas" not in p and "mkl" not in p]
    if reference or not openblas:
        loud(f"{where}: the peer's torch is NOT on OpenBLAS alone; mapped BLAS libraries: {libs or 'none'}.\n"
             "The reference BLAS makes the comparison meaningless: not reporting. Install libopenblas0-pthread\n"
             "(scripts/setup.sh) or point the alternatives at it:\n"
             "  update-alternatives --set libblas.so.3-x86_64-linux-gnu "
             f"{OPENBLAS_DIR}/libblas.so.3")
        sys.exit(2)


def probe(env, threads):
    r = subprocess.run([PY, PEER, "--config", os.devnull, "--info", "--threads", str(threads)], env=env,
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"peer --info failed:\n{r.stderr}")
    d = diagnostics(r.stderr)
    check_blas(d, "peer probe")
    return d


def choose_peer_env(mode, threads, wait_policy):
    env = peer_env(threads, None, wait_policy)
    d = probe(env, threads)
    core = d.get("openblas-core", "?")
    note = (f"OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE unset: OpenBLAS runs '{core}' "
            f"(sgemm {d.get('sgemm-gflops')} GFLOP/s, {threads} threads)")
    if mode == "none" or (mode == "auto" and core.lower() not in GENERIC_KERNELS):
        return env, d, note
    if mode == "auto":
        flags = cpu_flags()
        pick = "SkylakeX" if "avx512f" in flags else "Haswell" if "avx2" in flags else None
        if pick is None:
            return env, d, note
        loud(f"{note}: a generic kernel on a CPU with {'AVX-512' if pick == 'SkylakeX' else 'AVX2'}.\n"
             f"The peer runs with OPENBLAS_CORETYPE={pick} instead (--peer-coretype none keeps the generic one).")
    else:
        pick = mode
    env = peer_env(threads, pick, wait_policy)
    d = probe(env, threads)
    return env, d, (f"{note}; peer run with OPENBLAS_CORETYPE={pick}: '{d.get('openblas-core')}' "
                    f"(sgemm {d.get('sgemm-gflops')} GFLOP/s)")


# ---------------------------------------------------------------- one run of each side

def read_rows(text):
    rows = list(csv.DictReader(line for line in text.splitlines() if line and not line.startswith("#")))
    return [{k: float(v) for k, v in r.items() if v not in (None, "")} for r in rows]


def device_flags(device, tf32):
    return (["--device", device] if device != "cpu" else []) + (["--tf32"] if tf32 else [])


def run_routelab(binp, cfg, steps, threads, env, tmp, device="cpu", tf32=False):
    run_dir = os.path.join(tmp, "run")  # must not exist
    cmd = [binp, "train", "--config", cfg, "--out", run_dir, "--threads", str(threads), "--quiet"]
    cmd += device_flags(device, tf32)
    t0 = time.perf_counter()
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        sys.exit(f"failed ({r.returncode}): {' '.join(cmd)}\n{r.stdout[-2000:]}\n{r.stderr[-4000:]}")
    with open(os.path.join(run_dir, "train.csv")) as f:
        rows = read_rows(f.read())
    if len(rows) < steps:
        print(f"  note: routelab wrote {len(rows)} rows for {steps} steps", flush=True)
    return rows, wall, run_dir


def run_peer(cfg, steps, threads, env, device="cpu", tf32=False):
    cmd = [PY, PEER, "--config", cfg, "--steps", str(steps), "--threads", str(threads)]
    cmd += device_flags(device, tf32)
    t0 = time.perf_counter()
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        sys.exit(f"failed ({r.returncode}): {' '.join(cmd)}\n{r.stderr[-4000:]}")
    d = diagnostics(r.stderr)
    if device == "cpu":
        check_blas(d, "peer run")
    return read_rows(r.stdout), wall, d


def med(xs):
    return statistics.median(xs) if xs else float("nan")


# ---------------------------------------------------------------- evaluation

def parse_time_v(stderr):
    out = {}
    for line in stderr.splitlines():
        line = line.strip()
        if line.startswith("Maximum resident set size (kbytes):"):
            out["rss_kib"] = float(line.rsplit(":", 1)[1])
        elif line.startswith("Elapsed (wall clock) time"):
            v = line.rsplit(": ", 1)[1].strip()
            secs = 0.0
            for part in v.split(":"):
                secs = secs * 60 + float(part)
            out["wall_s"] = secs
    return out


def run_eval(binp, run_dir, length, threads, env, tmp, device="cpu"):
    out = os.path.join(tmp, f"eval_{length}.csv")
    if os.path.exists(out):
        os.remove(out)
    cmd = ["/usr/bin/time", "-v", binp, "eval", "--run", run_dir, "--lengths", length, "--out", out,
           "--threads", str(threads), "--quiet"] + device_flags(device, False)
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"failed ({r.returncode}): {' '.join(cmd)}\n{r.stdout[-2000:]}\n{r.stderr[-4000:]}")
    tv = parse_time_v(r.stderr)
    with open(out) as f:
        rows = list(csv.DictReader(f))
    tokens = sum(float(row["tokens"]) for row in rows)
    wall = None
    try:
        with open(out + ".json") as f:
            wall = float(json.load(f)["wall_seconds"])
    except (OSError, KeyError, ValueError, TypeError):
        pass
    return dict(tokens=tokens, eval_wall_s=wall, proc_wall_s=tv.get("wall_s"),
                rss_mib=tv.get("rss_kib", float("nan")) / 1024.0, rows=rows)


# ---------------------------------------------------------------- main

def between(a, binp, corpus, size, env, tmp_root, out_rows):
    """Schemes against each other: rounds rotate the order; medians and cost over the first."""
    schemes = [s for s in a.between.split(",") if s]
    cfgs = {}
    for scheme in schemes:
        cfgs[scheme] = os.path.join(tmp_root, f"{scheme}.toml")
        with open(cfgs[scheme], "w") as f:
            f.write(CONFIG.format(**size, scheme=scheme, batch=a.batch, steps=a.steps, seed=a.seed, corpus=corpus))
    rates = {s: [] for s in schemes}
    kept = {}
    for rnd in range(a.rounds):
        for k in range(len(schemes)):
            scheme = schemes[(k + rnd) % len(schemes)]
            tmp = tempfile.mkdtemp(dir=tmp_root)
            load = loadavg()
            rows, wall, run_dir = run_routelab(binp, cfgs[scheme], a.steps, a.threads, env, tmp, a.device, a.tf32)
            tps = [r["tokens_per_s"] for r in rows[a.warmup:]]
            rates[scheme].append(med(tps))
            if scheme in kept:
                shutil.rmtree(os.path.dirname(kept[scheme]), ignore_errors=True)
            kept[scheme] = run_dir
            for i, r in enumerate(rows):
                out_rows.append(dict(kind="train_step", scheme=scheme, round=rnd, side="routelab", step=int(r["step"]),
                                     warmup=int(i < a.warmup), tokens_per_s=r["tokens_per_s"], loss=r.get("loss"),
                                     note=f"load {load:.2f}"))
            print(f"  {scheme:16s} round {rnd} median {rates[scheme][-1]:9.0f} tok/s (run {wall:.1f} s) load {load:.2f}",
                  flush=True)
    first = med(rates[schemes[0]])
    print(f"\ntraining tokens/s, {a.rounds} rounds x {a.steps} steps (first {a.warmup} dropped), {a.threads} threads; "
          f"model {size}, batch {a.batch}")
    print(f"{'scheme':16s} {'tokens/s':>10s} {schemes[0] + '/this':>16s}")
    for scheme in schemes:
        m = med(rates[scheme])
        print(f"{scheme:16s} {m:10.0f} {first / m:16.2f}")
        out_rows.append(dict(kind="train_summary", scheme=scheme, side=f"{schemes[0]}/this", tokens_per_s=first / m,
                             note=f"median {m:.1f}"))
    if a.eval_run != "trained":
        return
    for length in [l for l in a.eval_lengths.split(",") if l]:
        ev = {s: [] for s in schemes}
        for rnd in range(a.rounds):
            for k in range(len(schemes)):
                scheme = schemes[(k + rnd) % len(schemes)]
                tmp = tempfile.mkdtemp(dir=tmp_root)
                e = run_eval(binp, kept[scheme], length, a.threads, env, tmp, a.device)
                ev[scheme].append(e["tokens"] / e["eval_wall_s"])
                out_rows.append(dict(kind="eval", scheme=scheme, round=rnd, side="routelab", eval_len=length,
                                     tokens=e["tokens"], eval_wall_s=e["eval_wall_s"], proc_wall_s=e["proc_wall_s"],
                                     tokens_per_s=ev[scheme][-1], peak_rss_mib=e["rss_mib"]))
                shutil.rmtree(tmp, ignore_errors=True)
        first = med(ev[schemes[0]])
        print(f"\nevaluation at {length}, {a.rounds} rounds, {a.threads} threads (corpus {corpus})")
        print(f"{'scheme':16s} {'tokens/s':>10s} {schemes[0] + '/this':>16s}")
        for scheme in schemes:
            m = med(ev[scheme])
            print(f"{scheme:16s} {m:10.0f} {first / m:16.2f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "routelab"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=3, help="steps dropped at the start of every run")
    ap.add_argument("--schemes", default="rope,learned_qkv")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--corpus", help="default: data/brown, else tests/data/brown-slice")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--peer-coretype", default="auto", help="auto | none | an OpenBLAS core name")
    ap.add_argument("--peer-isa", choices=("native", "avx2"), default="native",
                    help="avx2: the peer's own dispatch as on an AVX2-only machine (see above)")
    ap.add_argument("--omp-wait-policy", choices=["unset", "passive", "active"], default="unset",
                    help="OMP_WAIT_POLICY for both sides (default: as inherited); see bench/README.md")
    ap.add_argument("--no-train", action="store_true", help="only the evaluation")
    ap.add_argument("--eval-run", help="a trained run directory, or 'trained' (this script's last runs)")
    ap.add_argument("--eval-lengths", default="16x,64x")
    ap.add_argument("--out", default=os.path.join(HERE, "out", "train.csv"))
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--tf32", action="store_true", help="TF32 matmuls on both sides (cuda only)")
    ap.add_argument("--size", choices=["cpu", "gpu", "task"], help="model size (default: gpu with --device cuda)")
    ap.add_argument("--base-bin", help="another routelab build, timed as a third side (see above)")
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--python", default=PY, help="the Python with torch for the peer (default: Debian's)")
    ap.add_argument("--between", help="schemes timed against each other, no peer (see above)")
    a = ap.parse_args()
    globals()["PY"] = a.python
    if a.tf32 and a.device != "cuda":
        ap.error("--tf32 needs --device cuda")
    if a.peer_isa != "native" and a.device != "cpu":
        ap.error("--peer-isa avx2 needs --device cpu (it holds the peer's CPU kernels)")
    size = dict(cpu=dict(d_model=128, heads=4, layers=4, mlp_ratio=4, context=128),
                task=dict(d_model=64, heads=2, layers=1, mlp_ratio=4, context=512),
                gpu=dict(d_model=512, heads=8, layers=8, mlp_ratio=4, context=512))[
        a.size or ("gpu" if a.device == "cuda" else "cpu")]

    binp = a.bin
    if not os.path.isabs(binp) and not os.path.exists(binp):
        binp = os.path.join(ROOT, binp)
    if not os.path.exists(binp):
        sys.exit(f"{a.bin} not found: build it (cmake --build build --target routelab) or pass --bin")
    binp = os.path.abspath(binp)
    basep = os.path.abspath(a.base_bin) if a.base_bin else None
    if basep and not os.path.exists(basep):
        sys.exit(f"--base-bin {a.base_bin} not found")
    corpus = a.corpus
    if not corpus:
        for c in ("data/brown", "tests/data/brown-slice"):
            if os.path.isfile(os.path.join(ROOT, c, "train.txt")):
                corpus = os.path.join(ROOT, c)
                break
        else:
            sys.exit("no corpus: neither data/brown/train.txt nor tests/data/brown-slice/train.txt "
                     "(scripts/fetch-corpus.sh), or pass --corpus")
    corpus = os.path.abspath(corpus)
    schemes = [s for s in a.schemes.split(",") if s]
    if a.warmup >= a.steps and not a.no_train:
        sys.exit("--warmup must be below --steps")

    ours_env = dict(os.environ, OMP_NUM_THREADS=str(a.threads))
    if a.omp_wait_policy != "unset":
        ours_env["OMP_WAIT_POLICY"] = a.omp_wait_policy.upper()
    load = loadavg()
    if load > 0.5:
        loud(f"load average {load:.2f} before starting: other work shares the cores. Two-thread OpenMP\n"
             "runs can then slow down many times over (threads spin at barriers while a partner is\n"
             "descheduled); the ratio is still from alternated runs, but the levels are not the machine's.")
    out_rows = []
    tmp_root = tempfile.mkdtemp(prefix="routelab-bench-train-")
    kept = {}
    print(f"machine: {cpu_model()}, {os.cpu_count()} CPUs; routelab {binp}; corpus {corpus}", flush=True)
    print(f"routelab env: OMP_NUM_THREADS={a.threads}, OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE')}, "
          f"OPENBLAS_L2_SIZE={os.environ.get('OPENBLAS_L2_SIZE')} (as inherited)", flush=True)
    try:
        if a.between:
            between(a, binp, corpus, size, ours_env, tmp_root, out_rows)
            return
        if not a.no_train:
            if a.device == "cpu":
                penv, pinfo, note = choose_peer_env(isa_coretype(a.peer_isa, a.peer_coretype), a.threads,
                                                    a.omp_wait_policy)
                limits = limit_peer_isa(penv, a.peer_isa, PY)
                print("peer:", note, flush=True)
                print("peer vector dispatch:", limits or "left to torch (--peer-isa native)", flush=True)
                print(f"peer BLAS: {', '.join(pinfo['blas-lib'])}; {pinfo.get('openblas-config')}", flush=True)
            else:
                penv = peer_env(a.threads, None, a.omp_wait_policy)
                print(f"device cuda, tf32 {a.tf32}, model {size}, batch {a.batch}", flush=True)
            summary = []
            sides = ["routelab", "torch"] + (["base"] if basep else [])
            for scheme in schemes:
                cfg = os.path.join(tmp_root, f"{scheme}.toml")
                with open(cfg, "w") as f:
                    f.write(CONFIG.format(**size, scheme=scheme, batch=a.batch, steps=a.steps, seed=a.seed,
                                          corpus=corpus))
                ours_med, peer_med, base_med, paired = [], [], [], []
                ours_all, peer_all = [], []
                for rnd in range(a.rounds):
                    order = sides[rnd % len(sides):] + sides[:rnd % len(sides)]
                    res = {}
                    for side in order:
                        tmp = tempfile.mkdtemp(dir=tmp_root)
                        load = loadavg()
                        if side == "base":
                            rows, wall, _ = run_routelab(basep, cfg, a.steps, a.threads, ours_env, tmp, a.device,
                                                         a.tf32)
                            extra = ""
                            shutil.rmtree(tmp, ignore_errors=True)
                        elif side == "routelab":
                            rows, wall, run_dir = run_routelab(binp, cfg, a.steps, a.threads, ours_env, tmp,
                                                               a.device, a.tf32)
                            extra = ""
                            if a.eval_run == "trained":
                                if scheme in kept:
                                    shutil.rmtree(os.path.dirname(kept[scheme]), ignore_errors=True)
                                kept[scheme] = run_dir
                            else:
                                shutil.rmtree(tmp, ignore_errors=True)
                        else:
                            rows, wall, d = run_peer(cfg, a.steps, a.threads, penv, a.device, a.tf32)
                            extra = d.get("openblas-core", "")
                            shutil.rmtree(tmp, ignore_errors=True)
                        kept_rows = rows[a.warmup:]
                        tps = [r["tokens_per_s"] for r in kept_rows]
                        res[side] = med(tps)
                        for i, r in enumerate(rows):
                            out_rows.append(dict(kind="train_step", scheme=scheme, round=rnd, side=side,
                                                 step=int(r["step"]), warmup=int(i < a.warmup),
                                                 tokens_per_s=r["tokens_per_s"], loss=r.get("loss"),
                                                 note=f"{extra} load {load:.2f}".strip()))
                        first, last = (rows[0].get("loss", nan), rows[-1].get("loss", nan)) if rows else (nan, nan)
                        print(f"  {scheme:12s} round {rnd} {side:8s} median {res[side]:9.0f} tok/s over "
                              f"{len(tps)} steps (run {wall:.1f} s; loss {first:.3f} -> {last:.3f})"
                              + (f" [{extra}]" if extra else "") + f" load {load:.2f}", flush=True)
                        if side != "base":
                            (ours_all if side == "routelab" else peer_all).extend(tps)
                    ours_med.append(res["routelab"])
                    peer_med.append(res["torch"])
                    if basep:
                        base_med.append(res["base"])
                    paired.append(res["routelab"] / res["torch"])
                mo, mp = med(ours_med), med(peer_med)
                ratio = mo / mp
                summary.append((scheme, mo, mp, ratio, med(paired), med(ours_all) / med(peer_all), med(base_med)))
                out_rows.append(dict(kind="train_summary", scheme=scheme, side="routelab/torch",
                                     tokens_per_s=ratio, note=f"median routelab {mo:.1f}, torch {mp:.1f}"))
                if basep:
                    out_rows.append(dict(kind="train_summary", scheme=scheme, side="routelab/base",
                                         tokens_per_s=mo / med(base_med),
                                         note=f"median routelab {mo:.1f}, base {med(base_med):.1f} ({basep})"))
            print()
            print(f"training tokens/s, {a.rounds} rounds x {a.steps} steps (first {a.warmup} dropped), "
                  f"{a.threads} threads each; medians over rounds of each run's median")
            print(f"{'scheme':12s} {'routelab':>10s} {'torch':>10s} {'ratio':>7s} {'paired':>7s} {'pooled':>7s}  "
                  + (f"{'base':>10s} {'r/base':>7s}  " if basep else "")
                  + (f"target >= {TARGET:g}x" if a.device == "cpu" else "(GPU: no target, measured)"))
            for scheme, mo, mp, ratio, pr, pooled, mb in summary:
                print(f"{scheme:12s} {mo:10.0f} {mp:10.0f} {ratio:7.2f} {pr:7.2f} {pooled:7.2f}  "
                      + (f"{mb:10.0f} {mo / mb:7.2f}  " if basep else "")
                      + (f"{'met' if ratio >= TARGET else 'NOT met'}" if a.device == "cpu" else ""))
            print("(ratio: of the medians, routelab / torch; paired: median of per-round ratios; "
                  "pooled: of the medians of all kept steps)", flush=True)

        if a.eval_run:
            runs = list(kept.items()) if a.eval_run == "trained" else [("", a.eval_run)]
            if not runs:
                sys.exit("--eval-run trained: no training runs were kept")
            print()
            print(f"evaluation, {a.threads} threads (OMP_NUM_THREADS), one `routelab eval` per length "
                  f"under /usr/bin/time -v")
            print(f"{'run':24s} {'length':>6s} {'tokens':>10s} {'eval s':>8s} {'tok/s':>10s} {'proc s':>8s} "
                  f"{'tok/s':>10s} {'peak MiB':>9s}")
            for scheme, run_dir in runs:
                label = scheme or os.path.basename(os.path.normpath(run_dir))
                for length in [l for l in a.eval_lengths.split(",") if l]:
                    tmp = tempfile.mkdtemp(dir=tmp_root)
                    e = run_eval(binp, run_dir, length, a.threads, ours_env, tmp, a.device)
                    ew, pw = e["eval_wall_s"], e["proc_wall_s"]
                    r1 = e["tokens"] / ew if ew else float("nan")
                    r2 = e["tokens"] / pw if pw else float("nan")
                    print(f"{label:24s} {length:>6s} {e['tokens']:10.0f} {ew or float('nan'):8.2f} {r1:10.0f} "
                          f"{pw or float('nan'):8.2f} {r2:10.0f} {e['rss_mib']:9.1f}", flush=True)
                    out_rows.append(dict(kind="eval", scheme=scheme or label, side="routelab", eval_len=length,
                                         tokens=e["tokens"], eval_wall_s=ew, proc_wall_s=pw,
                                         tokens_per_s=r1, peak_rss_mib=e["rss_mib"],
                                         loss=(e["rows"][0].get("bits_per_byte") if e["rows"] else None),
                                         note="loss column = bits_per_byte"))
                    shutil.rmtree(tmp, ignore_errors=True)
    finally:
        shutil.rmtree(tmp_root, ignore_errors=True)
        if out_rows:
            os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
            fields = ["kind", "scheme", "round", "side", "step", "warmup", "tokens_per_s", "loss", "eval_len",
                      "tokens", "eval_wall_s", "proc_wall_s", "peak_rss_mib", "note"]
            with open(a.out, "w", newline="") as f:
                w = csv.DictWriter(f, fieldnames=fields)
                w.writeheader()
                for r in out_rows:
                    w.writerow(r)
            print(f"\nwrote {a.out}")


if __name__ == "__main__":
    main()
