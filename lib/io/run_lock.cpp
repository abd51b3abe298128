#include "io/run_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <system_error>

#include <fmt/core.h>

#include "io/output.h"

namespace routelab {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void throw_os_error(const char* op, const std::string& path) {
  throw fs::filesystem_error(op, path, std::error_code(errno, std::generic_category()));
}

// The PID the holder wrote, or "another process" while it has not yet.
std::string holder_of(int fd) {
  char text[32] = {};
  const ssize_t n = ::pread(fd, text, sizeof text - 1, 0);
  std::string pid(text, n > 0 ? std::size_t(n) : 0);
  while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
  return pid.empty() ? "another process" : "process " + pid;
}

}  // namespace

RunLock::RunLock(const std::string& dir, const std::string& what) {
  const fs::path d = fs::path(dir).lexically_normal();
  if (fs::exists(d) && !fs::is_directory(d))
    throw OutputError(fmt::format("{}: {} is a file, not a folder; name a folder", what, dir));
  for (fs::path p = d; !p.empty() && !fs::exists(p); p = p.parent_path()) {
    made_.insert(made_.begin(), p);
    if (p == p.parent_path()) break;
  }
  fs::create_directories(d);
  file_ = (d / kRunLockName).string();
  // A holder removes the file as it unlocks; a lock taken on the removed file
  // is no lock, so take it again on the file now at the path.
  for (;;) {
    fd_ = ::open(file_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) throw_os_error("open", file_);
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      const std::string holder = err == EWOULDBLOCK ? holder_of(fd_) : "";
      ::close(fd_);
      fd_ = -1;
      if (err != EWOULDBLOCK) errno = err, throw_os_error("flock", file_);
      throw OutputError(fmt::format("{}: the run folder {} is in use by {} (it holds {}); wait for it to end or "
                                    "name another folder",
                                    what, dir, holder, file_));
    }
    struct stat held {}, now {};
    if (::fstat(fd_, &held) == 0 && ::stat(file_.c_str(), &now) == 0 && held.st_dev == now.st_dev &&
        held.st_ino == now.st_ino)
      break;
    ::close(fd_);
  }
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, pid.data(), pid.size(), 0) != ssize_t(pid.size())) {
    // A full file system: the lock holds, only the holder's name is lost.
  }
}

RunLock::~RunLock() {
  if (fd_ < 0) return;
  ::unlink(file_.c_str());  // before unlocking: see the constructor's loop
  ::close(fd_);
  std::error_code ec;
  for (auto p = made_.rbegin(); p != made_.rend(); ++p)
    if (!fs::remove(*p, ec)) break;  // not empty: something was written
}

bool holds_only_a_lock(const std::string& dir) {
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.path().filename() != kRunLockName) return false;
  return true;
}

}  // namespace routelab
