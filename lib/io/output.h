// The files a command writes, as one unit (issue 16). Before any work the
// command names every file it will write and every file it reads; each
// output is refused (OutputError: one line, exit status 2) when
//   - its path is empty,
//   - it exists and is not a regular file (a folder, a device such as
//     /dev/null, a socket; a symbolic link is judged by what it points at and
//     refused, since the rename would replace the link, not its target),
//   - it is one of the command's inputs, or another of its outputs, after
//     resolving links and relative paths,
//   - its folder does not exist or cannot be written (checked by creating and
//     removing a probe file there, so permissions, read-only mounts and full
//     inode tables all show).
// After the work, commit() writes every file to a temporary beside its
// target, then renames each into place; a failure before the renames removes
// every temporary and leaves the targets as they were. Temporaries are also
// removed on SIGINT, SIGTERM and SIGHUP (install_cleanup_handlers).
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace routelab {

struct OutputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class OutputFiles {
 public:
  // `command` names the command in messages ("eval").
  explicit OutputFiles(std::string command) : command_(std::move(command)) {}
  // A file the command reads. Call before the outputs that must differ from it.
  void input(const std::string& path);
  // A file the command will write; `what` names its flag or role ("--out",
  // "the sidecar"). Refuses now.
  void output(const std::string& path, const std::string& what);
  // The text an output gets at commit().
  void set(const std::string& path, std::string text);
  // Writes every output that was set, as described above. Outputs not set are
  // not written.
  void commit();

 private:
  struct Entry {
    std::string path, what, resolved, text;
    bool set = false;
  };
  std::string command_;
  std::vector<std::string> inputs_;  // resolved
  std::vector<Entry> outputs_;
};

// Refusal checks on their own, for callers that create a path themselves (a
// run folder): OutputError unless `dir` is a folder this process can write.
void require_writable_folder(const std::string& dir, const std::string& what);

// The temporary a file is written to before its rename: beside it, so that
// the rename stays on one file system.
std::string temporary_beside(const std::string& path);
// Writes `text` to `tmp`, registered for the cleanup handlers below. Returns 0,
// or the errno of the failure after removing what it wrote.
int write_temporary(const std::string& tmp, const std::string& text);

// An operating-system error `err` writing `path`, named by `what`: an
// OutputError with path_refusal's line (io/user_paths.h) when naming another
// path would help, else a std::runtime_error (a failure, exit status 1).
[[noreturn]] void throw_write_error(const std::string& what, const std::string& path, int err);

// Files to remove if the process is stopped: write_file_atomic registers
// each temporary before writing it and releases it after the rename, a run
// lock (io/run_lock.h) its lock file while it holds it; the handlers unlink
// the registered ones and re-raise. main() and the Python module install
// them once, for each of the signals that still has its default action.
void install_cleanup_handlers();
void register_temporary(const std::string& path);
void release_temporary(const std::string& path);

}  // namespace routelab
