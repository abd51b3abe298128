#include "data/passkey_sample.h"

#include <cmath>
#include <stdexcept>

#include <fmt/core.h>

#include "rng/stream.h"

namespace routelab::data {

namespace {

// Its trials' keys and filler offsets: apart from every other stream.
constexpr uint64_t kPasskeyStream = uint64_t(1) << 61;

}  // namespace

int64_t passkey_min_length() {
  return int64_t(kPasskeyNeedle.size() + kPasskeyQuestion.size()) - 4 + 2 * kPasskeyDigits + 16;
}

std::vector<uint8_t> passkey_sample(const std::vector<uint8_t>& text, int64_t L, double depth, uint64_t seed,
                                    uint64_t trial) {
  Stream s(seed, kPasskeyStream | trial);
  std::string key;
  for (int d = 0; d < kPasskeyDigits; ++d) key += char('0' + s.below(10));
  const std::string needle = fmt::format(fmt::runtime(kPasskeyNeedle), key);
  const std::string question = fmt::format(fmt::runtime(kPasskeyQuestion), key);
  const int64_t filler = L + 1 - int64_t(needle.size() + question.size());
  if (filler < 16) throw std::invalid_argument(fmt::format("passkey needs windows of at least {} bytes", passkey_min_length()));
  if (int64_t(text.size()) <= filler) throw std::invalid_argument("the filler text is shorter than the window");
  const uint64_t off = s.below(uint64_t(int64_t(text.size()) - filler));
  const int64_t at = std::llround(depth * double(filler));
  std::vector<uint8_t> out;
  out.reserve(std::size_t(L) + 1);
  out.insert(out.end(), text.begin() + off, text.begin() + off + at);
  out.insert(out.end(), needle.begin(), needle.end());
  out.insert(out.end(), text.begin() + off + at, text.begin() + off + filler);
  out.insert(out.end(), question.begin(), question.end());
  return out;
}

}  // namespace routelab::data
