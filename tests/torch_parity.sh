#!/bin/sh
# PyTorch parity (issue 18), the ctest driver: runs tests/torch_parity.py
# with a Python that has torch (PY, else /usr/bin/python3, else python3), or
# exits 77 (ctest's SKIP_RETURN_CODE) saying why not.
#   tests/torch_parity.sh ROUTELAB_BINARY [torch_parity.py options]
here=$(cd "$(dirname "$0")" && pwd)
py=${PY:-/usr/bin/python3}
[ -x "$py" ] || py=python3
if ! "$py" -c "import numpy, torch" 2>/dev/null; then
  echo "SKIP: $py cannot import numpy and torch (scripts/setup-bench.sh installs python3-torch)"
  exit 77
fi
routelab=$1
shift
exec "$py" "$here/torch_parity.py" --routelab "$routelab" "$@"
