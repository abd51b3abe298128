// The thread count on a shared machine (base/threads.h): the busy cores
// other processes leave, from two readings of /proc/stat, and the caller's
// choice against the library's.
#include <gtest/gtest.h>

#include <omp.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>

#include "base/threads.h"

namespace {

using namespace routelab;

CpuReading reading(double seconds, long long busy, long long own, int cpus) {
  CpuReading r;
  r.ok = true;
  r.seconds = seconds, r.busy = busy, r.own = own, r.cpus = cpus;
  return r;
}

TEST(threads, busy_cores_elsewhere_are_the_busy_ticks_less_this_process_own) {
  const double hz = double(sysconf(_SC_CLK_TCK));
  const CpuReading before = reading(10.0, 1000, 400, 2);
  // Over two seconds: 2.6 cores' worth of busy ticks, 1.4 of them this process's.
  const CpuReading after = reading(12.0, 1000 + long(5.2 * hz), 400 + long(2.8 * hz), 2);
  EXPECT_NEAR(cores_busy_elsewhere(before, after), 1.2, 1e-9);
  // Never below zero (rounding of the two counts) nor above the CPUs.
  EXPECT_EQ(cores_busy_elsewhere(before, reading(12.0, 1000 + long(hz), 400 + long(2 * hz), 2)), 0.0);
  EXPECT_EQ(cores_busy_elsewhere(before, reading(12.0, 1000 + long(9 * hz), 400, 2)), 2.0);
  // No reading, or no time between them: nothing is known to be busy.
  EXPECT_EQ(cores_busy_elsewhere(CpuReading{}, after), 0.0);
  EXPECT_EQ(cores_busy_elsewhere(before, before), 0.0);
}

TEST(threads, readings_see_this_process_cpu_time) {
  const CpuReading before = read_cpus();
  ASSERT_TRUE(before.ok) << "/proc/stat or /proc/self/stat unreadable";
  EXPECT_EQ(before.cpus, omp_get_num_procs());
  // Burn 300 ms of this process's CPU time (not wall time: on a loaded
  // machine the process may get a small share of a core): its ticks grow by
  // about 30 (at 100 Hz), and the CPUs' busy ticks by at least as many.
  auto cpu_seconds = [] {
    timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
  };
  const double until = cpu_seconds() + 0.3;
  volatile double x = 0;
  while (cpu_seconds() < until) x = x + 1;
  const CpuReading after = read_cpus();
  const long long own = after.own - before.own, busy = after.busy - before.busy;
  EXPECT_GE(own, long(0.1 * double(sysconf(_SC_CLK_TCK))));
  EXPECT_GE(busy + 2, own);  // a tick or two of sampling either way
}

TEST(threads, a_count_the_caller_fixes_is_kept) {
  const int before = use_threads(1);
  EXPECT_EQ(omp_get_max_threads(), 1);
  EXPECT_EQ(use_threads(2), 1);  // returns the choice it replaces
  adapt_threads();
  EXPECT_EQ(omp_get_max_threads(), 2);
  // The library's choice, unless OMP_NUM_THREADS fixes it: some count from
  // one to every core.
  use_threads(0);
  adapt_threads();
  if (!std::getenv("OMP_NUM_THREADS")) {
    EXPECT_GE(omp_get_max_threads(), 1);
    EXPECT_LE(omp_get_max_threads(), omp_get_num_procs());
  }
  use_threads(before);
}

}  // namespace
