// OpenMP threads on a machine that other work shares.
//
// A team of OpenMP threads meets at a barrier after every parallel loop,
// and libgomp's waiting threads spin for about 3 ms before they sleep. When
// other processes keep the cores busy, a member of the team is often off
// its core and the rest spin in its place: on two cores, a training with
// the default two threads beside another busy routelab process fell from
// about 300k to about 150 tokens/s. The library therefore takes the thread
// count, unless the caller fixed it, from the cores that other processes
// leave free, measured from /proc/stat, and measures again between the
// steps of long work (training steps, evaluation batches). Results are the
// same bytes at any thread count, so the count may change mid-run.
#pragma once

namespace routelab {

// The caller's choice for what follows: n > 0 threads, fixed; 0 the
// library's choice (every core, fewer when other processes keep some busy).
// OMP_NUM_THREADS in the environment fixes the count as n would. Returns the
// choice it replaces, for a caller that restores it.
int use_threads(int n);

// Between the steps of long work: under the library's choice, sets the
// OpenMP thread count to the cores that other processes left free over the
// last half second or more (the first call measures 100 ms). Costs a few
// microseconds when it has nothing to do.
void adapt_threads();

// The cores of this process's CPU set that other processes kept busy between
// two readings, and the reading itself: busy (and stolen) clock ticks of
// each of those CPUs less this process's own, over the ticks that passed.
// Empty when /proc/stat cannot be read.
struct CpuReading {
  bool ok = false;
  double seconds = 0;      // steady clock
  long long busy = 0;      // busy ticks of the process's CPUs
  long long own = 0;       // this process's ticks (user + system)
  int cpus = 0;            // CPUs in the process's set
};
CpuReading read_cpus();
double cores_busy_elsewhere(const CpuReading& before, const CpuReading& after);

}  // namespace routelab
