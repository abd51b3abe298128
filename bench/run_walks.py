#!/usr/bin/python3
"""Run bench_walks beside its NumPy/SciPy peer, alternately, and print a table.

  /usr/bin/python3 bench/run_walks.py [--bin build/bench/bench_walks] [--rounds 5]
      [--reps 3] [--workloads W3,W4,W5,W6] [--scale 1.0]
      [--peer-coretype auto|none|NAME] [--peer-isa native|avx2]

Each round runs ours and the peer back to back (the order alternating from
round to round), since this machine's speed shifts from minute to minute; the
table gives medians over rounds, the ratio peer/ours of the medians, our
floor (measured in the same process as each of our runs) and the median of
ours/floor. Ours is always the library path the simulations call.

Each of our runs times the workload --reps times, and more until the timed
runs span half a second (bench_walks --span; W5's 30 ms runs). Beside the
peer, which times one run, stands our first run (peer/ours compares one run
with one). The floor is made of rates that are each the best of a few short
timings, so ours/floor takes the best of our runs (best/floor), and the table
shows the first run's ratio too (first/floor); on a machine whose speed
shifts within a minute the two differ by up to a fifth.

Both sides run one thread (OMP_NUM_THREADS=1, OPENBLAS_NUM_THREADS=1, Eigen's
and our own code single-threaded): see bench/README.md.

The peer's BLAS: OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE are removed from the
peer's environment alone (never from ours, the tests or CI), and threadpoolctl
reports which kernel then runs. OpenBLAS 0.3.21 does not recognise every newer
CPU and then falls back to its generic 'Prescott' kernels, 5-6x slower at
dgemm; with --peer-coretype auto (the default) the script then names the
matching kernel (SkylakeX for AVX-512, Haswell for AVX2) for the peer and says
so. If numpy's BLAS is the reference BLAS, the script says so loudly: the
comparison is then meaningless.

--peer-isa avx2 holds the peer to what an AVX2-only machine would run, for
comparing an AVX2 build of ours on a CPU that also has AVX-512: OpenBLAS's
Haswell kernels (unless --peer-coretype names another), NumPy's ufunc
dispatch without its AVX-512 targets (NPY_DISABLE_CPU_FEATURES) and torch's
ATen kernels at avx2 (ATEN_CPU_CAPABILITY). Without it NumPy's float64 cos,
for one, runs its AVX-512 loop, which an AVX2 machine does not have.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PEER = os.path.join(HERE, "peers", "walks_numpy.py")
PY = "/usr/bin/python3"  # Debian's python3 with python3-numpy/scipy
GENERIC_KERNELS = {"prescott", "katmai", "coppermine", "northwood", "banias", "atom", "core2", "penryn", "dunnington"}

# Peer sizes per workload, for --scale.
PEER_ARGS = {
    "W3": lambda s: ["--walks", str(max(1, int(4096 * s)))],
    "W4": lambda s: ["--walks", str(max(1, int(10000 * s)))],
    "W5": lambda s: ["--samples", str(max(1, int(2000 * s)))],
    "W6": lambda s: ["--walks", str(max(1, int(64 * s)))],
}


def loud(msg):
    bar = "!" * 78
    print(f"{bar}\n!! " + msg.replace("\n", "\n!! ") + f"\n{bar}", flush=True)


def parse_kv(line):
    parts = line.split()
    out = {"name": parts[0]}
    for p in parts[1:]:
        k, _, v = p.partition("=")
        try:
            out[k] = float(v)
        except ValueError:
            out[k] = v
    return out


def run(cmd, env):
    r = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{r.stderr}")
    return [parse_kv(l) for l in r.stdout.splitlines() if l.strip()]


def row(rows, name):
    """bench_walks' line `name` (its first line is `isa ...`, what it was built for)."""
    return next(x for x in rows if x["name"] == name)


def peer_env(coretype):
    env = dict(os.environ)
    env.pop("OPENBLAS_CORETYPE", None)
    env.pop("OPENBLAS_L2_SIZE", None)
    env.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    if coretype:
        env["OPENBLAS_CORETYPE"] = coretype
    return env


def peer_info(env):
    r = subprocess.run([PY, PEER, "info"], env=env, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"peer info failed:\n{r.stderr}")
    return json.loads(r.stdout)


def numpy_avx512_targets(python):
    """The dispatch targets of `python`'s NumPy that need AVX-512 (NPY_DISABLE_CPU_FEATURES accepts only
    dispatch targets)."""
    code = ("from numpy.core._multiarray_umath import __cpu_dispatch__ as d; "
            "print(' '.join(x for x in d if x.startswith('AVX512')))")
    r = subprocess.run([python, "-c", code], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"could not read numpy's dispatch targets:\n{r.stderr}")
    return r.stdout.strip()


def limit_peer_isa(env, isa, python=PY):
    """Holds the vector dispatch of the peer (run by `python`) to `isa` (native: leaves it alone); returns
    what it set."""
    if isa == "native":
        return ""
    env["NPY_DISABLE_CPU_FEATURES"] = numpy_avx512_targets(python)
    env["ATEN_CPU_CAPABILITY"] = "avx2"
    return f"NPY_DISABLE_CPU_FEATURES='{env['NPY_DISABLE_CPU_FEATURES']}' ATEN_CPU_CAPABILITY=avx2"


def isa_coretype(isa, coretype):
    """--peer-isa avx2 with --peer-coretype auto names OpenBLAS's AVX2 kernels."""
    return "Haswell" if isa == "avx2" and coretype == "auto" else coretype


def cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":")[1].split())
    except OSError:
        pass
    return set()


def choose_peer_env(mode):
    env = peer_env(None)
    info = peer_info(env)
    blas = [p for p in info["threadpools"] if p.get("user_api") == "blas"]
    if not blas or blas[0].get("internal_api") != "openblas":
        loud("numpy is NOT using OpenBLAS (threadpoolctl: %s). The reference BLAS makes this comparison "
             "meaningless. Point the alternatives at OpenBLAS, e.g.\n!!   update-alternatives --set "
             "libblas.so.3-x86_64-linux-gnu /usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3\n!!   "
             "update-alternatives --set liblapack.so.3-x86_64-linux-gnu "
             "/usr/lib/x86_64-linux-gnu/openblas-pthread/liblapack.so.3" % json.dumps(blas))
        return env, info, "not OpenBLAS"
    arch = str(blas[0].get("architecture", "")).lower()
    note = f"OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE unset: OpenBLAS {blas[0].get('version')} runs '{blas[0].get('architecture')}'"
    if mode == "none" or (mode == "auto" and arch not in GENERIC_KERNELS):
        return env, info, note
    if mode == "auto":
        flags = cpu_flags()
        pick = "SkylakeX" if "avx512f" in flags else "Haswell" if "avx2" in flags else None
        if pick is None:
            return env, info, note
        loud(f"{note}, a generic kernel on a CPU with {'AVX-512' if pick == 'SkylakeX' else 'AVX2'}: "
             f"the peer runs with OPENBLAS_CORETYPE={pick} instead (--peer-coretype none to keep the generic one)")
    else:
        pick = mode
    env = peer_env(pick)
    info = peer_info(env)
    blas = [p for p in info["threadpools"] if p.get("user_api") == "blas"]
    return env, info, f"{note}; peer run with OPENBLAS_CORETYPE={pick}: '{blas[0].get('architecture')}'"


def find_bin(arg):
    if arg:
        return arg
    for cand in ("build/bench/bench_walks", "build-bench/bench/bench_walks", "build-bench/dev/bench/bench_walks"):
        p = os.path.join(ROOT, cand)
        if os.path.exists(p):
            return p
    sys.exit("bench_walks not found: build it (cmake --build build --target bench_walks) or pass --bin")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--workloads", default="W3,W4,W5,W6")
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--peer-coretype", default="auto")
    ap.add_argument("--peer-isa", choices=("native", "avx2"), default="native")
    a = ap.parse_args()
    binp = find_bin(a.bin)
    ours_env = dict(os.environ, OMP_NUM_THREADS="1")
    penv, info, note = choose_peer_env(isa_coretype(a.peer_isa, a.peer_coretype))
    limits = limit_peer_isa(penv, a.peer_isa)
    print("peer:", note)
    print("peer vector dispatch:", limits or "left to numpy and torch (--peer-isa native)")
    print("peer threadpoolctl:", json.dumps(info))

    rates_rows = run([binp, "--workload", "rates"], ours_env)
    isa = row(rates_rows, "isa")
    print(f"ours: built for {isa['build']}, Philox kernel {isa['philox']}, normals' log {isa['normal_log']}, "
          f"W6 panel kernel {isa.get('panel_gemm', '?')}")
    rates = row(rates_rows, "rates")
    gemm_peer = run([PY, PEER, "gemm"], penv)[0]["gflops"]
    print(f"ours rates: word {rates['word_ns']:.3f} ns, uniform {rates['uniform_ns']:.3f} ns, "
          f"Box-Muller pair {rates['pair_ns']:.3f} ns, "
          f"cos {rates['cos_ns']:.3f} ns, FMA peak {rates['fma_gflops']:.1f} GFlop/s, "
          f"Eigen dgemm {rates['eigen_dgemm_gflops']:.1f} GFlop/s; numpy/OpenBLAS dgemm {gemm_peer:.1f} GFlop/s")
    dgemm = max(rates["eigen_dgemm_gflops"], gemm_peer)

    rows = []
    for wl in a.workloads.split(","):
        ours_names = [wl]
        ours = {n: [] for n in ours_names}
        peer = []
        for r in range(a.rounds):
            def do_ours():
                for n in ours_names:
                    ours[n].append(row(run([binp, "--workload", n, "--scale", str(a.scale), "--reps", str(a.reps)],
                                              ours_env), n))

            def do_peer():
                peer.append(run([PY, PEER, wl] + PEER_ARGS[wl](a.scale), penv)[0]["peer_s"])

            for f in ((do_ours, do_peer) if r % 2 == 0 else (do_peer, do_ours)):
                f()
            print(f"  {wl} round {r + 1}: " + ", ".join(
                f"{n} first {ours[n][-1]['first_s']:.4f} s, best {ours[n][-1]['ours_s']:.4f} s" for n in ours_names)
                  + f", peer {peer[-1]:.4f} s", flush=True)
        pm = statistics.median(peer)
        for n in ours_names:
            om = statistics.median(x["first_s"] for x in ours[n])
            fl = statistics.median(x["floor_s"] for x in ours[n])
            of = statistics.median(x["ours_over_floor"] for x in ours[n])
            ff = statistics.median(x["first_s"] / x["floor_s"] for x in ours[n])
            extra = ""
            if "useful_gflops" in ours[n][0]:
                g = statistics.median(x["useful_gflops"] for x in ours[n])
                extra = f"{g:.1f} GFlop/s (best run) = {100 * g / dgemm:.0f}% of dgemm {dgemm:.1f}"
            rows.append((n, om, pm, pm / om, fl, of, ff, extra))

    print()
    print(f"{'workload':9} {'ours med s':>11} {'peer med s':>11} {'peer/ours':>9} {'floor s':>9} {'best/floor':>10} "
          f"{'first/floor':>11}  note")
    for n, om, pm, ratio, fl, of, ff, extra in rows:
        print(f"{n:9} {om:11.4f} {pm:11.4f} {ratio:9.2f} {fl:9.4f} {of:10.2f} {ff:11.2f}  {extra}")


if __name__ == "__main__":
    main()
