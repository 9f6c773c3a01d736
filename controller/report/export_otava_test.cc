#include "controller/report/export_otava.h"

#include <string>
#include <vector>

#include "common/csv.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tlbfleet::report {
namespace {

namespace v1 = tlbfleet::v1;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

v1::Series OtavaSeries(const std::string& id, const std::string& metric, v1::Better better) {
  v1::Series s;
  s.set_id(id);
  s.mutable_key()->set_benchmark("ebizzy");
  s.mutable_key()->set_metric(metric);
  s.set_better(better);
  return s;
}

void AddPoint(v1::Series* s, const std::string& run, int64_t unix_ms, double estimate,
              const std::string& kernel) {
  v1::SeriesPoint* p = s->add_points();
  p->set_run_id(run);
  p->set_finished_unix_ms(unix_ms);
  p->set_estimate(estimate);
  p->set_kernel_release(kernel);
  p->set_boot_entry("lab-6.1");
  p->set_arm("base");
}

TEST(ExportOtavaTest, OneRowPerRunOneColumnPerSeries) {
  v1::Series records = OtavaSeries("3", "records_per_sec", v1::BETTER_HIGHER);
  AddPoint(&records, "10", 1769824800000, 1234.5, "6.1.0-13-amd64");  // 2026-01-31 02:00:00
  AddPoint(&records, "11", 1769911200000, 1200, "6.1.0-14-amd64");
  v1::Series cost = OtavaSeries("4", "cost_ns", v1::BETTER_LOWER);
  AddPoint(&cost, "11", 1769911200000, 12.5, "6.1.0-14-amd64");
  absl::StatusOr<std::vector<ExportFile>> files = ExportOtava({records, cost});
  ASSERT_TRUE(files.ok()) << files.status();
  ASSERT_EQ(files->size(), 2u);
  EXPECT_EQ((*files)[0].path, "tlbfleet.csv");
  EXPECT_EQ((*files)[0].content,
            "time,run,kernel,boot_entry,arm,records_per_sec,cost_ns\n"
            "2026-01-31 02:00:00 +0000,10,6.1.0-13-amd64,lab-6.1,base,1234.5,\n"
            "2026-02-01 02:00:00 +0000,11,6.1.0-14-amd64,lab-6.1,base,1200,12.5\n");
  // Parsed back: every row has the header's columns.
  std::vector<size_t> widths;
  ASSERT_TRUE(ForEachCsvRecord((*files)[0].content, {},
                               [&](size_t, const std::vector<std::string>& fields) {
                                 widths.push_back(fields.size());
                                 return absl::OkStatus();
                               })
                  .ok());
  EXPECT_THAT(widths, ElementsAre(7, 7, 7));
  EXPECT_EQ((*files)[1].path, "otava.yaml");
  EXPECT_THAT((*files)[1].content, HasSubstr("    file: tlbfleet.csv\n    time_column: time\n"));
  EXPECT_THAT((*files)[1].content,
              HasSubstr("      \"records_per_sec\":\n        direction: 1\n        scale: 1\n"));
  EXPECT_THAT((*files)[1].content, HasSubstr("      \"cost_ns\":\n        direction: -1\n"));
}

TEST(ExportOtavaTest, SeriesOfOneMetricAreToldApartByTheirIds) {
  v1::Series a = OtavaSeries("3", "records_per_sec", v1::BETTER_HIGHER);
  v1::Series b = OtavaSeries("5", "records_per_sec", v1::BETTER_HIGHER);
  AddPoint(&a, "10", 1769824800000, 1, "k");
  AddPoint(&b, "10", 1769824800000, 2, "k");
  absl::StatusOr<std::vector<ExportFile>> files = ExportOtava({a, b});
  ASSERT_TRUE(files.ok()) << files.status();
  EXPECT_THAT((*files)[0].content,
              HasSubstr("time,run,kernel,boot_entry,arm,records_per_sec@3,records_per_sec@5\n"));
}

TEST(ExportOtavaTest, NoPointsIsNotFoundNamingSeries) {
  absl::StatusOr<std::vector<ExportFile>> files =
      ExportOtava({OtavaSeries("3", "x", v1::BETTER_HIGHER)});
  EXPECT_EQ(files.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(files.status().message(), HasSubstr("series:"));
}

}  // namespace
}  // namespace tlbfleet::report
