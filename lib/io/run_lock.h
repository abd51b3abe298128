// One process at a time in a run folder (issue 38): training, resuming,
// evaluating into the run and experiments take an exclusive flock(2) on
// FOLDER/.routelab.lock. The kernel drops the lock when its holder dies, so a
// killed run leaves at most a stale file that the next lock takes over; no
// PID file is trusted. The holder writes its PID into the file so that the
// process refused can name it.
//
// The lock file is opened relative to the folder and never through a link
// (issue 52): a .routelab.lock that is a symbolic link, a hard link to
// another file, a folder, a FIFO or a device is refused with one line, so a
// planted link cannot make the lock write a PID into a file elsewhere. A
// holder that catches SIGINT, SIGTERM or SIGHUP (install_cleanup_handlers,
// io/output.h) removes its lock file on the way out.
//
// The library's run functions take the lock themselves (runs/run_dir.h), so
// every front end holds it. A thread that already holds a folder's lock may
// lock it again (an experiment trains, evaluates and asks passkeys of a run
// it holds): the inner lock is a no-op. Another thread, even of the same
// process, is refused as another process is.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace routelab {

inline constexpr const char* kRunLockName = ".routelab.lock";

class RunLock {
 public:
  // Locks `dir`, making it (and missing parents) when absent. Refused with an
  // OutputError naming `what` (the flag, "--out"), the folder and the PID
  // that holds it, or saying that `dir` is a file, or that its lock path is
  // not a regular file of its own; an operating-system error on the path is
  // a std::filesystem::filesystem_error (io/user_paths.h).
  RunLock(const std::string& dir, const std::string& what);
  // Unlocks and removes the lock file, then the folders the constructor made
  // if nothing else was written in them (a refused command leaves no trace).
  ~RunLock();
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;

 private:
  int dir_fd_ = -1, fd_ = -1;
  bool nested_ = false;  // this thread held the folder already
  std::string file_;
  std::vector<std::filesystem::path> made_;  // outermost first
};

// True when `dir` holds no file but a lock: a run folder nothing was written
// to yet.
bool holds_only_a_lock(const std::string& dir);

}  // namespace routelab
