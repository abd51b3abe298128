#include "io/run_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <system_error>
#include <utility>

#include <fmt/core.h>

#include "io/output.h"

namespace routelab {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void throw_os_error(const char* op, const std::string& path, int err = errno) {
  throw fs::filesystem_error(op, path, std::error_code(err, std::generic_category()));
}

// The PID the holder wrote, or "another process" while it has not yet.
std::string holder_of(int fd) {
  char text[32] = {};
  const ssize_t n = ::pread(fd, text, sizeof text - 1, 0);
  std::string pid(text, n > 0 ? std::size_t(n) : 0);
  while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
  return pid.empty() ? "another process" : "process " + pid;
}

// The folders (device, inode) whose lock this thread holds.
using FolderId = std::pair<dev_t, ino_t>;
thread_local std::vector<FolderId> held_here;

// Why the lock path (as lstat sees it) cannot be this folder's lock file;
// empty when it can.
std::string not_a_lock_file(const struct stat& st) {
  if (S_ISLNK(st.st_mode)) return "is a symbolic link";
  if (S_ISDIR(st.st_mode)) return "is a folder";
  if (!S_ISREG(st.st_mode)) return "is not a regular file";
  if (st.st_nlink != 1) return "is a hard link to another file";
  return "";
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
  dir_fd_ = ::open(d.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd_ < 0) throw_os_error("open", d.string());
  struct stat folder {};
  if (::fstat(dir_fd_, &folder) != 0) throw_os_error("stat", d.string());
  const FolderId id{folder.st_dev, folder.st_ino};
  if (std::find(held_here.begin(), held_here.end(), id) != held_here.end()) {
    nested_ = true;
    made_.clear();
    return;
  }
  auto refuse_path = [&](const std::string& why) {
    ::close(dir_fd_);
    dir_fd_ = -1;
    throw OutputError(fmt::format("{}: the lock path {} {}; a run folder's lock is a regular file of its own: remove "
                                  "it, or name another folder",
                                  what, file_, why));
  };
  // A holder removes the file as it unlocks; a lock taken on the removed file
  // is no lock, so take it again on the file now at the path.
  for (;;) {
    struct stat at {};
    if (::fstatat(dir_fd_, kRunLockName, &at, AT_SYMLINK_NOFOLLOW) == 0) {
      const std::string why = not_a_lock_file(at);
      if (!why.empty()) refuse_path(why);
    }
    // No link followed, no FIFO waited on, relative to the folder opened above.
    fd_ = ::openat(dir_fd_, kRunLockName, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
    if (fd_ < 0 && errno == ELOOP) refuse_path("is a symbolic link");
    if (fd_ < 0) {
      const int err = errno;
      ::close(dir_fd_);
      dir_fd_ = -1;
      throw_os_error("open", file_, err);
    }
    struct stat held {};
    if (::fstat(fd_, &held) == 0 && !not_a_lock_file(held).empty()) {
      const std::string why = not_a_lock_file(held);
      ::close(fd_);
      fd_ = -1;
      refuse_path(why);
    }
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      const std::string holder = err == EWOULDBLOCK ? holder_of(fd_) : "";
      ::close(fd_);
      ::close(dir_fd_);
      fd_ = dir_fd_ = -1;
      if (err != EWOULDBLOCK) throw_os_error("flock", file_, err);
      throw OutputError(fmt::format("{}: the run folder {} is in use by {} (it holds {}); wait for it to end or "
                                    "name another folder",
                                    what, dir, holder, file_));
    }
    struct stat now {};
    if (::fstatat(dir_fd_, kRunLockName, &now, AT_SYMLINK_NOFOLLOW) == 0 && held.st_dev == now.st_dev &&
        held.st_ino == now.st_ino)
      break;
    ::close(fd_);
  }
  held_here.push_back(id);
  register_temporary(file_);  // a caught SIGINT, SIGTERM or SIGHUP removes it
  const std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, pid.data(), pid.size(), 0) != ssize_t(pid.size())) {
    // A full file system: the lock holds, only the holder's name is lost.
  }
}

RunLock::~RunLock() {
  if (nested_) {
    ::close(dir_fd_);
    return;
  }
  if (fd_ < 0) return;
  struct stat folder {};
  if (::fstat(dir_fd_, &folder) == 0)
    std::erase(held_here, FolderId{folder.st_dev, folder.st_ino});
  ::unlinkat(dir_fd_, kRunLockName, 0);  // before unlocking: see the constructor's loop
  release_temporary(file_);
  ::close(fd_);
  ::close(dir_fd_);
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
