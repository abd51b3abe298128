#include "io/parse.h"

#include <charconv>
#include <cmath>

namespace routelab {

namespace {

template <class T>
std::optional<T> whole(std::string_view text) {
  T v{};
  if (text.empty() || text.front() == '+') return std::nullopt;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

}  // namespace

std::optional<long long> parse_integer(std::string_view text) { return whole<long long>(text); }

std::optional<uint64_t> parse_unsigned(std::string_view text) {
  if (!text.empty() && text.front() == '-') return std::nullopt;
  return whole<uint64_t>(text);
}

std::optional<double> parse_finite(std::string_view text) {
  const auto v = whole<double>(text);
  if (!v || !std::isfinite(*v)) return std::nullopt;
  return v;
}

std::optional<std::vector<std::string>> split_list(std::string_view text, char sep) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (true) {
    const std::size_t next = text.find(sep, at);
    const std::string_view item = text.substr(at, next == std::string_view::npos ? std::string_view::npos : next - at);
    if (item.empty()) return std::nullopt;
    out.emplace_back(item);
    if (next == std::string_view::npos) return out;
    at = next + 1;
  }
}

}  // namespace routelab
