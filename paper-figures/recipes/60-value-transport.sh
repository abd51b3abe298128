#!/usr/bin/env bash
# Value interference against L (B.8, Theorem 7): position-only (RoPE) max_b q_{b,L},
# QK-only rho_D and accumulated (QKV) max_b |t_b| with Theorem 7's bound; d = 64,
# RoPE base 10000, uniform far weights on [33, L] with rho_D = 0.2, value steps
# omega_b + U[-1, 1] (beta = sin 1). Full: L = 2^8..2^18, 200 queries per L
# (1-2 minutes on two cores); quick: L = 2^8..2^15, 20 queries (a few seconds).
set -euo pipefail
if [ "$QUICK" = 1 ]; then
  L=256,512,1024,2048,4096,8192,16384,32768; N=20
else
  L=256,512,1024,2048,4096,8192,16384,32768,65536,131072,262144; N=200
fi
"$ROUTELAB" sim value-transport --part coherence --blocks 32 --a 1 --w 33 --rho 0.2 --L "$L" \
  --samples "$N" --out "$DATA/value-transport.csv"
"$PY" plots/value_transport.py "$DATA/value-transport.csv" --out "$OUT/value-transport"
