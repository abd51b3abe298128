#include "nn/eval.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/core.h>

namespace routelab::nn {

int eval_batch(int64_t L) { return int(std::max<int64_t>(1, 8192 / L)); }

EvalResult evaluate(ModelBackend& model, const std::vector<uint8_t>& stream, int64_t L, std::vector<float>* kept) {
  EvalResult r;
  r.eval_len = L;
  r.windows = stream.size() > 0 ? int64_t(stream.size() - 1) / L : 0;
  if (r.windows == 0)
    throw std::invalid_argument(fmt::format("the validation stream ({} bytes) is shorter than one window of {} + 1",
                                            stream.size(), L));
  r.batch = eval_batch(L);
  for (int64_t lo = 0; lo < L; lo = lo == 0 ? 1 : 2 * lo) r.bins.push_back({lo, std::min(L, lo == 0 ? 1 : 2 * lo), 0, 0});
  std::vector<double> bin_nats(r.bins.size(), 0.0);
  double total_nats = 0;
  forward_windows(model, stream, L, r.windows, [&](int64_t, int B) {
    const float* losses = model.losses();
    if (kept) kept->insert(kept->end(), losses, losses + int64_t(B) * L);
    for (int b = 0; b < B; ++b)
      for (std::size_t k = 0; k < r.bins.size(); ++k)
        for (int64_t t = r.bins[k].lo; t < r.bins[k].hi; ++t) {
          bin_nats[k] += losses[b * L + t];
          total_nats += losses[b * L + t];
        }
  });
  r.tokens = r.windows * L;
  r.bits_per_byte = total_nats / double(r.tokens) / std::log(2.0);
  r.ppl = std::exp(total_nats / double(r.tokens));
  for (std::size_t k = 0; k < r.bins.size(); ++k) {
    r.bins[k].tokens = r.windows * (r.bins[k].hi - r.bins[k].lo);
    r.bins[k].bits_per_byte = bin_nats[k] / double(r.bins[k].tokens) / std::log(2.0);
  }
  return r;
}

EvalResult evaluate(Model<float>& model, const std::vector<uint8_t>& stream, int64_t L) {
  CpuBackend backend(model);
  return evaluate(backend, stream, L);
}

void forward_windows(ModelBackend& model, const std::vector<uint8_t>& stream, int64_t L, int64_t windows,
                     const std::function<void(int64_t w0, int B)>& done) {
  const int batch = eval_batch(L);
  std::vector<int> tokens, targets;
  for (int64_t w0 = 0, pass = 0; w0 < windows; w0 += batch, ++pass) {
    const int B = int(std::min<int64_t>(batch, windows - w0));
    tokens.resize(std::size_t(B) * L);
    targets.resize(tokens.size());
    for (int b = 0; b < B; ++b)
      for (int64_t t = 0; t < L; ++t) {
        tokens[b * L + t] = stream[(w0 + b) * L + t];
        targets[b * L + t] = stream[(w0 + b) * L + t + 1];
      }
    model.forward(tokens.data(), targets.data(), B, int(L), kEvalPass + uint64_t(pass), false, 0);
    done(w0, B);
  }
}

void forward_windows(Model<float>& model, const std::vector<uint8_t>& stream, int64_t L, int64_t windows,
                     const std::function<void(int64_t w0, int B)>& done) {
  CpuBackend backend(model);
  forward_windows(backend, stream, L, windows, done);
}

std::vector<int64_t> parse_lengths(const std::string& text, int64_t train_len) {
  std::vector<int64_t> out;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const std::size_t end = std::min(text.find(',', pos), text.size());
    const std::string item = text.substr(pos, end - pos);
    const bool mult = !item.empty() && item.back() == 'x';
    const std::string digits = mult ? item.substr(0, item.size() - 1) : item;
    if (digits.empty() || digits.size() > 9 || !std::all_of(digits.begin(), digits.end(), ::isdigit) ||
        std::stoll(digits) == 0)
      throw std::invalid_argument(fmt::format("'{}' is not a length; accepted: positive multiples of the training "
                                              "length like 4x, or positive integers, separated by commas",
                                              item));
    out.push_back(mult ? std::stoll(digits) * train_len : std::stoll(digits));
    pos = end + 1;
  }
  return out;
}

}  // namespace routelab::nn
