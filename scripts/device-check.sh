#!/usr/bin/env bash
# The one prepared run for a lent GPU (issue 6): build with CUDA, run every
# GPU test against the CPU reference, routelab.torch's modules on the device
# against the CPU (issue 53), then the benchmarks: training tokens/s
# of the GPU-scale configuration (d_model 512, 8 heads, 8 layers, context 512)
# beside PyTorch on the same device, in fp32 and TF32, Householder transport's
# training tokens/s beside rope's, and walk-steps/s of the sims' walks, GPU
# against CPU. Every step's log, and a summary with each
# step's exit status and time, go to $OUT (default out-device/).
#   OUT=/some/dir bash scripts/device-check.sh          # about 10 minutes on an H200
#   QUICK=1 bash scripts/device-check.sh                # one round, fewer steps
# PYTHON names the Python with torch for the peer (default: the first of
# python3, /usr/bin/python3 that imports torch with CUDA).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-out-device}
mkdir -p "$out"
summary="$out/summary.txt"
status=0
step() {
  local name=$1
  shift
  echo "== $name: $*" | tee -a "$summary"
  local t0=$SECONDS
  "$@" >"$out/$name.log" 2>&1
  local rc=$?
  echo "   exit $rc after $((SECONDS - t0)) s" | tee -a "$summary"
  [ "$rc" -eq 0 ] || status=1
  return "$rc"
}

{ date -u; nvidia-smi; nvcc --version; git log -1 --oneline; } >"$out/machine.txt" 2>&1
if [ -z "${PYTHON:-}" ]; then
  for p in python3 /usr/bin/python3; do
    if "$p" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
      PYTHON=$p
      break
    fi
  done
fi
echo "peer python: ${PYTHON:-none with torch and CUDA}" | tee -a "$summary"

# The GPU tests (a skip is a failure there), then routelab and the GPU bench
# in the same build folder.
step gpu-tests bash scripts/test-gpu.sh || true
# routelab.torch on the device: every module and function against the CPU
# (tests/python/test_torch_modules.py with ROUTELAB_TEST_DEVICE), the Philox
# known answers there, and the functions' tests; pure Python, no build.
if [ -n "${PYTHON:-}" ]; then
  step torch-modules env ROUTELAB_TEST_DEVICE=cuda PYTHONPATH=python "$PYTHON" tests/python/test_torch_modules.py || true
  step torch-functions env PYTHONPATH=python "$PYTHON" tests/python/test_torch_functions.py || true
fi
step configure cmake -S . -B build-gpu -DROUTELAB_BENCH=ON || exit 1
step build cmake --build build-gpu -j"$(nproc)" --target routelab bench_gpu_walks || exit 1

rounds=3 steps=30 scale=1
if [ -n "${QUICK:-}" ]; then rounds=1 steps=8 scale=0.1; fi
if [ -n "${PYTHON:-}" ]; then
  for math in fp32 tf32; do
    flag=""
    [ "$math" = tf32 ] && flag=--tf32
    step "train-$math" "$PYTHON" bench/run_train.py --bin build-gpu/routelab --device cuda $flag \
      --rounds "$rounds" --steps "$steps" --warmup 3 --schemes rope,learned_qkv \
      --eval-run trained --eval-lengths 16x,64x --python "$PYTHON" --out "$out/train-$math.csv" || true
  done
else
  echo "   no Python with torch on CUDA: training benchmark skipped" | tee -a "$summary"
  status=1
fi
# Householder transport on the device (blocked path) against rope, one
# build, alternated: training tokens/s at the GPU-scale model, no peer.
step train-householder "${PYTHON:-python3}" bench/run_train.py --bin build-gpu/routelab --device cuda \
  --between rope,householder_qkv,householder_qk --rounds 1 --steps "$steps" --warmup 3 \
  --out "$out/train-householder.csv" || true
step gpu-walks build-gpu/bench/bench_gpu_walks --scale "$scale" || true
# The CLI end to end on the device: a short run of each scheme trains and
# evaluates on the GPU, and its checkpoint evaluates on the CPU too
# (householder_qkv: the blocked transport kernels, cuda/householder_chunks.h).
for scheme in learned_qkv_forget householder_qkv; do
  step "cli-$scheme" bash -c "set -e; rm -rf '$out/run-$scheme'; cat >'$out/$scheme.toml' <<TOML
[model]
d_model = 64
heads = 4
layers = 2
context = 64
scheme = \"$scheme\"
[train]
batch = 8
steps = 50
warmup = 5
checkpoint_every = 25
[data]
corpus = \"tests/data/brown-slice\"
TOML
build-gpu/routelab train --config '$out/$scheme.toml' --out '$out/run-$scheme' --device cuda --quiet
build-gpu/routelab eval --run '$out/run-$scheme' --lengths 1x,16x --device cuda --quiet --out '$out/eval-$scheme-cuda.csv'
build-gpu/routelab eval --run '$out/run-$scheme' --lengths 1x,16x --quiet --out '$out/eval-$scheme-cpu.csv'
paste -d'\n' '$out/eval-$scheme-cuda.csv' '$out/eval-$scheme-cpu.csv'" || true
done
step cli-sim bash -c "set -e
build-gpu/routelab sim spectral-gap --family householder --d 8 --samples 100000 --seed 1 --device cuda --out '$out/gap-cuda.csv'
build-gpu/routelab sim spectral-gap --family householder --d 8 --samples 100000 --seed 1 --out '$out/gap-cpu.csv'
paste -d'\n' '$out/gap-cuda.csv' '$out/gap-cpu.csv' | head -20" || true
echo "device-check: exit $status (logs in $out)" | tee -a "$summary"
exit "$status"
