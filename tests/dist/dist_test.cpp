// The single-process communicator and the byte records ranks exchange: what every run without
// MPI goes through, so it must hand back exactly what it was given.
#include "ptq/dist.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace ptq::dist {
namespace {

TEST(Solo, ReductionsReturnTheirInput) {
  Solo solo;
  EXPECT_EQ(solo.rank(), 0);
  EXPECT_EQ(solo.size(), 1);
  std::vector<double> d{-0.0, 1.5, std::numeric_limits<double>::infinity()};
  solo.min(std::span<double>(d));
  solo.max(std::span<double>(d));
  EXPECT_TRUE(std::signbit(d[0]));
  EXPECT_EQ(d[1], 1.5);
  std::vector<uint64_t> u{1, 2};
  solo.sum(std::span<uint64_t>(u));
  EXPECT_EQ(u, (std::vector<uint64_t>{1, 2}));
  EXPECT_EQ(solo.gather("abc"), std::vector<std::string>{"abc"});
  EXPECT_EQ(solo.broadcast("xyz", 0), "xyz");
}

TEST(Solo, AgreeKeepsTheStatus) {
  Solo solo;
  EXPECT_TRUE(solo.agree(Status::ok(), 5).is_ok());
  EXPECT_FALSE(solo.failed_together());
  const Status s = solo.agree(invalid_input("tensor 'x': bad"), 7);
  EXPECT_EQ(s.code(), StatusCode::kInvalidInput);
  EXPECT_EQ(s.message(), "tensor 'x': bad");
  EXPECT_TRUE(solo.failed_together());
}

TEST(Records, RoundTripBitExact) {
  Writer w;
  w.i64(-3);
  w.f64(0.1);
  w.f64(-0.0);
  w.str(std::string("a\0b", 3));
  w.str("");
  Reader r(w.bytes());
  EXPECT_EQ(*r.i64(), -3);
  EXPECT_EQ(*r.f64(), 0.1);
  EXPECT_TRUE(std::signbit(*r.f64()));
  EXPECT_EQ(*r.str(), std::string("a\0b", 3));
  EXPECT_EQ(*r.str(), "");
  EXPECT_TRUE(r.done());
  EXPECT_FALSE(r.i64().has_value());  // past the end
}

TEST(Records, TruncatedStringIsAnError) {
  Writer w;
  w.i64(100);  // a length longer than what follows
  Reader r(w.bytes());
  const Expected<std::string> s = r.str();
  ASSERT_FALSE(s.has_value());
  EXPECT_NE(s.status().message().find("ends early"), std::string::npos);
}

}  // namespace
}  // namespace ptq::dist
