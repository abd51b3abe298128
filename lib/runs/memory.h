// What a model will allocate, checked against the machine before it does
// (issue 16: impossible sizes ended in std::bad_alloc and exit status 1).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "nn/backend.h"
#include "runs/config.h"

namespace routelab::runs {

// Windows per evaluation pass at length L: about 8192 positions per pass, so
// the arena stays near one size whatever the length (runs/eval.h).
int eval_batch(int64_t L);

// Bytes of a training run on the CPU: parameters, gradients and AdamW's two
// moments, and the activation arena with its gradient arena for a batch of
// B x T.
std::size_t training_bytes(const nn::ModelConfig& m, int B, int64_t T);
// Bytes of evaluation at window length L: parameters and the shared arena for
// eval_batch(L) windows.
std::size_t evaluation_bytes(const nn::ModelConfig& m, int64_t L);
// What this process may still allocate on the host: the machine's
// available memory (MemAvailable of /proc/meminfo), and no more than its
// address-space and data limits (RLIMIT_AS, RLIMIT_DATA: `ulimit -v`, `-d`)
// leave above what it has mapped already. 0 when none of them can be read,
// and then no check is made.
std::size_t available_memory_bytes();
// ConfigError naming `what` and both sizes when `bytes` exceeds what is
// available: on the device of `backend` when it says what its device has
// free (nn::BackendFactory::free_bytes), else on the host.
void require_memory(std::size_t bytes, const std::string& what, const nn::BackendFactory& backend = {});

}  // namespace routelab::runs
