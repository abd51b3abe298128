// Operating-system errors on the paths a user gave are bad input (issue 38):
// one line naming the flag, the path and what went wrong, exit status 2.
// Commands note each path flag's value as they parse it; the library lets
// std::filesystem::filesystem_error through (write_file_atomic and the run
// lock throw it too), and main() turns each into that line with
// user_path_refusal, the one place that knows the error numbers.
#pragma once

#include <filesystem>
#include <string>
#include <system_error>

namespace routelab {

// `text` with each control character (a line break, a tab, ...) written as
// an escape (\n, \t, \x1b), so that a message naming a path holding one
// stays one line.
std::string one_line(const std::string& text);

// `flag` ("--out", "[experiment] csv") named `path`.
void note_user_path(const std::string& flag, const std::string& path);
void forget_user_paths();  // for tests

// The line for an error `ec` on `path`, when `what` (a flag, "sim: --out")
// named it: "WHAT PATH: REASON; ADVICE". Empty when the error is not one the
// user can fix by naming another path (EIO, ENOMEM, ...): a failure, not bad
// input.
std::string path_refusal(const std::string& what, const std::string& path, std::error_code ec);

// path_refusal for e, naming the flag whose noted path is e's path, a folder
// above it, or a folder below it that was being made (the longest such), or
// "a path" when no noted path matches.
std::string user_path_refusal(const std::filesystem::filesystem_error& e);

}  // namespace routelab
