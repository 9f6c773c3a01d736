#include "controller/report/export_bmf.h"

#include "gmock/gmock.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"

namespace tlbfleet::report {
namespace {

namespace v1 = tlbfleet::v1;

TEST(ExportBmfTest, OneBenchmarkPerArmAndSweepValueWithEstimatesAndIntervals) {
  v1::Report report;
  v1::Report::Group* group = report.add_groups();
  v1::Report::Record* base = group->add_records();
  base->set_arm("base");
  base->set_param("threads=4");
  base->set_metric("records_per_sec");
  base->set_better("higher");
  base->set_hmean(1000);
  base->set_amean(1010);
  base->set_min(900);
  base->set_max(1100);
  v1::Report::Record* other = group->add_records();
  *other = *base;
  other->set_arm("c512");
  other->set_hmean(1200.5);
  other->set_ratio(1.2);
  other->set_ratio_ci_low(1.1);
  other->set_ratio_ci_high(1.3);
  v1::Report::Group* lower = report.add_groups();
  v1::Report::Record* cost = lower->add_records();
  cost->set_arm("base");
  cost->set_metric("cost_ns");
  cost->set_better("lower");
  cost->set_amean(12.5);  // no min/max: the bounds are left out

  // Bencher Metric Format: {benchmark: {measure: {value, lower_value, upper_value}}}.
  const std::string json = ExportBmf(report, "ebizzy");
  EXPECT_EQ(json,
            "{\n"
            "  \"ebizzy/threads=4/base\": {\n"
            "    \"records_per_sec\": {\"value\": 1000, \"lower_value\": 900, \"upper_value\": "
            "1100}\n"
            "  },\n"
            "  \"ebizzy/threads=4/c512\": {\n"
            "    \"records_per_sec\": {\"value\": 1200.5, \"lower_value\": 900, \"upper_value\": "
            "1100},\n"
            "    \"records_per_sec_ratio\": {\"value\": 1.2, \"lower_value\": 1.1, "
            "\"upper_value\": 1.3}\n"
            "  },\n"
            "  \"ebizzy/base\": {\n"
            "    \"cost_ns\": {\"value\": 12.5}\n"
            "  }\n"
            "}\n");
  // And it reads back as BMF: every measure has a numeric value.
  google::protobuf::Value parsed;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json, &parsed).ok());
  for (const auto& [bench, measures] : parsed.struct_value().fields()) {
    for (const auto& [measure, m] : measures.struct_value().fields()) {
      EXPECT_TRUE(m.struct_value().fields().contains("value")) << bench << " " << measure;
      EXPECT_EQ(m.struct_value().fields().at("value").kind_case(),
                google::protobuf::Value::kNumberValue);
    }
  }
}

TEST(ExportBmfTest, AnEmptyReportIsAnEmptyObject) {
  EXPECT_EQ(ExportBmf(v1::Report(), "ebizzy"), "{}\n");
}

}  // namespace
}  // namespace tlbfleet::report
