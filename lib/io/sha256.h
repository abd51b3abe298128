// SHA-256 (FIPS 180-4), small and dependency-free: the corpus files are
// checked against fixed digests, and sha256sum must agree with us.
#pragma once

#include <cstddef>
#include <string>

namespace routelab {

// Lower-case hex digest of n bytes, as sha256sum prints it.
std::string sha256_hex(const void* data, size_t n);

}  // namespace routelab
