#include "io/user_paths.h"

#include <cerrno>
#include <mutex>
#include <utility>
#include <vector>

#include <fmt/core.h>

namespace routelab {

namespace fs = std::filesystem;

namespace {

std::mutex noted_mutex;
std::vector<std::pair<std::string, fs::path>> noted;  // (flag, absolute normal path)

fs::path normal(const fs::path& p) {
  std::error_code ec;
  const fs::path a = fs::absolute(p, ec);
  return (ec ? p : a).lexically_normal();
}

// Components of `inner` begin with all of `outer`'s.
bool under(const fs::path& inner, const fs::path& outer) {
  auto i = inner.begin();
  for (auto o = outer.begin(); o != outer.end(); ++o, ++i) {
    if (o->empty() && std::next(o) == outer.end()) return true;  // "dir/" ends in an empty name
    if (i == inner.end() || *i != *o) return false;
  }
  return true;
}

std::size_t length(const fs::path& p) { return std::size_t(std::distance(p.begin(), p.end())); }

}  // namespace

std::string one_line(const std::string& text) {
  std::string out;
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (u < 0x20 || u == 0x7f) out += fmt::format("\\x{:02x}", u);
    else out += c;
  }
  return out;
}

void note_user_path(const std::string& flag, const std::string& path) {
  if (path.empty()) return;
  std::lock_guard<std::mutex> hold(noted_mutex);
  noted.emplace_back(flag, normal(path));
}

void forget_user_paths() {
  std::lock_guard<std::mutex> hold(noted_mutex);
  noted.clear();
}

std::string path_refusal(const std::string& what, const std::string& path, std::error_code ec) {
  if (ec.category() != std::generic_category() && ec.category() != std::system_category()) return "";
  const char* advice = nullptr;
  switch (ec.value()) {
    case ENAMETOOLONG: advice = "name a path whose every part is at most 255 bytes (4095 in all)"; break;
    case ENOTDIR: advice = "a part of the path is a file, not a folder; name a path through folders"; break;
    case EACCES:
    case EPERM:
      advice = "this user may not use it; name a path it may read and write, or change the permissions";
      break;
    case EROFS: advice = "the file system is read-only; name a path on a writable one"; break;
    case ENOSPC:
    case EDQUOT: advice = "the file system is full; free space or name a path on another one"; break;
    case ENOENT: advice = "it does not exist; name an existing path, or create its folder first"; break;
    case ELOOP: advice = "its symbolic links loop; name the file itself"; break;
    case EISDIR: advice = "it is a folder; name a file"; break;
    case EEXIST: advice = "it exists and is not a folder; name another path"; break;
    default: return "";
  }
  return fmt::format("{}{}{}: {}; {}", what, what.empty() ? "" : " ", path, ec.message(), advice);
}

std::string user_path_refusal(const fs::filesystem_error& e) {
  const fs::path failed = normal(e.path1());
  std::string flag;
  std::size_t best = 0;
  {
    std::lock_guard<std::mutex> hold(noted_mutex);
    for (const auto& [f, p] : noted)
      if ((under(failed, p) || under(p, failed)) && length(p) > best) flag = f, best = length(p);
  }
  return path_refusal(flag, e.path1().string(), e.code());
}

}  // namespace routelab
