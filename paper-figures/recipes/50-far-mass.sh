#!/usr/bin/env bash
# Figure far-mass: rho_D against M_L with Proposition 3's lower bound, at a few
# logit bounds lambda (K = 1). Far logits lambda q^T P k from nested uniform
# Householder routes in d = 8, near logits at +lambda; the far set is streamed.
# Full: M_L = 10 .. 1e7 (4 points per decade), 16 routes per curve (about a
# minute and a half of CPU, 2 min wall on two busy cores). Quick: M_L up to 1e5, 4 routes, 4 s.
set -euo pipefail
if [ "$QUICK" = 1 ]; then
  ML=10,30,100,300,1000,3000,10000,30000,100000; ROUTES=4; SAMPLES=10000
else
  ML=$(/usr/bin/python3 -c 'print(",".join(str(round(10 ** (e / 4))) for e in range(4, 29)))'); ROUTES=16; SAMPLES=100000
fi
"$ROUTELAB" sim far-mass --family householder --d 8 --K 1 --lambda 1,2.5,5 --gap 0.5 --ML "$ML" \
  --routes "$ROUTES" --samples "$SAMPLES" --out "$DATA/far-mass.csv"
"$PY" plots/far_mass.py "$DATA/far-mass.csv" --out "$OUT/far-mass"
