#!/usr/bin/env bash
# Opt-in extra for the benchmarks (bench/), not needed to build or test:
# python3-torch, Debian's PyTorch, for bench/peers/train_torch.py (the peer
# of bench/run_train.py), with Debian's OpenBLAS as its BLAS. Run
# scripts/setup.sh first. Idempotent and quiet when everything is present;
# needs root (or sudo) only when something is missing.
set -euo pipefail

packages=(
  python3-torch
  libopenblas0-pthread
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "setup-bench: installing ${missing[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

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
