#include "runs/eval.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>

#include <fmt/core.h>

#include "base/threads.h"
#include "io/output.h"
#include "io/table.h"
#include "runs/memory.h"
#include "runs/run_dir.h"

namespace routelab::runs {

EvalResult evaluate(nn::ModelBackend& model, const std::vector<uint8_t>& stream, int64_t L, std::vector<float>* kept,
                    const std::function<void()>& after_pass) {
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
    if (after_pass) after_pass();
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

EvalResult evaluate(nn::Model<float>& model, const std::vector<uint8_t>& stream, int64_t L) {
  nn::CpuBackend backend(model);
  return evaluate(backend, stream, L);
}

void forward_windows(nn::ModelBackend& model, const std::vector<uint8_t>& stream, int64_t L, int64_t windows,
                     const std::function<void(int64_t w0, int B)>& done) {
  const int batch = eval_batch(L);
  std::vector<int> tokens, targets;
  for (int64_t w0 = 0, pass = 0; w0 < windows; w0 += batch, ++pass) {
    adapt_threads();  // unless the caller fixed them, the cores other processes leave (base/threads.h)
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

void forward_windows(nn::Model<float>& model, const std::vector<uint8_t>& stream, int64_t L, int64_t windows,
                     const std::function<void(int64_t w0, int B)>& done) {
  nn::CpuBackend backend(model);
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

std::string eval_csv_header() { return "scheme,seed,train_len,eval_len,windows,tokens,bits_per_byte,ppl\n"; }
std::string positions_csv_header() { return "scheme,seed,train_len,eval_len,pos_lo,pos_hi,tokens,bits_per_byte\n"; }

std::string csv_with_suffix(const std::string& csv, const std::string& suffix) {
  return (csv.ends_with(".csv") ? csv.substr(0, csv.size() - 4) : csv) + suffix;
}

std::string positions_path(const std::string& eval_csv) { return csv_with_suffix(eval_csv, "-positions.csv"); }

void require_lengths_fit(const RunConfig& c, const std::vector<int64_t>& lengths, std::size_t val_bytes,
                         const std::string& flag, const std::string& run_dir, const nn::BackendFactory& backend) {
  for (int64_t L : lengths)
    if (!c.is_task() && L + 1 > int64_t(val_bytes))
      throw ConfigError(val_bytes < 2 ? fmt::format("{}: the validation stream of {} holds {} bytes, so no window fits "
                                                    "(a window of L bytes predicts L + 1); prepare the corpus with a "
                                                    "longer val.txt",
                                                    flag, run_dir, val_bytes)
                                      : fmt::format("{}: {} is longer than the validation stream of {} ({} bytes); "
                                                    "accepted: at most {}",
                                                    flag, L, run_dir, val_bytes, val_bytes - 1));
  for (int64_t L : lengths)
    require_memory(evaluation_bytes(c.model, L), fmt::format("evaluating at {}", L), backend);
}

TrainedRun load_trained_run(const std::string& run_dir, const std::string& lengths_text,
                            const nn::BackendFactory& backend) {
  TrainedRun r;
  r.config = load_run_dir_config(run_dir);
  try {
    r.lengths = parse_lengths(lengths_text, r.config.model.context);
  } catch (const std::invalid_argument& e) {
    throw ConfigError(std::string("--lengths: ") + e.what());
  }
  const Checkpoint ck = load_run_checkpoint(run_dir, r.config);
  r.step = ck.step;
  // A task run's evaluation sets are generated (runs/task_eval.h).
  if (!r.config.is_task()) r.corpus = data::load_corpus(r.config.corpus);
  require_lengths_fit(r.config, r.lengths, r.corpus.val.size(), "--lengths", run_dir, backend);
  r.model = std::make_unique<nn::Model<float>>(r.config.model, r.config.train.seed);
  r.model->params.assign(ck.params.begin(), ck.params.end());
  return r;
}

std::unique_ptr<nn::ModelBackend> trained_run_backend(TrainedRun& run, const nn::BackendFactory& backend) {
  if (!backend) return std::make_unique<nn::CpuBackend>(*run.model);
  std::unique_ptr<nn::ModelBackend> model = backend(run.config.model, run.config.train.seed);
  model->set_params({run.model->params.begin(), run.model->params.end()});
  return model;
}

std::string evaluate_run(const std::string& run_dir, const std::string& lengths_text, const std::string& eval_csv,
                         bool progress, const nn::BackendFactory& backend, const std::string& losses_csv) {
  const auto start = std::chrono::steady_clock::now();
  if (load_run_dir_config(run_dir).is_task())  // a missing run is named before its outputs
    throw ConfigError(fmt::format("{} was trained on a task, which has no validation stream: evaluate it with "
                                  "evaluate_task_run (routelab eval asks its sets)",
                                  run_dir));
  const auto locks = lock_runs_written({run_dir}, {eval_csv, positions_path(eval_csv), losses_csv});
  OutputFiles files("eval");
  files.input(config_path(run_dir));
  files.input(checkpoint_path(run_dir));
  files.output(eval_csv, "--out");
  files.output(positions_path(eval_csv), "the positions CSV (--out FILE-positions.csv)");
  files.output(eval_csv + ".json", "the sidecar (--out FILE.json)");
  if (!losses_csv.empty()) files.output(losses_csv, "--losses");
  TrainedRun run = load_trained_run(run_dir, lengths_text, backend);
  const RunConfig& c = run.config;
  const data::Corpus& corpus = run.corpus;
  const std::unique_ptr<nn::ModelBackend> device_model = trained_run_backend(run, backend);
  nn::ModelBackend& model = *device_model;
  const std::vector<int64_t>& lengths = run.lengths;
  std::string rows, pos_rows, loss_rows = losses_csv.empty() ? "" : "eval_len,window,position,nats\n";
  nlohmann::json per_length = nlohmann::json::array();
  for (int64_t L : lengths) {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<float> losses;
    const EvalResult r = evaluate(model, corpus.val, L, losses_csv.empty() ? nullptr : &losses);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (std::size_t i = 0; i < losses.size(); ++i)
      loss_rows += fmt::format("{},{},{},{:.9g}\n", L, int64_t(i) / L, int64_t(i) % L, losses[i]);
    const std::string key = fmt::format("{},{},{},{}", c.model.scheme, c.train.seed, c.model.context, L);
    rows += fmt::format("{},{},{},{},{}\n", key, r.windows, r.tokens, format_number(r.bits_per_byte),
                        format_number(r.ppl));
    for (const auto& b : r.bins)
      pos_rows += fmt::format("{},{},{},{},{}\n", key, b.lo, b.hi, b.tokens, format_number(b.bits_per_byte));
    per_length.push_back({{"eval_len", L}, {"windows", r.windows}, {"windows_per_pass", r.batch},
                          {"seconds", secs}, {"tokens_per_s", double(r.tokens) / secs}});
    if (progress)
      fmt::print(stderr, "eval {} L={}: {:.4f} bits/byte, {} windows, {:.0f} tok/s\n", run_dir, L, r.bits_per_byte,
                 r.windows, double(r.tokens) / secs);
  }
  files.set(positions_path(eval_csv), positions_csv_header() + pos_rows);
  files.set(eval_csv, eval_csv_header() + rows);
  if (!losses_csv.empty()) files.set(losses_csv, loss_rows);
  const nlohmann::json side = {
      {"command", "eval"},
      {"run", run_dir},
      {"checkpoint_step", run.step},
      {"device", model.device()},
      {"config", to_json(c)},
      {"protocol",
       {{"stream", "validation"},
        {"windows", "consecutive, non-overlapping: window w holds bytes [w L, w L + L) and predicts bytes "
                    "[w L + 1, w L + L]"},
        {"stride", "L"},
        {"scored", "every position of every window (L per window)"},
        {"positions_csv", positions_path(eval_csv)},
        {"position_bins", "[0,1), [1,2), [2,4), ... [L/2, L)"},
        {"random_angles", "drawn afresh per forward pass (pass ids from 2^36)"}}},
      {"lengths_text", lengths_text},
      {"lengths", per_length}};
  files.set(eval_csv + ".json",
            sidecar_text(eval_csv, side, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()));
  files.commit();
  return rows;
}

}  // namespace routelab::runs
