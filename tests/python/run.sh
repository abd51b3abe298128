#!/bin/sh
# The ctest driver of tests/python/ and examples/python/: runs one script with
# Debian's interpreter (PY overrides it; a python3 earlier on PATH may be one
# without numpy or torch) and PYTHONPATH set to the routelab package's folder,
# or exits 77 (ctest's SKIP_RETURN_CODE) saying why when a module the script
# needs is not installed.
#   tests/python/run.sh PACKAGE_DIR MODULE[,MODULE...] SCRIPT.py [args...]
dir=$1
needs=$2
script=$3
shift 3
py=${PY:-/usr/bin/python3}
[ -x "$py" ] || py=python3
for m in $(echo "$needs" | tr , ' '); do
  if ! PYTHONPATH="$dir" "$py" -c "import $m" 2>/dev/null; then
    echo "SKIP: $py cannot import $m (scripts/setup.sh installs it from Debian's packages)"
    exit 77
  fi
done
PYTHONPATH="$dir" exec "$py" "$script" "$@"
