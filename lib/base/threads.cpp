#include "base/threads.h"

#include <omp.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>

namespace routelab {

namespace {

// Seconds between two measurements of a long run, and the first one's span.
constexpr double kRemeasureSeconds = 0.5;
constexpr auto kFirstSpan = std::chrono::milliseconds(100);

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Choice {
  std::mutex mutex;
  int threads = 0;        // the caller's count, 0 for the library's choice
  bool measured = false;  // the library's choice has a reading to go on from
  CpuReading last;
};

Choice& choice() {
  static Choice c;
  return c;
}

bool fixed_by_environment() {
  static const bool fixed = std::getenv("OMP_NUM_THREADS") != nullptr;
  return fixed;
}

// The cores that `busy` other cores leave of `cpus`, at least one.
void set_from(const CpuReading& before, const CpuReading& after) {
  const double free = after.cpus - cores_busy_elsewhere(before, after);
  omp_set_num_threads(std::clamp(int(std::lround(free)), 1, std::max(1, after.cpus)));
}

}  // namespace

CpuReading read_cpus() {
  CpuReading r;
  cpu_set_t mine;
  CPU_ZERO(&mine);
  if (sched_getaffinity(0, sizeof mine, &mine) != 0) return r;
  std::ifstream stat("/proc/stat");
  std::string line;
  while (std::getline(stat, line)) {
    // "cpuN user nice system idle iowait irq softirq steal ...": the CPUs of
    // this process's set, not the "cpu" line summing every one.
    if (line.compare(0, 3, "cpu") != 0 || line.size() < 4 || line[3] < '0' || line[3] > '9') continue;
    std::istringstream in(line.substr(3));
    int id = -1;
    long long user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
    in >> id >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal;
    if (!in || id < 0 || id >= CPU_SETSIZE || !CPU_ISSET(id, &mine)) continue;
    r.busy += user + nice + system + irq + softirq + steal;
    ++r.cpus;
  }
  // utime and stime, fields 14 and 15 of /proc/self/stat, 12 and 13 after
  // the command name's closing parenthesis.
  std::ifstream self("/proc/self/stat");
  std::string text((std::istreambuf_iterator<char>(self)), std::istreambuf_iterator<char>());
  const auto close = text.rfind(')');
  if (r.cpus == 0 || close == std::string::npos) return r;
  std::istringstream fields(text.substr(close + 1));
  std::string skip;
  for (int i = 0; i < 11; ++i) fields >> skip;
  long long utime = 0, stime = 0;
  fields >> utime >> stime;
  if (!fields) return r;
  r.own = utime + stime;
  r.seconds = steady_seconds();
  r.ok = true;
  return r;
}

double cores_busy_elsewhere(const CpuReading& before, const CpuReading& after) {
  const double ticks = (after.seconds - before.seconds) * double(sysconf(_SC_CLK_TCK));
  if (!before.ok || !after.ok || ticks <= 0) return 0;
  const double others = double((after.busy - before.busy) - (after.own - before.own));
  return std::clamp(others / ticks, 0.0, double(after.cpus));
}

int use_threads(int n) {
  Choice& c = choice();
  std::lock_guard<std::mutex> lock(c.mutex);
  const int before = c.threads;
  c.threads = std::max(0, n);
  c.measured = false;
  if (n > 0)
    omp_set_num_threads(n);
  else if (!fixed_by_environment())
    omp_set_num_threads(omp_get_num_procs());
  return before;
}

void adapt_threads() {
  Choice& c = choice();
  std::lock_guard<std::mutex> lock(c.mutex);
  if (c.threads > 0 || fixed_by_environment()) return;
  if (!c.measured) {
    const CpuReading before = read_cpus();
    c.measured = true;
    if (!before.ok) return;  // no /proc/stat: every core, as OpenMP's default
    std::this_thread::sleep_for(kFirstSpan);
    c.last = read_cpus();
    set_from(before, c.last);
    return;
  }
  if (!c.last.ok || steady_seconds() - c.last.seconds < kRemeasureSeconds) return;
  const CpuReading now = read_cpus();
  if (!now.ok) return;
  set_from(c.last, now);
  c.last = now;
}

}  // namespace routelab
