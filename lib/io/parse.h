// Text to numbers and lists, strictly: the whole text must be the number, in
// the plain decimal form (no spaces, no leading '+', no hex), and must fit the
// type without overflow or saturation. Every flag and sweep value the CLI
// reads goes through these, so " 3", "3 ", "1e999" and 2^64 are refused
// alike rather than read as something else. nullopt: not such a number.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace routelab {

std::optional<long long> parse_integer(std::string_view text);
std::optional<uint64_t> parse_unsigned(std::string_view text);
// A finite double ("nan", "inf" and overflow to infinity refused).
std::optional<double> parse_finite(std::string_view text);
// The items of a `sep`-separated list; an empty item (a leading, trailing or
// doubled separator, or an empty text) makes the whole list nullopt.
std::optional<std::vector<std::string>> split_list(std::string_view text, char sep = ',');

}  // namespace routelab
