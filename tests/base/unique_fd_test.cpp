// UniqueFd (base/unique_fd.h): the descriptor it holds is closed exactly once, by whoever holds it
// last, and never when it was released.
#include "base/unique_fd.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <utility>

namespace memreplay {
namespace {

bool is_open(int fd) { return ::fcntl(fd, F_GETFD) != -1; }

int open_dev_null() { return ::open("/dev/null", O_RDONLY | O_CLOEXEC); }

TEST(UniqueFd, ClosesWhatItHoldsWhenItGoes) {
  int raw = -1;
  {
    const UniqueFd fd(open_dev_null());
    raw = fd.get();
    ASSERT_TRUE(fd);
    EXPECT_TRUE(is_open(raw));
  }
  EXPECT_FALSE(is_open(raw));
}

TEST(UniqueFd, EmptyHoldsNothing) {
  const UniqueFd fd;
  EXPECT_FALSE(fd);
  EXPECT_EQ(fd.get(), -1);
}

TEST(UniqueFd, AMoveHandsTheDescriptorOn) {
  UniqueFd from(open_dev_null());
  const int raw = from.get();
  UniqueFd to(std::move(from));
  EXPECT_FALSE(from);  // a moved-from UniqueFd holds nothing
  EXPECT_EQ(to.get(), raw);
  UniqueFd other(open_dev_null());
  const int replaced = other.get();
  other = std::move(to);
  EXPECT_FALSE(is_open(replaced));
  EXPECT_EQ(other.get(), raw);
  EXPECT_TRUE(is_open(raw));
}

TEST(UniqueFd, ResetClosesTheOldOneAndReleaseClosesNothing) {
  UniqueFd fd(open_dev_null());
  const int first = fd.get();
  fd.reset(open_dev_null());
  EXPECT_FALSE(is_open(first));
  const int second = fd.release();
  EXPECT_FALSE(fd);
  EXPECT_TRUE(is_open(second));
  ::close(second);
}

}  // namespace
}  // namespace memreplay
