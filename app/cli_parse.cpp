#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "app/commands.h"
#include "io/parse.h"
#include "io/user_paths.h"

namespace routelab {

void note_path_options(const CLI::App& app) {
  for (const CLI::Option* opt : app.get_options()) {
    if (opt->get_type_size() == 0) continue;  // a flag: no value
    const std::string name = opt->get_name();
    for (const std::string& value : opt->results()) note_user_path(name, value);
  }
  for (const CLI::App* sub : app.get_subcommands()) note_path_options(*sub);
}

CLI::Validator integer_in(long long lo, long long hi, const std::string& range) {
  const std::string accepted =
      "an integer in " + (range.empty() ? "[" + std::to_string(lo) + ", " + std::to_string(hi) + "]" : range);
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        const auto v = parse_integer(text);
        if (v && *v >= lo && *v <= hi) return "";
        return "'" + text + "' is not accepted; " + accepted;
      },
      accepted);
}

int parse_subcommand(CLI::App& app, const std::vector<std::string>& args, const char* name) {
  try {
    std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes them last first
    app.parse(reversed);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string msg = e.what();
    std::replace(msg.begin(), msg.end(), '\n', ' ');
    std::fprintf(stderr, "routelab: %s: %s (see routelab %s --help)\n", name, msg.c_str(), name);
    return 2;
  }
  note_path_options(app);
  return -1;
}

}  // namespace routelab
