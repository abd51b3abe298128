// Splitting the sample streams of one run over MPI ranks.
//
// parallel_moments and parallel_fill (moments.h) hand out their chunks of
// kChunk samples round-robin over the ranks, then exchange the per-chunk
// results so that every rank merges all chunks in index order: each rank ends
// with the same numbers, bit for bit, as a single process. Without MPI (or
// when the program was not started under mpirun) there is one rank and the
// exchanges do nothing.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

namespace routelab::dist {

int rank();
int size();
bool is_root();  // rank 0: the one that prints and writes files

// Every rank contributes the values of the chunks it owns (chunk c is owned by
// rank c % size), each chunk `per_chunk[c]` doubles long, packed in chunk
// order into `mine`; on return `all` holds every chunk's values in chunk order.
void allgather_chunks(const std::vector<double>& mine, const std::vector<long long>& per_chunk,
                      std::vector<double>& all);

// Data-parallel training: every rank passes its gradient (the same length on
// all ranks); on return each holds the mean over ranks. The sum runs in double
// in rank order on every rank, so all ranks end with the same floats whatever
// the reduction algorithm of the MPI library.
void mean_over_ranks(std::span<float> values);
double mean_over_ranks(double value);
// Every rank waits here until all have arrived.
void barrier();
// Rank 0's n bytes at data, copied to every rank's data (NCCL's unique id).
void broadcast_bytes(void* data, std::size_t n);

// Program start and end; no-ops in a build without MPI.
void init(int* argc, char*** argv);
void finalize();
bool built_with_mpi();

}  // namespace routelab::dist
