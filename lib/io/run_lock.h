// One process at a time in a run folder (issue 38): training, resuming,
// evaluating into the run and experiments take an exclusive flock(2) on
// FOLDER/.routelab.lock. The kernel drops the lock when its holder dies, so a
// killed run leaves at most a stale file that the next lock takes over; no
// PID file is trusted. The holder writes its PID into the file so that the
// process refused can name it.
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
  // that holds it, or saying that `dir` is a file; an operating-system error
  // on the path is a std::filesystem::filesystem_error (io/user_paths.h).
  RunLock(const std::string& dir, const std::string& what);
  // Unlocks and removes the lock file, then the folders the constructor made
  // if nothing else was written in them (a refused command leaves no trace).
  ~RunLock();
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;

 private:
  int fd_ = -1;
  std::string file_;
  std::vector<std::filesystem::path> made_;  // outermost first
};

// True when `dir` holds no file but a lock: a run folder nothing was written
// to yet.
bool holds_only_a_lock(const std::string& dir);

}  // namespace routelab
