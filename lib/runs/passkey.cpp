#include "runs/passkey.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>

#include <fmt/core.h>

#include "base/threads.h"
#include "data/brown.h"
#include "io/output.h"
#include "io/table.h"
#include "rng/stream.h"
#include "runs/eval.h"
#include "runs/memory.h"

namespace routelab::runs {

namespace {

// Random angles of passkey passes: apart from training and evaluation.
constexpr uint64_t kPasskeyPass = uint64_t(1) << 37;

}  // namespace

std::string passkey_path(const std::string& eval_csv) { return csv_with_suffix(eval_csv, "-passkey.csv"); }

std::string passkey_csv_header() {
  return "scheme,seed,train_len,eval_len,depth,trials,accuracy,digit_accuracy,key_bits_per_byte\n";
}

PasskeyResult passkey_eval(nn::ModelBackend& model, int vocab, const std::vector<uint8_t>& text, int64_t L,
                           double depth, int trials, uint64_t seed, const std::function<void()>& after_pass) {
  PasskeyResult r;
  r.eval_len = L;
  r.depth = depth;
  r.trials = trials;
  const int V = vocab;
  const int batch = eval_batch(L);
  std::vector<int> tokens, targets;
  int all_right = 0, digits_right = 0;
  double nats = 0;
  for (int t0 = 0, pass = 0; t0 < trials; t0 += batch, ++pass) {
    adapt_threads();  // unless the caller fixed them, the cores other processes leave (base/threads.h)
    const int B = std::min(batch, trials - t0);
    tokens.resize(std::size_t(B) * L);
    targets.resize(tokens.size());
    for (int b = 0; b < B; ++b) {
      const auto sample = passkey_sample(text, L, depth, seed, uint64_t(t0 + b));
      for (int64_t t = 0; t < L; ++t) {
        tokens[b * L + t] = sample[t];
        targets[b * L + t] = sample[t + 1];
      }
    }
    model.forward(tokens.data(), targets.data(), B, int(L), kPasskeyPass + uint64_t(pass), false, 0);
    const float* logits = model.logits();
    const float* losses = model.losses();
    for (int b = 0; b < B; ++b) {
      int right = 0;
      for (int64_t t = L - data::kPasskeyDigits; t < L; ++t) {
        const float* l = logits + (b * L + t) * V;
        right += int(std::max_element(l, l + V) - l) == targets[b * L + t];
        nats += losses[b * L + t];
      }
      digits_right += right;
      all_right += right == data::kPasskeyDigits;
    }
    if (after_pass) after_pass();
  }
  r.accuracy = double(all_right) / trials;
  r.digit_accuracy = double(digits_right) / (double(trials) * data::kPasskeyDigits);
  r.key_bits = nats / (double(trials) * data::kPasskeyDigits) / std::log(2.0);
  return r;
}

std::string passkey_run(const std::string& run_dir, const std::string& lengths_text, const std::vector<double>& depths,
                        int64_t trials, uint64_t seed, const std::string& out_csv, bool progress,
                        const nn::BackendFactory& backend, const WorkHooks& hooks) {
  const auto start = std::chrono::steady_clock::now();
  for (double d : depths)
    if (!(d >= 0 && d <= 1)) throw ConfigError("--depths: each depth must be a fraction in [0, 1]");
  if (depths.empty()) throw ConfigError("--depths: name at least one fraction in [0, 1]");
  if (trials < 1 || trials > kMaxPasskeyTrials)
    throw ConfigError(fmt::format("--trials: {} is not accepted; an integer in [1, {}]", trials, kMaxPasskeyTrials));
  if (seed > kMaxPasskeySeed)
    throw ConfigError(fmt::format("--seed: {} is not accepted; an integer in [0, 2^62]", seed));
  if (load_run_dir_config(run_dir).is_task())  // a missing run is named before its outputs
    throw ConfigError(fmt::format("{} was trained on a task; passkeys are planted in corpus text (routelab eval "
                                  "asks a task run's own sets)",
                                  run_dir));
  const auto locks = lock_runs_written({run_dir}, {out_csv});
  OutputFiles files("passkey");
  files.input(config_path(run_dir));
  files.input(checkpoint_path(run_dir));
  files.output(out_csv, "--out");
  files.output(out_csv + ".json", "the sidecar --out FILE.json");
  TrainedRun run = load_trained_run(run_dir, lengths_text, backend);
  const RunConfig& c = run.config;
  const std::unique_ptr<nn::ModelBackend> model = trained_run_backend(run, backend);
  for (int64_t L : run.lengths)
    if (L < passkey_min_length())
      throw ConfigError(fmt::format("--lengths: {} is too short for a passkey window; accepted: at least {}", L,
                                    passkey_min_length()));
  std::string rows;
  const std::size_t units = run.lengths.size() * depths.size();
  std::size_t done = 0;
  for (int64_t L : run.lengths)
    for (double d : depths) {
      const PasskeyResult r = passkey_eval(*model, c.model.vocab, run.corpus.val, L, d, int(trials), seed, hooks.after_pass);
      rows += fmt::format("{},{},{},{},{},{},{},{},{}\n", c.model.scheme, c.train.seed, c.model.context, L,
                          format_number(d), trials, format_number(r.accuracy), format_number(r.digit_accuracy),
                          format_number(r.key_bits));
      if (progress)
        fmt::print(stderr, "passkey {} L={} depth={}: {:.2f} retrieved, {:.2f} of digits\n", run_dir, L, d,
                   r.accuracy, r.digit_accuracy);
      if (hooks.after_unit) hooks.after_unit(++done, units);
    }
  const std::string csv = passkey_csv_header() + rows;
  files.set(out_csv, csv);
  files.set(out_csv + ".json", sidecar_text(out_csv,
                {{"command", "passkey"},
                 {"run", run_dir},
                 {"device", model->device()},
                 {"checkpoint_step", run.step},
                 {"config", to_json(c)},
                 {"trials", trials},
                 {"depths", depths},
                 {"lengths_text", lengths_text},
                 {"seed", seed},
                 {"protocol",
                  {{"needle", std::string(data::kPasskeyNeedle)},
                   {"question", std::string(data::kPasskeyQuestion)},
                   {"digits", data::kPasskeyDigits},
                   {"filler", "a uniform slice of the validation stream per trial"},
                   {"depth", "fraction of the filler before the needle"},
                   {"scoring", "teacher forced: the key's digits after the question; retrieved = every digit top-1"}}}},
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()));
  files.commit();
  return csv;
}

}  // namespace routelab::runs
