#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "app/commands.h"

namespace routelab {

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
  return -1;
}

}  // namespace routelab
