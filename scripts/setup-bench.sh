#!/usr/bin/env bash
# The benchmarks' extra (bench/), not needed to build or test: their Python
# peers (bench/peers/train_torch.py, the peer of bench/run_train.py) need
# python3-torch, which scripts/setup.sh installs for the test suite too, with
# Debian's OpenBLAS as its BLAS. Runs scripts/setup.sh, then checks which BLAS
# libblas.so.3 is. Idempotent and quiet when everything is present.
set -euo pipefail
bash "$(dirname "$0")/setup.sh"

# Debian's torch links libblas.so.3, which the alternatives system may point
# at the reference BLAS (about 15x slower); bench/run_train.py forces
# OpenBLAS for the peer anyway, but say so if the system default is wrong.
blas=$(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3 2>/dev/null || true)
case "$blas" in
  *openblas*) ;;
  *) echo "setup-bench: note: libblas.so.3 is $blas, not OpenBLAS; bench/run_train.py puts" \
          "/usr/lib/x86_64-linux-gnu/openblas-pthread first for the peer. To change the default:" \
          "update-alternatives --set libblas.so.3-x86_64-linux-gnu" \
          "/usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3" >&2 ;;
esac
