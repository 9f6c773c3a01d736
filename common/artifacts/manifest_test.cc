#include "common/artifacts/manifest.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_replace.h"
#include "common/artifacts/artifact_for_test.h"
#include "common/artifacts/sha256.h"
#include "common/files.h"
#include "common/temp_dir_for_test.h"

namespace tlbfleet::artifacts {
namespace {

using ::testing::HasSubstr;

TEST(Sha256Test, KnownVectors) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  Sha256Hasher hasher;  // incremental: the same as at once
  hasher.Update("a");
  hasher.Update("bc");
  EXPECT_EQ(hasher.HexDigest(), Sha256Hex("abc"));
}

TEST(Sha256Test, DigestFileReadsAllOfIt) {
  TempDir dir;
  const std::string bytes = TestBytes(3 << 20, 5);  // over DigestFile's 1 MiB buffer
  ASSERT_TRUE(WriteFileAtomic(dir.File("f"), bytes).ok());
  absl::StatusOr<FileDigest> d = DigestFile(dir.File("f"));
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->size, bytes.size());
  EXPECT_EQ(d->sha256, Sha256Hex(bytes));
  EXPECT_TRUE(absl::IsNotFound(DigestFile(dir.File("absent")).status()));
}

TEST(ManifestTest, SameBuildIsOneIdWhateverTheFileOrder) {
  TestArtifact a = MakeTestArtifact("build-1", {{"bzImage", "k"}, {"System.map", "m"}});
  ArtifactManifest reordered = a.manifest;
  std::reverse(reordered.files.begin(), reordered.files.end());
  EXPECT_EQ(ArtifactIdOf(reordered), a.id());
  EXPECT_TRUE(ValidArtifactId(a.id()));

  ArtifactManifest other_build = a.manifest;
  other_build.build_id = "build-2";
  EXPECT_NE(ArtifactIdOf(other_build), a.id());
  ArtifactManifest other_bytes =
      MakeTestArtifact("build-1", {{"bzImage", "K"}, {"System.map", "m"}}).manifest;
  EXPECT_NE(ArtifactIdOf(other_bytes), a.id());
}

TEST(ManifestTest, EncodeParseRoundTrip) {
  TestArtifact a = MakeTestArtifact("b", {{"z", "zz"}, {"a", ""}, {"modules.tar", "mods"}});
  const std::string text = EncodeManifest(a.manifest);
  EXPECT_THAT(text, HasSubstr("\ncompiler gcc (Debian 12.2.0-14) 12.2.0\n"));
  EXPECT_LT(text.find(" a\n"), text.find(" modules.tar\n"));  // sorted by name
  absl::StatusOr<ArtifactManifest> parsed = ParseManifest(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(EncodeManifest(*parsed), text);
  EXPECT_EQ(parsed->compiler, a.manifest.compiler);
  ASSERT_NE(parsed->Find("modules.tar"), nullptr);
  EXPECT_EQ(parsed->Find("modules.tar")->size, 4u);
  EXPECT_EQ(parsed->TotalBytes(), 6u);
}

TEST(ManifestTest, ParseRefusesAnythingNotCanonical) {
  const std::string text = EncodeManifest(MakeTestArtifact("b", {{"a", "1"}, {"b", "2"}}).manifest);
  EXPECT_TRUE(ParseManifest(text).ok());
  std::vector<std::string> bad = {
      "",
      text.substr(0, text.size() - 1),                                 // no final newline
      text + "extra line\n",                                           // unknown line
      absl::StrReplaceAll(text, {{" 1 a\n", " 01 a\n"}}),              // size "01"
      absl::StrReplaceAll(text, {{"source linux", "source  linux"}}),  // extra space
      absl::StrReplaceAll(text, {{"tlbfleet-artifact-manifest 1", "tlbfleet-artifact-manifest 2"}}),
  };
  // Files out of order: the same manifest in another text.
  const size_t a_line = text.find("file "), b_line = text.find("file ", a_line + 1);
  bad.push_back(text.substr(0, a_line) + text.substr(b_line) +
                text.substr(a_line, b_line - a_line));
  for (const std::string& t : bad) {
    EXPECT_TRUE(absl::IsInvalidArgument(ParseManifest(t).status())) << t;
  }
}

TEST(ManifestTest, ValidationNamesTheField) {
  const ArtifactManifest good = MakeTestArtifact("b", {{"bzImage", "k"}}).manifest;
  ASSERT_TRUE(ValidateManifest(good).ok());
  auto message = [](const ArtifactManifest& m) {
    return std::string(ValidateManifest(m).message());
  };

  ArtifactManifest m = good;
  m.commit = "v6.1";
  EXPECT_THAT(message(m), HasSubstr("manifest commit: \"v6.1\" is not a full commit hash"));
  m = good;
  m.compiler = "";
  EXPECT_THAT(message(m), HasSubstr("manifest compiler: missing"));
  m = good;
  m.kernel_release = "6.1\n";
  EXPECT_THAT(message(m), HasSubstr("manifest kernel_release: not printable ASCII"));
  m = good;
  m.files.clear();
  EXPECT_THAT(message(m), HasSubstr("manifest files: none"));
  m = good;
  m.files[0].name = "../etc/passwd";
  EXPECT_THAT(message(m), HasSubstr("manifest file 0 name: \"../etc/passwd\""));
  m = good;
  m.files.push_back(m.files[0]);
  EXPECT_THAT(message(m), HasSubstr("manifest file bzImage: named twice"));
  m = good;
  m.files[0].sha256 = "ABC";
  EXPECT_THAT(message(m), HasSubstr("manifest file bzImage sha256"));
  EXPECT_FALSE(ValidArtifactFileName(".hidden"));
  EXPECT_FALSE(ValidArtifactFileName("a/b"));
  EXPECT_TRUE(ValidArtifactFileName("vmlinuz-6.1.0+"));
}

TEST(ManifestTest, VerifyArtifactFileNamesWhatIsWrong) {
  TempDir dir;
  TestArtifact a = MakeTestArtifact("b", {{"bzImage", "kernel bytes"}});
  const ArtifactFile& f = a.manifest.files[0];
  EXPECT_THAT(VerifyArtifactFile(dir.path(), f).message(), HasSubstr("file bzImage: missing"));
  ASSERT_TRUE(MakeDirs(ArtifactDataDir(dir.path())).ok());
  ASSERT_TRUE(WriteFileAtomic(ArtifactDataFile(dir.path(), "bzImage"), "kernel bytez").ok());
  absl::Status s = VerifyArtifactFile(dir.path(), f);
  EXPECT_TRUE(absl::IsDataLoss(s));
  EXPECT_THAT(s.message(), HasSubstr("file bzImage: 12 bytes, sha256 "));
  EXPECT_THAT(s.message(), HasSubstr("the manifest says 12, " + f.sha256));
  ASSERT_TRUE(WriteFileAtomic(ArtifactDataFile(dir.path(), "bzImage"), "kernel bytes").ok());
  EXPECT_TRUE(VerifyArtifactFile(dir.path(), f).ok());
}

}  // namespace
}  // namespace tlbfleet::artifacts
