// Evaluation far past the training length: the validation stream cut into
// consecutive non-overlapping windows of L bytes (window w predicts bytes
// w L + 1 .. w L + L from the L before them), every position scored. Reports
// bits per byte and perplexity, and the loss by position inside the window in
// log2 bins [0, 1), [1, 2), [2, 4), ..., so a break at some distance shows.
// Attention streams over key tiles, and layers share one set of buffers, so
// memory grows linearly in L.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "nn/backend.h"
#include "nn/model.h"

namespace routelab::nn {

struct PositionBin {
  int64_t lo, hi;  // positions [lo, hi) of a window
  int64_t tokens;
  double bits_per_byte;
};

struct EvalResult {
  int64_t eval_len = 0, windows = 0, tokens = 0;
  double bits_per_byte = 0, ppl = 0;
  std::vector<PositionBin> bins;
  int batch = 0;  // windows per forward pass
};

// Windows per forward pass at length L: about 8192 positions per pass.
int eval_batch(int64_t L);

// Random angles of evaluation pass i use pass id kEvalPass + i, apart from
// every training step's.
inline constexpr uint64_t kEvalPass = uint64_t(1) << 36;

// `losses`, when given, gets every scored position's loss (nats) appended,
// window by window, position by position (routelab eval --losses).
EvalResult evaluate(ModelBackend& model, const std::vector<uint8_t>& stream, int64_t L,
                    std::vector<float>* losses = nullptr);
// The same on a CPU model the caller holds.
EvalResult evaluate(Model<float>& model, const std::vector<uint8_t>& stream, int64_t L);

// The model over the first `windows` windows of L bytes as evaluate() runs
// them (eval_batch(L) per forward pass, pass ids kEvalPass + pass, so the same
// random angles); after each pass, done(w0, B) for windows [w0, w0 + B).
void forward_windows(ModelBackend& model, const std::vector<uint8_t>& stream, int64_t L, int64_t windows,
                     const std::function<void(int64_t w0, int B)>& done);
void forward_windows(Model<float>& model, const std::vector<uint8_t>& stream, int64_t L, int64_t windows,
                     const std::function<void(int64_t w0, int B)>& done);

// "1x,2x,64x" (multiples of the training length) or plain lengths "128,512".
// Throws std::invalid_argument naming the bad item.
std::vector<int64_t> parse_lengths(const std::string& text, int64_t train_len);

}  // namespace routelab::nn
