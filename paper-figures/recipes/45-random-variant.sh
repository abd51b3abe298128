#!/usr/bin/env bash
# The paper's random variant (note after Example 1): E S_n against distance n
# and each block's first harmonic, d = 64, every block, n from 1 to 1e5
# (QUICK=1: to 1e4, fewer walks).
set -euo pipefail
GRID=1,2,5,10,20,50,100,128,200,500,1000,2000,5000,8192,10000
if [ "$QUICK" = 1 ]; then N=100; else N=400; GRID=$GRID,20000,50000,100000; fi
"$ROUTELAB" sim random-variant --d 64 --base 10000 --eps 0.01 --n "$GRID" --block all \
  --samples "$N" --out "$DATA/random-variant.csv"
"$PY" plots/random_variant.py "$DATA/random-variant.csv" --out "$OUT/random-variant"
