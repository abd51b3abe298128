// io/parse.h: the whole text is the number or it is refused.
#include <gtest/gtest.h>

#include <cstdint>

#include "io/parse.h"

using namespace routelab;

TEST(Parse, IntegersAreWholeDecimalAndFit) {
  EXPECT_EQ(parse_integer("42"), 42);
  EXPECT_EQ(parse_integer("-7"), -7);
  EXPECT_EQ(parse_integer("9223372036854775807"), INT64_MAX);
  for (const char* bad : {"", " 3", "3 ", "+3", "3.0", "0x10", "9223372036854775808", "1e3", "--1"})
    EXPECT_FALSE(parse_integer(bad)) << bad;
  EXPECT_EQ(parse_unsigned("18446744073709551615"), UINT64_MAX);
  for (const char* bad : {"-1", "18446744073709551616", "", "1 "}) EXPECT_FALSE(parse_unsigned(bad)) << bad;
}

TEST(Parse, RealsAreFinite) {
  EXPECT_EQ(parse_finite("0.25"), 0.25);
  EXPECT_EQ(parse_finite("-1e-3"), -1e-3);
  for (const char* bad : {"", "nan", "inf", "-inf", "1e999", " 1", "1 ", "+1", "1,5", "0x1p3"})
    EXPECT_FALSE(parse_finite(bad)) << bad;
}

TEST(Parse, ListsHaveNoEmptyItem) {
  EXPECT_EQ(split_list("a,b,c"), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(split_list("x"), (std::vector<std::string>{"x"}));
  for (const char* bad : {"", ",", "a,", ",a", "a,,b"}) EXPECT_FALSE(split_list(bad)) << bad;
}
