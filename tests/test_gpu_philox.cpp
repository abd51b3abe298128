// The device draws the CPU's random streams: Philox words and uniforms from
// lib/cuda/philox.cu equal, bit for bit, those of the CPU batch kernels
// (lib/rng), on Random123's known-answer counters and on long runs of blocks
// past a 32-bit carry. As Random123 itself does, the same vectors on both.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "cuda/philox.h"
#include "gpu_helpers.h"
#include "rng/stream.h"

namespace {

using namespace routelab;
using namespace routelab::testing;

class gpu_philox : public GpuTest {};

std::vector<uint32_t> device_words(uint64_t seed, uint64_t stream, uint64_t block0, std::size_t nblocks) {
  DeviceBuffer<uint32_t> out(4 * nblocks);
  cuda::philox_blocks(seed, stream, block0, nblocks, out.data());
  return out.download();
}

TEST_F(gpu_philox, known_answers_match) {
  // Random123 kat_vectors, philox4x32 10 rounds, zero counter and key.
  EXPECT_EQ(device_words(0, 0, 0, 1), (std::vector<uint32_t>{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  // All ones and pi's digits, against the CPU's block function.
  const uint64_t kats[2][3] = {{~0ull, ~0ull, ~0ull}, {0x299f31d0a4093822ull, 0x0370734413198a2eull, 0x85a308d3243f6a88ull}};
  for (const auto& k : kats) {
    const auto r = philox_block(k[0], k[1], k[2]);
    EXPECT_EQ(device_words(k[0], k[1], k[2], 1), (std::vector<uint32_t>{r.v[0], r.v[1], r.v[2], r.v[3]}));
  }
}

TEST_F(gpu_philox, words_and_uniforms_equal_the_cpu_streams) {
  // 100003 blocks across the carry from the low to the high counter word.
  const uint64_t seed = 0x0123456789abcdefull, stream = 42, block0 = (1ull << 32) - 5000;
  const std::size_t nblocks = 100003;
  std::vector<uint32_t> cpu(4 * nblocks);
  philox_blocks(seed, stream, block0, nblocks, cpu.data());
  DeviceBuffer<uint32_t> words(4 * nblocks);
  cuda::philox_blocks(seed, stream, block0, nblocks, words.data());
  EXPECT_EQ(words.download(), cpu);

  std::vector<double> cpu_u(2 * nblocks);
  u01_from_words(cpu.data(), cpu_u.size(), cpu_u.data());
  DeviceBuffer<double> u(cpu_u.size());
  cuda::u01_from_words(words.data(), cpu_u.size(), u.data());
  EXPECT_EQ(u.download(), cpu_u);
}

}  // namespace
