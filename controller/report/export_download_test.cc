#include "controller/report/export_download.h"

#include <cstdlib>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tlbfleet::report {
namespace {

namespace v1 = tlbfleet::v1;
using ::testing::HasSubstr;

// One entry of a ustar archive as POSIX describes the header: name, octal size, checksum over
// the header with its own field as blanks, magic "ustar\0" "00", prefix.
struct TarEntry {
  std::string path, content;
  bool checksum_ok = false;
};

std::vector<TarEntry> ReadTar(const std::string& tar) {
  std::vector<TarEntry> entries;
  size_t at = 0;
  while (at + 512 <= tar.size() && tar[at] != '\0') {
    const char* h = tar.data() + at;
    TarEntry e;
    const std::string name(h, strnlen(h, 100));
    const std::string prefix(h + 345, strnlen(h + 345, 155));
    e.path = prefix.empty() ? name : prefix + "/" + name;
    const size_t size = std::strtoull(std::string(h + 124, 11).c_str(), nullptr, 8);
    unsigned sum = 0;
    for (int i = 0; i < 512; ++i)
      sum += (i >= 148 && i < 156) ? ' ' : static_cast<unsigned char>(h[i]);
    e.checksum_ok = sum == std::strtoul(std::string(h + 148, 6).c_str(), nullptr, 8) &&
                    std::string(h + 257, 6) == std::string("ustar\0", 6) &&
                    std::string(h + 263, 2) == "00" && h[156] == '0';
    e.content = tar.substr(at + 512, size);
    entries.push_back(e);
    at += 512 + (size + 511) / 512 * 512;
  }
  EXPECT_EQ(tar.size(), at + 1024) << "two zero blocks end the archive";
  return entries;
}

TEST(ExportDownloadTest, TarHoldsEveryFileUnderTheTopDirectory) {
  const std::string long_dir(120, 'd');
  absl::StatusOr<std::string> tar =
      TarArchive({{"a/iter-0/ebizzy/logs/ebizzy-1-1.log", "700 records/s\n"},
                  {long_dir + "/f", std::string(600, 'x')}},
                 "run-7-mmtests", 1764456700);
  ASSERT_TRUE(tar.ok()) << tar.status();
  std::vector<TarEntry> entries = ReadTar(*tar);
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].path, "run-7-mmtests/a/iter-0/ebizzy/logs/ebizzy-1-1.log");
  EXPECT_EQ(entries[0].content, "700 records/s\n");
  EXPECT_TRUE(entries[0].checksum_ok);
  EXPECT_EQ(entries[1].path, "run-7-mmtests/" + long_dir + "/f");  // through `prefix`
  EXPECT_EQ(entries[1].content, std::string(600, 'x'));
  EXPECT_TRUE(entries[1].checksum_ok);
  EXPECT_FALSE(TarArchive({{std::string(300, 'p'), ""}}, "t", 0).ok());
}

ExportRun DownloadRun(v1::RunState state) {
  ExportRun run;
  run.run.set_id("7");
  run.run.set_state(state);
  run.run.mutable_spec()->set_benchmark("ebizzy");
  run.run.mutable_spec()->add_arms()->set_name("base");
  v1::Sample* s = &run.samples.emplace_back();
  s->set_arm("base");
  s->set_metric("records_per_sec");
  s->set_value(700);
  return run;
}

TEST(ExportDownloadTest, RunFormatsAreOneDownload) {
  absl::StatusOr<ExportDownload> mm =
      RunExportDownload("mmtests", DownloadRun(v1::RUN_STATE_SUCCEEDED), nullptr);
  ASSERT_TRUE(mm.ok()) << mm.status();
  EXPECT_EQ(mm->content_type, "application/x-tar");
  EXPECT_EQ(mm->filename, "run-7-mmtests.tar");
  EXPECT_THAT(mm->body, HasSubstr("run-7-mmtests/base/iter-0/ebizzy/logs/ebizzy-1-1.log"));
  v1::Report report;
  absl::StatusOr<ExportDownload> bmf =
      RunExportDownload("bmf", DownloadRun(v1::RUN_STATE_SUCCEEDED), &report);
  ASSERT_TRUE(bmf.ok()) << bmf.status();
  EXPECT_EQ(bmf->filename, "run-7-bmf.json");
  EXPECT_EQ(bmf->body, "{}\n");
}

TEST(ExportDownloadTest, RefusesARunningRunAndOtherFormats) {
  absl::StatusOr<ExportDownload> running =
      RunExportDownload("lkp", DownloadRun(v1::RUN_STATE_RUNNING), nullptr);
  EXPECT_EQ(running.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(running.status().message(), HasSubstr("RUN: run 7 is running"));
  absl::StatusOr<ExportDownload> otava =
      RunExportDownload("otava", DownloadRun(v1::RUN_STATE_SUCCEEDED), nullptr);
  EXPECT_EQ(otava.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(otava.status().message(), HasSubstr("format: \"otava\""));
}

}  // namespace
}  // namespace tlbfleet::report
