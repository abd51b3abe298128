// The positional schemes' angles on a CUDA device, reproducing nn/scheme.cpp's
// AngleSource step for step (its tests: tests/test_gpu_model.cpp). Layout as
// on the CPU: theta[(b T + t) nb + j] in double, nb = d_head / 2; every pointer
// is device memory.
//   rope     theta = wrap(t f_j)
//   random   theta = wrap(running sum over s <= t of w_j (2 u - 1)), u the
//            CPU's uniforms: draw t nb + j of the stream of batch element b
//            (streams[b], named on the host with nn::random_angle_stream), so
//            the GPU draws the CPU's numbers bit for bit
//   learned  theta = wrap(running sum over s <= t of table[token_s][j])
//   projected theta = wrap(running sum over s <= t of psi[(b T + s) nb + j]),
//            psi the layer's increments W_psi xhat + b_psi (a matmul before)
// wrap(x) = wrap_remainder(x) = remainder(x, 2 pi) (base/angles.h, the CPU's
// function too), exact on both sides. Running sums are serial
// in t per (b, j), in double, with the CPU's rounding (see angles.cu).
#pragma once

#include <cstdint>

namespace routelab::cuda {

void rope_angles(double* theta, const double* freq, int B, int T, int nb);
void random_angles(double* theta, const double* half_width, uint64_t seed, const uint64_t* streams, int B, int T,
                   int nb);
void learned_angles(double* theta, const float* table, const int* tokens, int B, int T, int nb);
// dtable += d loss / d table from dtheta: entry (token_s, j) collects the
// suffix sum of dtheta from t = s on. One thread per j walks b, then t
// backwards, exactly the CPU's order: deterministic, no atomics.
void learned_angles_backward(float* dtable, const double* dtheta, const int* tokens, int B, int T, int nb);
void projected_angles(double* theta, const float* psi, int B, int T, int nb);
// dpsi += d loss / d psi: entry (b, s, j) gets the suffix sum of dtheta from
// t = s on, one thread per (b, j) in the CPU's order.
void projected_angles_backward(float* dpsi, const double* dtheta, int B, int T, int nb);

// cs[2 i] = cos(theta[i]), cs[2 i + 1] = sin(theta[i]), rounded to float;
// n = B T nb.
void angle_cos_sin(float* cs, const double* theta, int64_t n);

}  // namespace routelab::cuda
