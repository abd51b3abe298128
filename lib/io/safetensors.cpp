#include "io/safetensors.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <set>

#include <fmt/core.h>

#include "base/shape.h"

namespace routelab {

static_assert(std::endian::native == std::endian::little, "the format is little-endian; so is every host here");

namespace {

constexpr const char* kMetadata = "__metadata__";
constexpr std::size_t kAlign = 8;

std::string le64(uint64_t x) {
  std::string s(8, '\0');
  std::memcpy(s.data(), &x, 8);
  return s;
}

}  // namespace

std::string safetensors_bytes(const std::vector<SafetensorsTensor>& tensors,
                              const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header;
  header[kMetadata] = nlohmann::ordered_json::object();
  for (const auto& [k, v] : metadata) header[kMetadata][k] = v;
  std::set<std::string> seen;
  uint64_t at = 0;
  for (const SafetensorsTensor& t : tensors) {
    if (t.name.empty()) throw SafetensorsError("safetensors: a tensor has an empty name");
    if (t.name == kMetadata) throw SafetensorsError("safetensors: '__metadata__' is reserved, not a tensor name");
    if (!seen.insert(t.name).second) throw SafetensorsError(fmt::format("safetensors: tensor '{}' is named twice", t.name));
    const int64_t n = element_count(t.shape);
    if (n < 0) throw SafetensorsError(fmt::format("safetensors: tensor '{}' has a negative or huge dimension", t.name));
    if (uint64_t(n) != t.values.size())
      throw SafetensorsError(fmt::format("safetensors: tensor '{}' has {} values, its shape holds {}", t.name,
                                         t.values.size(), n));
    const uint64_t bytes = uint64_t(n) * sizeof(float);
    header[t.name] = {{"dtype", "F32"}, {"shape", t.shape}, {"data_offsets", {at, at + bytes}}};
    at += bytes;
  }
  std::string json = header.dump();
  // The data starts 8-byte aligned (8 + N a multiple of 8), so a reader may map
  // the floats in place.
  json.append((kAlign - json.size() % kAlign) % kAlign, ' ');
  std::string out = le64(json.size()) + json;
  out.reserve(out.size() + at);
  for (const SafetensorsTensor& t : tensors)
    out.append(reinterpret_cast<const char*>(t.values.data()), t.values.size() * sizeof(float));
  return out;
}

SafetensorsHeader parse_safetensors(const std::string& bytes) {
  auto bad = [](const std::string& what) { return SafetensorsError("not a safetensors file: " + what); };
  if (bytes.size() < 8) throw bad("shorter than its 8-byte header length");
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  if (n > bytes.size() - 8) throw bad(fmt::format("its header length {} passes the file's end", n));
  SafetensorsHeader h;
  h.data_start = 8 + n;
  const uint64_t data_size = bytes.size() - h.data_start;
  const nlohmann::json j = nlohmann::json::parse(bytes.begin() + 8, bytes.begin() + 8 + int64_t(n), nullptr, false);
  if (j.is_discarded() || !j.is_object()) throw bad("its header is not a JSON object");
  try {
    for (const auto& [name, v] : j.items()) {
      if (name == kMetadata) {
        for (const auto& [k, s] : v.items()) h.metadata[k] = s.get<std::string>();
        continue;
      }
      SafetensorsHeader::Entry e{name, v.at("dtype").get<std::string>(), v.at("shape").get<std::vector<int64_t>>(),
                                 v.at("data_offsets").at(0).get<uint64_t>(), v.at("data_offsets").at(1).get<uint64_t>()};
      if (v.at("data_offsets").size() != 2) throw bad(fmt::format("tensor '{}' has not two data offsets", name));
      if (e.dtype != "F32") throw bad(fmt::format("tensor '{}' is {}; only F32 is read", name, e.dtype));
      const int64_t count = element_count(e.shape);
      if (count < 0 || e.end < e.begin || e.end - e.begin != uint64_t(count) * sizeof(float))
        throw bad(fmt::format("tensor '{}' has offsets that do not match its shape", name));
      if (e.end > data_size) throw bad(fmt::format("tensor '{}' passes the file's end", name));
      h.tensors.push_back(std::move(e));
    }
  } catch (const nlohmann::json::exception&) {
    throw bad("a header entry lacks dtype, shape or data_offsets, or has the wrong types");
  }
  std::sort(h.tensors.begin(), h.tensors.end(), [](const auto& a, const auto& b) { return a.begin < b.begin; });
  uint64_t at = 0;
  for (const auto& e : h.tensors) {
    if (e.begin != at) throw bad(fmt::format("tensor '{}' leaves a gap or overlaps the one before it", e.name));
    at = e.end;
  }
  if (at != data_size) throw bad(fmt::format("its data holds {} bytes, its tensors {}", data_size, at));
  return h;
}

std::vector<float> safetensors_values(const std::string& bytes, const SafetensorsHeader& h, const std::string& name) {
  for (const auto& e : h.tensors)
    if (e.name == name) {
      std::vector<float> v((e.end - e.begin) / sizeof(float));
      // An empty tensor's vector has no storage: memcpy of null is undefined even for 0 bytes.
      if (!v.empty()) std::memcpy(v.data(), bytes.data() + h.data_start + e.begin, e.end - e.begin);
      return v;
    }
  throw SafetensorsError(fmt::format("safetensors: no tensor '{}'", name));
}

}  // namespace routelab
