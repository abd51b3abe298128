#!/usr/bin/env bash
# Score tails against Hoeffding (Theorem 2), Levy and the exact Haar law
# (Theorem 5, after and before mixing) and Remark 3's coordinate normals.
# Full size: 1e7 walks per point, which resolves tails down to 1e-6 with about
# 30% relative error (plain Monte Carlo, no importance sampling); QUICK=1: 2e4.
set -euo pipefail
if [ "$QUICK" = 1 ]; then N=20000; else N=10000000; fi
"$ROUTELAB" sim score-tail --family so2 --d 64 --a 1 --n 10,30 --s 0.3,0.4,0.5,0.6,0.7,0.8 --M 8 \
  --samples "$N" --out "$DATA/score-tail-so2.csv"
"$ROUTELAB" sim score-tail --family householder --d 16 --n 1,60 --s 0.3,0.4,0.5,0.6,0.7,0.8,0.9 --M 8 \
  --samples "$N" --out "$DATA/score-tail-householder.csv"
"$ROUTELAB" sim score-tail --family householder --normals coordinate --d 8 --n 40 --s 0.3,0.5,0.7,0.9 --M 8 \
  --samples "$(( N / 100 ))" --out "$DATA/score-tail-coordinate.csv"
"$PY" plots/score_tail.py "$DATA/score-tail-so2.csv" "$DATA/score-tail-householder.csv" \
  "$DATA/score-tail-coordinate.csv" --out "$OUT/score-tail"
