// Passkey retrieval: a five-digit key planted at a chosen depth of a window
// of validation text, asked for at the window's end. The key's digits in the
// answer are teacher forced, so one forward pass scores them all: a trial
// counts as retrieved when every digit is the model's top prediction.
//   ... filler ... The pass key is 48213. Remember it. ... filler ...
//   What is the pass key? The pass key is 48213
// depth 0 puts the needle at the window's start, 1 just before the question.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "data/passkey_sample.h"
#include "nn/backend.h"
#include "runs/eval.h"

namespace routelab::runs {

struct PasskeyResult {
  int64_t eval_len = 0;
  double depth = 0;
  int trials = 0;
  double accuracy = 0;        // all digits right
  double digit_accuracy = 0;  // digits right
  double key_bits = 0;        // mean -log2 p(digit) over the asked digits
};

// The sample itself is data (data/passkey_sample.h): training mixes it in too.
using data::passkey_min_length;
using data::passkey_sample;

// after_pass, when given, is called after each forward pass (WorkHooks).
PasskeyResult passkey_eval(nn::ModelBackend& model, int vocab, const std::vector<uint8_t>& text, int64_t L,
                           double depth, int trials, uint64_t seed, const std::function<void()>& after_pass = nullptr);

// What passkey_run accepts: trials per length and depth, and seeds.
inline constexpr int kMaxPasskeyTrials = 100000;
inline constexpr uint64_t kMaxPasskeySeed = uint64_t(1) << 62;

std::string passkey_csv_header();
// FILE.csv -> FILE-passkey.csv (an experiment's passkey CSV beside its eval CSV)
std::string passkey_path(const std::string& eval_csv);

// Runs every length x depth for a trained run; writes FILE (columns scheme,
// seed, train_len, eval_len, depth, trials, accuracy, digit_accuracy,
// key_bits_per_byte) and its sidecar. Returns the CSV text. `backend` says
// where the model runs (empty: the CPU); `hooks` are called from its loop,
// one unit per length and depth, and when one throws nothing is written.
std::string passkey_run(const std::string& run_dir, const std::string& lengths, const std::vector<double>& depths,
                        int64_t trials, uint64_t seed, const std::string& out_csv, bool progress,
                        const nn::BackendFactory& backend = {}, const WorkHooks& hooks = {});

}  // namespace routelab::runs
