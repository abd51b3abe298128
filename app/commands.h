// Subcommands that live in their own files; main.cpp dispatches to them.
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
class Validator;
}

namespace routelab {

// The exit status of a command that could not finish for a reason other
// than its input or a failed check (main.cpp's list): out of memory, a
// device or operating-system failure, a bug.
inline constexpr int kInternalError = 3;

// Parses a subcommand's arguments with routelab's refusal format (one line,
// "routelab: NAME: ...", status 2). Returns -1 to go on, else the status.
int parse_subcommand(CLI::App& app, const std::vector<std::string>& args, const char* name);

// The check of an integer option: its whole text an integer in [lo, hi] as
// io/parse.h reads one ("1e3", " 3" and "3.0" are not), else "'TEXT' is not
// accepted; an integer in [lo, hi]" (`range` replaces "[lo, hi]", as
// "[0, 2^62]").
CLI::Validator integer_in(long long lo, long long hi, const std::string& range = "");

// Notes every option's value (io/user_paths.h), so that an operating-system
// error on one of them names its flag. parse_subcommand calls it.
void note_path_options(const CLI::App& app);

// --device cpu|cuda (app/device_option.cpp). add_device_option adds it to a
// subcommand; require_device throws cuda::DeviceError (one line, exit 2) for
// cuda: `what` (a sim without a GPU path, e.g. "sim moment-decay") runs on the
// CPU only.
// take_device_flag removes --device VALUE from a sim's arguments ("cpu" when
// absent; BadInput for anything but cpu or cuda).
void add_device_option(CLI::App& app, std::string& device);
void require_device(const std::string& device, const std::string& what);
std::string take_device_flag(std::vector<std::string>& args);

// routelab corpus prepare --from PKG_DIR --out DIR
// args: everything after the word "corpus". Bad flags: one line on stderr,
// status 2. A missing or unexpected corpus throws data::CorpusError.
int cmd_corpus(const std::vector<std::string>& args);

// routelab claims CSV... [--csv FILE] [--markdown]: the paper's claims judged
// from experiment CSVs (lib/claims).
int cmd_claims(const std::vector<std::string>& args);

// routelab train --config FILE [--out RUN_DIR] [--resume] [--threads T]
int cmd_train(const std::vector<std::string>& args);
// routelab eval --run RUN_DIR --lengths 1x,2x,... [--out FILE] [--threads T]
int cmd_eval(const std::vector<std::string>& args);
// routelab export --run RUN_DIR --out FILE.safetensors
int cmd_export(const std::vector<std::string>& args);
// routelab passkey --run RUN_DIR --lengths ... --depths ... [--trials N]
int cmd_passkey(const std::vector<std::string>& args);
// routelab probe --run RUN_DIR... --lengths ... [--window W] [--csv FILE]
int cmd_probe(const std::vector<std::string>& args);
// routelab experiment FILE.toml [--threads T]
int cmd_experiment(const std::vector<std::string>& args);

}  // namespace routelab
