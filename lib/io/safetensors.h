// The safetensors file format (Hugging Face's), float32 tensors only:
//   8 bytes   N, the header's length, unsigned little-endian
//   N bytes   a JSON object: for each tensor
//               "name": {"dtype": "F32", "shape": [d0, d1, ...],
//                        "data_offsets": [begin, end]}
//             (byte offsets into the data that follows, end exclusive) and
//             "__metadata__": {string: string}; padded with spaces so the
//             data starts 8-byte aligned, as the reference writer does
//   the data  every tensor's values, row-major, little-endian, in the
//             order given, back to back with no gaps
// Written whole in memory, so a caller writes the file in one atomic step.
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace routelab {

// A tensor list or a file that breaks the format: one line saying what.
struct SafetensorsError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct SafetensorsTensor {
  std::string name;
  std::vector<int64_t> shape;  // [] is a scalar (one value)
  std::vector<float> values;   // row-major, prod(shape) of them
};

// The file's bytes. Refuses (SafetensorsError) an empty or repeated name, the
// name "__metadata__", a negative dimension, or values whose count is not the
// shape's product.
std::string safetensors_bytes(const std::vector<SafetensorsTensor>& tensors,
                              const std::map<std::string, std::string>& metadata);

// A file read back: its header (tensors in file order) and where the data
// starts.
struct SafetensorsHeader {
  struct Entry {
    std::string name, dtype;
    std::vector<int64_t> shape;
    uint64_t begin, end;  // byte offsets into the data
  };
  std::vector<Entry> tensors;  // in the order of their offsets
  std::map<std::string, std::string> metadata;
  uint64_t data_start = 0;  // 8 + N
};

// Parses and checks a file's bytes: the header length inside the file, valid
// JSON, F32 tensors whose offsets match their shapes, lie inside the data and
// cover it back to back; refused with a SafetensorsError otherwise.
SafetensorsHeader parse_safetensors(const std::string& bytes);
// One tensor's values from a parsed file.
std::vector<float> safetensors_values(const std::string& bytes, const SafetensorsHeader& h, const std::string& name);

}  // namespace routelab
