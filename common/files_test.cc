#include "common/files.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <string>

#include "common/scoped_fd.h"
#include "common/temp_dir_for_test.h"

namespace tlbfleet {
namespace {

TEST(DirNameTest, IsTheDirectoryPartOrDotOrRoot) {
  EXPECT_EQ(DirName("/var/lib/tlbfleet/db.sqlite"), "/var/lib/tlbfleet");
  EXPECT_EQ(DirName("db.sqlite"), ".");
  EXPECT_EQ(DirName("/db.sqlite"), "/");
  EXPECT_EQ(DirName("state/agent-id"), "state");
}

class FilesTest : public ::testing::Test {
 protected:
  TempDir temp_{"tlbfleet-files-test"};
  const std::string dir_ = temp_.path();
};

TEST_F(FilesTest, WriteFileAtomicReplacesTheWholeFileAndLeavesNoTemporary) {
  const std::string path = dir_ + "/f";
  ASSERT_TRUE(WriteFileAtomic(path, "old contents, longer").ok());
  ASSERT_TRUE(WriteFileAtomic(path, "new").ok());
  absl::StatusOr<std::string> text = ReadFile(path);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text, "new");
  EXPECT_EQ(std::system(("test $(ls " + dir_ + " | wc -l) -eq 1").c_str()), 0);
}

TEST_F(FilesTest, ReadFdReadsFromWhereItIsToTheEnd) {
  const std::string path = dir_ + "/f";
  std::string big(100000, 'x');
  big += "end";
  ASSERT_TRUE(WriteFileAtomic(path, big).ok());
  ScopedFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(fd);
  ASSERT_EQ(::lseek(fd.get(), 99999, SEEK_SET), 99999);
  absl::StatusOr<std::string> rest = ReadFd(fd.get(), path);
  ASSERT_TRUE(rest.ok());
  EXPECT_EQ(*rest, "xend");
}

TEST_F(FilesTest, ErrorsNameThePathAndKeepErrno) {
  absl::StatusOr<std::string> missing = ReadFile(dir_ + "/none");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find(dir_ + "/none"), std::string::npos);
  ScopedFd dir(::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  int err = 0;
  EXPECT_FALSE(ReadFd(dir.get(), "a directory", &err).ok());
  EXPECT_EQ(err, EISDIR);
  EXPECT_TRUE(FsyncDirectory(dir_).ok());
  EXPECT_EQ(FsyncDirectory(dir_ + "/none").code(), absl::StatusCode::kNotFound);
}

TEST_F(FilesTest, APemFileIsReadOrRefusedNamingItsFlag) {
  const std::string pem = dir_ + "/ca.pem";
  const std::string text = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
  ASSERT_TRUE(WriteFileAtomic(pem, text).ok());
  absl::StatusOr<std::string> read = ReadPemFile(pem, "--tls-ca");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, text);

  const std::string not_pem = dir_ + "/key.der";
  ASSERT_TRUE(WriteFileAtomic(not_pem, "\x30\x82").ok());
  EXPECT_EQ(ReadPemFile(not_pem, "--tls-key").status().message(),
            "--tls-key " + not_pem + ": not a PEM file");
  absl::StatusOr<std::string> missing = ReadPemFile(dir_ + "/none", "--tls-cert");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(missing.status().message(), "--tls-cert " + dir_ + "/none: cannot read it");
}

}  // namespace
}  // namespace tlbfleet
