#!/usr/bin/env bash
# The package check (part of scripts/test.sh): installs the already built
# build/ (ROUTELAB_BUILD overrides it) into a fresh temporary prefix, builds
# both consumer projects of examples/ against it and runs them, checks that a
# COMPONENTS cuda request succeeds or fails as the build has CUDA or not, and
# that `routelab --version`, the package and base/version.h agree.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${ROUTELAB_BUILD:-$root/build}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
prefix="$tmp/prefix"
fail() { echo "test-install: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$prefix" >/dev/null
for example in step-law-gap train-tiny; do
  cmake -S "$root/examples/$example" -B "$tmp/$example" -DCMAKE_PREFIX_PATH="$prefix" >"$tmp/$example.log" 2>&1 &&
    cmake --build "$tmp/$example" -j"$(nproc)" >>"$tmp/$example.log" 2>&1 ||
    { cat "$tmp/$example.log" >&2; fail "examples/$example does not build against the installed package"; }
done
gap="$("$tmp/step-law-gap/step_law_gap")" || fail "examples/step-law-gap failed"
echo "$gap"
"$tmp/train-tiny/train_tiny" "$root/tests/data/brown-slice" "$tmp/run" || fail "examples/train-tiny failed"

# COMPONENTS cuda: found exactly when the build made the CUDA library.
mkdir -p "$tmp/cuda-probe"
printf 'cmake_minimum_required(VERSION 3.22)\nproject(probe LANGUAGES CXX)\nfind_package(routelab CONFIG REQUIRED COMPONENTS cuda)\n' \
  >"$tmp/cuda-probe/CMakeLists.txt"
if grep -q '^ROUTELAB_CUDA:BOOL=ON$' "$build/CMakeCache.txt"; then
  cmake -S "$tmp/cuda-probe" -B "$tmp/cuda-probe/build" -DCMAKE_PREFIX_PATH="$prefix" >"$tmp/probe.log" 2>&1 ||
    { cat "$tmp/probe.log" >&2; fail "COMPONENTS cuda is refused by a CUDA build's package"; }
elif cmake -S "$tmp/cuda-probe" -B "$tmp/cuda-probe/build" -DCMAKE_PREFIX_PATH="$prefix" >"$tmp/probe.log" 2>&1; then
  fail "COMPONENTS cuda is accepted by a package without the CUDA library"
else
  # CMake wraps the config's message over lines.
  tr -s ' \n' ' ' <"$tmp/probe.log" | grep -q 'built without its CUDA library' ||
    { cat "$tmp/probe.log" >&2; fail "COMPONENTS cuda fails without saying why"; }
fi

# One version: the installed program's, the package's and the header's (as
# the example built against the install prints it).
installed="$("$prefix/bin/routelab" --version | cut -d' ' -f1)"
package="$(sed -n 's/^set(PACKAGE_VERSION "\(.*\)")$/\1/p' "$prefix"/lib*/cmake/routelab/routelabConfigVersion.cmake)"
header="$(head -1 <<<"$gap" | cut -d' ' -f2)"
[ "$installed" = "$package" ] && [ "$installed" = "$header" ] ||
  fail "versions differ: installed routelab --version $installed, package $package, base/version.h $header"
# The Python package, where the build made it: importable from the prefix
# alone, at the same version, with routelab.torch and the type stubs beside it.
if grep -q '^ROUTELAB_PYTHON:BOOL=ON$' "$build/CMakeCache.txt"; then
  site="$prefix/$(sed -n 's/^ROUTELAB_PYTHON_INSTALL_DIR:STRING=//p' "$build/CMakeCache.txt")"
  python_version="$(cd "$tmp" && PYTHONPATH="$site" /usr/bin/python3 -c \
    'import routelab; assert routelab._core is not None, routelab._import_error; print(routelab.__version__)' 2>&1)" ||
    fail "the installed Python package does not import from $site: $python_version"
  [ -f "$site/routelab/torch/attention.py" ] || fail "routelab.torch is not installed beside the module in $site"
  for stub in __init__.pyi _routelab.pyi py.typed; do
    [ -f "$site/routelab/$stub" ] || fail "the type stub routelab/$stub is not installed beside the module in $site"
  done
  [ "$python_version" = "$installed" ] || fail "versions differ: installed routelab --version $installed, Python package $python_version"
fi
echo "test-install: examples built and ran against the installed package, version $installed"
