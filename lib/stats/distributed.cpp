#include "stats/distributed.h"

#include <cstdlib>
#include <numeric>
#include <stdexcept>

#ifdef ROUTELAB_WITH_MPI
#include <mpi.h>
#endif

namespace routelab::dist {

#ifdef ROUTELAB_WITH_MPI

namespace {
bool active() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}
}  // namespace

int rank() {
  if (!active()) return 0;
  int r;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

int size() {
  if (!active()) return 1;
  int s;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

// Only under a launcher: a singleton MPI_Init starts Open MPI's orted daemon,
// which spins on a core beside every plain run.
void init(int* argc, char*** argv) {
  const char* launched[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE", "PMI_RANK"};
  bool under_launcher = false;
  for (const char* v : launched) under_launcher = under_launcher || std::getenv(v) != nullptr;
  if (!under_launcher) return;
  int provided;
  MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
}

void finalize() {
  if (active()) MPI_Finalize();
}

bool built_with_mpi() { return true; }

void allgather_chunks(const std::vector<double>& mine, const std::vector<long long>& per_chunk,
                      std::vector<double>& all) {
  const int n = size();
  if (n == 1) {
    all = mine;
    return;
  }
  // Rank r's buffer holds its chunks c = r, r + n, ... in order.
  std::vector<int> counts(n, 0), displs(n, 0);
  for (std::size_t c = 0; c < per_chunk.size(); ++c) counts[c % n] += int(per_chunk[c]);
  for (int r = 1; r < n; ++r) displs[r] = displs[r - 1] + counts[r - 1];
  std::vector<double> by_rank(std::accumulate(counts.begin(), counts.end(), 0LL));
  MPI_Allgatherv(mine.data(), int(mine.size()), MPI_DOUBLE, by_rank.data(), counts.data(), displs.data(),
                 MPI_DOUBLE, MPI_COMM_WORLD);
  // Reorder from rank-major to chunk order.
  all.resize(by_rank.size());
  std::vector<long long> cursor(displs.begin(), displs.end());
  long long out = 0;
  for (std::size_t c = 0; c < per_chunk.size(); ++c) {
    const int r = int(c % n);
    std::copy(by_rank.begin() + cursor[r], by_rank.begin() + cursor[r] + per_chunk[c], all.begin() + out);
    cursor[r] += per_chunk[c];
    out += per_chunk[c];
  }
}

void mean_over_ranks(std::span<float> values) {
  const int n = size();
  if (n == 1) return;
  const std::size_t len = values.size();
  std::vector<float> all(len * std::size_t(n));
  MPI_Allgather(values.data(), int(len), MPI_FLOAT, all.data(), int(len), MPI_FLOAT, MPI_COMM_WORLD);
  for (std::size_t i = 0; i < len; ++i) {
    double sum = 0;
    for (int r = 0; r < n; ++r) sum += double(all[std::size_t(r) * len + i]);
    values[i] = float(sum / n);
  }
}

double mean_over_ranks(double value) {
  const int n = size();
  if (n == 1) return value;
  std::vector<double> all(n);
  MPI_Allgather(&value, 1, MPI_DOUBLE, all.data(), 1, MPI_DOUBLE, MPI_COMM_WORLD);
  double sum = 0;
  for (double v : all) sum += v;
  return sum / n;
}

void barrier() {
  if (size() > 1) MPI_Barrier(MPI_COMM_WORLD);
}

void broadcast_bytes(void* data, std::size_t n) {
  if (size() > 1) MPI_Bcast(data, int(n), MPI_BYTE, 0, MPI_COMM_WORLD);
}

#else

int rank() { return 0; }
int size() { return 1; }
void init(int*, char***) {}
void finalize() {}
bool built_with_mpi() { return false; }
void allgather_chunks(const std::vector<double>& mine, const std::vector<long long>&, std::vector<double>& all) {
  all = mine;
}
void mean_over_ranks(std::span<float>) {}
double mean_over_ranks(double value) { return value; }
void barrier() {}
void broadcast_bytes(void*, std::size_t) {}

#endif

bool is_root() { return rank() == 0; }

}  // namespace routelab::dist
