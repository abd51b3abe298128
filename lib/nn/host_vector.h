// The CPU model's buffers (parameters, gradients, activations, optimiser
// moments) start on Eigen's widest packet boundary. Eigen peels the unaligned
// head of a vectorised sum or exp off to scalar code, so a buffer's address
// mod 64 picks the order of the sums and which elements take the scalar
// path: with plain std::vector, whose address depends on the heap's history,
// the second run trained in one process came out in one of two byte patterns
// (1e-9 apart), depending on how the threads had allocated before it.
#pragma once

#include <vector>

#include <Eigen/Core>

namespace routelab::nn {

template <class T>
using HostVector = std::vector<T, Eigen::aligned_allocator<T>>;

}  // namespace routelab::nn
