// Trains a tiny byte-level transformer through the library (not the CLI), then
// evaluates its final checkpoint at the training length and past it.
//   train_tiny CORPUS_DIR RUN_DIR
// CORPUS_DIR holds train.txt, val.txt and SHA256SUMS (data/brown after
// scripts/fetch-corpus.sh, or the small tests/data/brown-slice); RUN_DIR must
// not exist yet: it gets config.toml, train.csv and checkpoint.bin, as
// `routelab train` writes them, so `routelab eval --run RUN_DIR` reads it too.
#include <cstdio>
#include <exception>

#include "runs/config.h"        // RunConfig: every key of the TOML, with defaults
#include "runs/eval.h"          // load_trained_run (config, checked checkpoint, model, corpus); evaluate
#include "runs/train.h"         // train_run
#include "base/version.h"

using namespace routelab;

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: train_tiny CORPUS_DIR RUN_DIR (a folder that does not exist yet)\n");
    return 2;
  }
  try {
    // The configuration a TOML file would give (runs/config.h), set in code.
    runs::RunConfig c;
    c.model.d_model = 32, c.model.heads = 2, c.model.layers = 1, c.model.mlp_ratio = 2;
    c.model.context = 32;        // the training length
    c.model.scheme = "rope";     // any scheme of `routelab schemes`
    c.train.batch = 8, c.train.steps = 40, c.train.warmup = 4, c.train.lr = 3e-3;
    c.train.checkpoint_every = 40, c.train.seed = 1;
    c.corpus = argv[1];
    runs::validate(c, "train_tiny");  // ConfigError for a model no scheme can have

    const runs::TrainSummary s = runs::train_run(c, {argv[2], /*resume=*/false, /*progress=*/false});
    std::printf("routelab %s: %d steps of %s, final training loss %.4f nats\n", ROUTELAB_VERSION_STRING, s.steps,
                c.model.scheme.c_str(), s.final_loss);

    // The final weights, read back from the run directory as `routelab eval` does.
    const runs::TrainedRun run = runs::load_trained_run(argv[2], "1x,4x");
    for (int64_t L : run.lengths) {
      const runs::EvalResult r = runs::evaluate(*run.model, run.corpus.val, L);
      std::printf("  eval at L = %3lld: %.4f bits per byte over %lld windows\n", (long long)L, r.bits_per_byte,
                  (long long)r.windows);
    }
  } catch (const std::exception& e) {  // ConfigError, CorpusError, RunDirError, CheckpointError: one line each
    std::fprintf(stderr, "train_tiny: %s\n", e.what());
    return 2;
  }
}
