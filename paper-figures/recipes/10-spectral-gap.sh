#!/usr/bin/env bash
# Figure spectral-gap: beta = ||E M||_op against each family's parameter with
# its closed form (Assumption 1; Examples 1-4, heat kernel, Matrix-Fisher).
# One sim call per family, each sweeping its parameter finely enough (19-40
# points) that the theory column reads as a curve. Full: 100000 steps per
# point (z = 5 interval about +-0.01); QUICK=1: 5000.
set -euo pipefail
if [ "${QUICK:-0}" = 1 ]; then N=5000; else N=100000; fi
grid() { "$PY" -c "import math; lo, hi, k = $1, $2, $3; print(','.join(f'{lo + (hi - lo) * i / (k - 1):.6g}' for i in range(k)))"; }
"$ROUTELAB" sim spectral-gap --family so2 --d 2 --a "$(grid 0.1 2*math.pi 40)" \
  --samples "$N" --seed 11 --out "$DATA/spectral-gap-so2.csv"
"$ROUTELAB" sim spectral-gap --family givens --d 8 --a "$(grid 0.1 2*math.pi 40)" \
  --samples "$N" --seed 12 --out "$DATA/spectral-gap-givens.csv"
"$ROUTELAB" sim spectral-gap --family householder --normals sphere,coordinate \
  --d 2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,20,24,28,32 \
  --samples "$N" --seed 13 --out "$DATA/spectral-gap-householder.csv"
"$ROUTELAB" sim spectral-gap --family axis3 --d 3 --theta "$(grid math.pi/40 39*math.pi/40 39)" \
  --samples "$N" --seed 14 --out "$DATA/spectral-gap-axis3.csv"
"$ROUTELAB" sim spectral-gap --family heat --d 3 --tau "$(grid 0.05 4 32)" \
  --samples "$N" --seed 15 --out "$DATA/spectral-gap-heat.csv"
"$ROUTELAB" sim spectral-gap --family fisher --d 2 --kappa "$(grid 0.05 4 32)" \
  --samples "$N" --seed 16 --out "$DATA/spectral-gap-fisher.csv"
"$PY" plots/spectral_gap.py "$DATA"/spectral-gap-{so2,givens,householder,axis3,heat,fisher}.csv \
  --out "$OUT/spectral-gap"
