#!/usr/bin/env bash
# Figure haar-mixing: KS distance of e_1^T P_n e_1 to its Haar law against n
# (Theorems 4, 5) for uniform Householder d = 8, 16, coordinate Householder
# d = 8 (Remark 3: never mixes), Givens d = 8 and heat-dithered coordinate
# reflections d = 4 (Example 6); and E (tr P_n)^2 with tr(T^n) (Proposition 2,
# Remark 3, Example 6). n = 1 .. 256 on a doubling grid (dithered: to 16, as
# it mixes by n = 4; its heat step is a geodesic walk with step h = 0.02, whose
# own moments are the theory column, so h sets only the cost).
# Full: 40000 walks per family; QUICK=1: 4000.
set -euo pipefail
if [ "${QUICK:-0}" = 1 ]; then N=4000; else N=40000; fi
NS=1,2,4,8,16,32,64,128,256
"$ROUTELAB" sim haar-mixing --family householder --normals sphere,coordinate --d 8 --n "$NS" \
  --samples "$N" --seed 31 --out "$DATA/haar-mixing-householder8.csv"
"$ROUTELAB" sim haar-mixing --family householder --d 16 --n "$NS" \
  --samples "$N" --seed 32 --out "$DATA/haar-mixing-householder16.csv"
"$ROUTELAB" sim haar-mixing --family givens --d 8 --a 1 --n "$NS" \
  --samples "$N" --seed 33 --out "$DATA/haar-mixing-givens.csv"
"$ROUTELAB" sim haar-mixing --family dithered --normals coordinate --d 4 --tau 0.5 --heat-h 0.02 --n 1,2,4,8,16 \
  --samples "$N" --seed 34 --out "$DATA/haar-mixing-dithered.csv"
"$PY" plots/haar_mixing.py "$DATA"/haar-mixing-{householder8,householder16,givens,dithered}.csv \
  --out "$OUT/haar-mixing"
