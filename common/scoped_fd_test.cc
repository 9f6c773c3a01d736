#include "common/scoped_fd.h"

#include <fcntl.h>
#include <gtest/gtest.h>

#include <utility>

namespace tlbfleet {
namespace {

bool IsOpen(int fd) { return ::fcntl(fd, F_GETFD) != -1; }

TEST(ScopedFdTest, ClosesWhenItGoesOutOfScope) {
  int raw = -1;
  {
    ScopedFd fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    ASSERT_TRUE(fd.valid());
    raw = fd.get();
    EXPECT_TRUE(IsOpen(raw));
  }
  EXPECT_FALSE(IsOpen(raw));
}

TEST(ScopedFdTest, MovesOwnershipAndReleaseGivesItUp) {
  ScopedFd a(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  const int raw = a.get();
  ScopedFd b = std::move(a);
  EXPECT_FALSE(a.valid());
  EXPECT_EQ(b.get(), raw);
  ScopedFd c(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  const int other = c.get();
  c = std::move(b);  // closes what c held
  EXPECT_FALSE(IsOpen(other));
  EXPECT_EQ(c.get(), raw);
  const int released = c.release();
  EXPECT_FALSE(c.valid());
  EXPECT_TRUE(IsOpen(released));  // the caller owns it now
  ::close(released);
}

TEST(ScopedFdTest, CloseReportsTheErrorOfABadDescriptor) {
  ScopedFd fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  const int raw = fd.get();
  ::close(raw);  // closed behind its back: its own close must fail with EBADF
  int err = 0;
  EXPECT_FALSE(fd.Close(&err));
  EXPECT_EQ(err, EBADF);
  EXPECT_FALSE(fd.valid());
  EXPECT_TRUE(fd.Close());  // nothing held: nothing to fail
}

TEST(ScopedFdTest, ANegativeValueIsHeldAsInvalidAndReturnedByRelease) {
  ScopedFd fd(-ENOENT);  // Sysroot::OpenFd's way of returning an error
  EXPECT_FALSE(fd);
  EXPECT_EQ(-fd.release(), ENOENT);
}

}  // namespace
}  // namespace tlbfleet
