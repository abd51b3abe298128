// The forget gate's running sums on a CUDA device: the same functions,
// layouts and semantics as nn/forget_gate.h (z (B, T, H) -> cum (B, H, T),
// running sums of log sigmoid in double; backward writes dz). One thread per
// (b, h) walks t in the CPU's order; device pointers.
#pragma once

namespace routelab::cuda {

void forget_gate_forward(float* cum, const float* z, int B, int T, int H);
void forget_gate_backward(float* dz, const float* dcum, const float* z, int B, int T, int H);

}  // namespace routelab::cuda
