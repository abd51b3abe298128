#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "app/commands.h"
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
