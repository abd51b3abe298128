// A passkey sample: a five-digit key planted at a chosen depth of a window
// of text, asked for at the window's end.
//   ... filler ... The pass key is 48213. Remember it. ... filler ...
//   What is the pass key? The pass key is 48213
// depth 0 puts the needle at the window's start, 1 just before the question.
// Evaluation asks it (runs/passkey.h); training can mix it into the batches
// (`[train] passkey_fraction`), so it lives with the data below both.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace routelab::data {

inline constexpr int kPasskeyDigits = 5;
inline constexpr std::string_view kPasskeyNeedle = " The pass key is {}. Remember it. ";
inline constexpr std::string_view kPasskeyQuestion = " What is the pass key? The pass key is {}";

// The shortest window that holds needle, question and some filler.
int64_t passkey_min_length();

// One trial's bytes: L + 1 of them (inputs are the first L, targets the last
// L); the key's digits are the last five bytes. Filler comes from `text`; the
// key and the filler's offset from the stream (seed, trial).
std::vector<uint8_t> passkey_sample(const std::vector<uint8_t>& text, int64_t L, double depth, uint64_t seed,
                                    uint64_t trial);

}  // namespace routelab::data
