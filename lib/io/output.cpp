#include "io/output.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fmt/core.h>

#include "io/user_paths.h"

namespace routelab {

namespace fs = std::filesystem;

namespace {

// Absolute, with every existing component's links resolved.
std::string resolved(const std::string& path) {
  std::error_code ec;
  const fs::path p = fs::weakly_canonical(fs::absolute(path, ec), ec);
  return ec ? fs::absolute(path).lexically_normal().string() : p.string();
}

bool same_file(const std::string& a, const std::string& b) {
  if (resolved(a) == resolved(b)) return true;
  std::error_code ec;
  return fs::exists(a, ec) && fs::exists(b, ec) && fs::equivalent(a, b, ec);
}

// Slots for the temporaries in flight, readable from a signal handler (no
// locks, no allocation there): 0 free, 1 being filled, 2 holds a path.
constexpr int kSlots = 64;
constexpr std::size_t kPathMax = 4096;
std::array<std::atomic<int>, kSlots> slot_state{};
std::array<std::array<char, kPathMax>, kSlots> slot_path{};

void cleanup_and_reraise(int sig) {
  for (int i = 0; i < kSlots; ++i)
    if (slot_state[i].load() == 2) ::unlink(slot_path[i].data());
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

}  // namespace

void register_temporary(const std::string& path) {
  if (path.size() >= kPathMax) return;
  for (int i = 0; i < kSlots; ++i) {
    int expected = 0;
    if (!slot_state[i].compare_exchange_strong(expected, 1)) continue;
    std::memcpy(slot_path[i].data(), path.c_str(), path.size() + 1);
    slot_state[i].store(2);
    return;
  }
}

void release_temporary(const std::string& path) {
  for (int i = 0; i < kSlots; ++i)
    if (slot_state[i].load() == 2 && path == slot_path[i].data()) {
      slot_state[i].store(0);
      return;
    }
}

void install_cleanup_handlers() {
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction old {};
    // A handler someone installed stays (Python's SIGINT, which unwinds
    // through the destructors instead).
    if (::sigaction(sig, nullptr, &old) != 0 || (old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL) continue;
    struct sigaction sa {};
    sa.sa_handler = cleanup_and_reraise;
    sigemptyset(&sa.sa_mask);
    ::sigaction(sig, &sa, nullptr);
  }
}

std::string temporary_beside(const std::string& path) { return path + ".tmp." + std::to_string(::getpid()); }

int write_temporary(const std::string& tmp, const std::string& text) {
  register_temporary(tmp);  // a signal now removes it
  int err = 0;
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) err = errno;
  for (std::size_t done = 0; fd >= 0 && !err && done < text.size();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno != EINTR) err = errno;
    if (n == 0) err = EIO;  // a file that takes no bytes: never loop on it
    if (n > 0) done += std::size_t(n);
  }
  if (fd >= 0 && ::close(fd) != 0 && !err) err = errno;
  if (err) {
    if (fd >= 0) ::unlink(tmp.c_str());
    release_temporary(tmp);
  }
  return err;
}

void throw_write_error(const std::string& what, const std::string& path, int err) {
  const std::string line = path_refusal(what, path, std::error_code(err, std::generic_category()));
  if (!line.empty()) throw OutputError(line);
  throw std::runtime_error(fmt::format("{}: cannot write {} ({})", what, path, std::strerror(err)));
}

void require_writable_folder(const std::string& dir, const std::string& what) {
  std::error_code ec;
  const fs::path d = dir.empty() ? fs::path(".") : fs::path(dir);
  const fs::file_status st = fs::status(d, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) throw_write_error(what, d.string(), ec.value());
  if (!fs::exists(st))
    throw OutputError(fmt::format("{}: the folder {} does not exist; create it first", what, d.string()));
  if (!fs::is_directory(st)) throw_write_error(what, d.string(), ENOTDIR);
  const std::string probe = (d / (".routelab-probe." + std::to_string(::getpid()))).string();
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
  // A folder that exists yet answers ENOENT to a new file takes none (/proc,
  // /sys): saying "it does not exist" of it would mislead.
  if (fd < 0 && errno == ENOENT)
    throw OutputError(fmt::format("{}: the folder {} takes no new files (a virtual file system such as /proc); "
                                  "name a file on an ordinary one",
                                  what, d.string()));
  if (fd < 0) throw_write_error(what, d.string(), errno);
  ::close(fd);
  ::unlink(probe.c_str());
}

void OutputFiles::input(const std::string& path) { inputs_.push_back(path); }

void OutputFiles::output(const std::string& path, const std::string& what) {
  const std::string where = fmt::format("{}: {}", command_, what);
  if (path.empty()) throw OutputError(where + ": an empty path; name a file");
  std::error_code ec;
  const auto link = fs::symlink_status(path, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) throw_write_error(where, path, ec.value());
  if (fs::is_symlink(link))
    throw OutputError(fmt::format("{}: {} is a symbolic link; name the file itself (writing replaces the link)", where,
                                  path));
  if (fs::exists(link) && !fs::is_regular_file(link))
    throw OutputError(fmt::format("{}: {} exists and is not a regular file; name a new or regular file", where, path));
  for (const auto& in : inputs_)
    if (same_file(path, in))
      throw OutputError(fmt::format("{}: {} is also an input of this command; name another file", where, path));
  for (const auto& out : outputs_)
    if (same_file(path, out.path))
      throw OutputError(fmt::format("{}: {} is also written as {}; name another file", where, path, out.what));
  require_writable_folder(fs::path(path).parent_path().string(), where);
  outputs_.push_back({path, what, resolved(path), "", false});
}

void OutputFiles::set(const std::string& path, std::string text) {
  for (auto& e : outputs_)
    if (e.path == path) {
      e.text = std::move(text);
      e.set = true;
      return;
    }
  throw std::logic_error("OutputFiles::set: " + path + " was not declared as an output");
}

void OutputFiles::commit() {
  std::vector<std::string> temps;
  auto remove_all = [&] {
    for (const auto& t : temps) {
      ::unlink(t.c_str());
      release_temporary(t);
    }
  };
  for (const auto& e : outputs_) {
    if (!e.set) continue;
    const std::string tmp = temporary_beside(e.path);
    if (const int err = write_temporary(tmp, e.text)) {
      remove_all();
      throw_write_error(fmt::format("{}: {}", command_, e.what), e.path, err);
    }
    temps.push_back(tmp);
  }
  std::size_t k = 0;
  for (const auto& e : outputs_) {
    if (!e.set) continue;
    if (std::rename(temps[k].c_str(), e.path.c_str()) != 0) {
      const int err = errno;
      temps.erase(temps.begin(), temps.begin() + std::ptrdiff_t(k));
      remove_all();
      throw_write_error(fmt::format("{}: {}", command_, e.what), e.path, err);
    }
    release_temporary(temps[k]);
    ++k;
  }
}

}  // namespace routelab
