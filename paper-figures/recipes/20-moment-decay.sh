#!/usr/bin/env bash
# Figure moment-decay: ||E P_n||_op against n with beta^n (Theorem 3, B.5) for
# uniform Householder d = 16 (beta = 7/8), an SO(2) block with a = 1
# (beta = sin 1), Givens d = 8 with a = 1 (beta = 0.960) and Theorem 3's
# non-normal example (strictly below beta^n). Each walk is read at every n up
# to where beta^n nears the noise floor of the split estimate.
# Full: 300000 walks per family (z = 5 interval about +-0.004 at d = 16);
# QUICK=1: 5000.
set -euo pipefail
if [ "${QUICK:-0}" = 1 ]; then N=5000; else N=300000; fi
"$ROUTELAB" sim moment-decay --family householder --d 16 --n 1,2,4,6,8,10,12,14,16,20,24,28,32 --eps 0.1 \
  --samples "$N" --seed 21 --out "$DATA/moment-decay-householder.csv"
"$ROUTELAB" sim moment-decay --family so2 --d 2 --a 1 --n 1,2,3,4,5,6,8,10,12,14,16,18,20 --eps 0.1 \
  --samples "$N" --seed 22 --out "$DATA/moment-decay-so2.csv"
"$ROUTELAB" sim moment-decay --family givens --d 8 --a 1 --n 1,5,10,15,20,30,40,50,60,70,80,90,100 --eps 0.1 \
  --samples "$N" --seed 23 --out "$DATA/moment-decay-givens.csv"
"$ROUTELAB" sim moment-decay --family nonnormal --d 3 --n 1,2,3,4,5,6,8,10,12,14,16,18,20 --eps 0.1 \
  --samples "$N" --seed 24 --out "$DATA/moment-decay-nonnormal.csv"
"$PY" plots/moment_decay.py "$DATA"/moment-decay-{householder,so2,givens,nonnormal}.csv --out "$OUT/moment-decay"
