#include "agent/workloads/workload.h"

#include <cctype>
#include <map>
#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tlbfleet::workloads {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;

const Workload& EbizzyWorkload() {
  LinkAllWorkloads();
  const Workload* w = Registry::Get().Find("ebizzy");
  EXPECT_NE(w, nullptr);
  return *w;
}

absl::Status ResolveError(std::map<std::string, std::string> given) {
  return ResolveParams(EbizzyWorkload(), given).status();
}

TEST(ParamSpecTest, IntBounds) {
  ParamSpec spec{"threads", ParamType::kInt, "1", 1, 4096, {}, ""};
  EXPECT_TRUE(spec.Check("1").ok());
  EXPECT_TRUE(spec.Check("4096").ok());
  EXPECT_EQ(spec.Check("0").message(), "must be an integer in [1, 4096], got \"0\"");
  EXPECT_FALSE(spec.Check("4097").ok());
  EXPECT_FALSE(spec.Check("").ok());
  EXPECT_FALSE(spec.Check("2x").ok());
  EXPECT_FALSE(spec.Check(" 2").ok());
  EXPECT_FALSE(spec.Check("99999999999999999999999").ok());
}

TEST(ParamSpecTest, BoolSpellings) {
  ParamSpec spec{"random_size", ParamType::kBool, "false", 0, 0, {}, ""};
  for (const char* v : {"true", "false", "yes", "no", "on", "off", "1", "0"}) {
    EXPECT_TRUE(spec.Check(v).ok()) << v;
  }
  EXPECT_THAT(std::string(spec.Check("maybe").message()), HasSubstr("boolean"));
}

TEST(ParamSpecTest, EnumListsChoices) {
  ParamSpec spec{"mmap", ParamType::kEnum, "always", 0, 0, {"always", "never", "auto"}, ""};
  EXPECT_TRUE(spec.Check("never").ok());
  EXPECT_EQ(spec.Check("sometimes").message(),
            "must be one of always|never|auto, got \"sometimes\"");
}

TEST(ResolveParamsTest, FillsDefaultsAndCanonicalises) {
  absl::StatusOr<Params> p =
      ResolveParams(EbizzyWorkload(), {{"threads", "04"}, {"random_size", "yes"}});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->values().size(), EbizzyWorkload().Schema().size());
  EXPECT_EQ(p->Str("threads"), "4");
  EXPECT_EQ(p->Int("threads"), 4);
  EXPECT_EQ(p->Str("random_size"), "true");
  EXPECT_TRUE(p->Bool("random_size"));
  EXPECT_EQ(p->Str("mmap"), "always");
  EXPECT_EQ(p->Int("seconds"), 10);
  EXPECT_FALSE(p->Bool("linear_search"));
}

TEST(ResolveParamsTest, ErrorsNameTheParameter) {
  absl::Status s = ResolveError({{"threads", "0"}});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "threads: must be an integer in [1, 4096], got \"0\"");

  s = ResolveError({{"foo", "1"}});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "foo: unknown parameter for ebizzy (known: threads, seconds, chunks, chunk_size, "
            "mmap, random_size, linear_search, touch_pages, own_memcpy, prevent_coalescing)");

  s = ResolveError({{"mmap", "sometimes"}});
  EXPECT_EQ(s.message(), "mmap: must be one of always|never|auto, got \"sometimes\"");

  s = ResolveError({{"touch_pages", "maybe"}});
  EXPECT_THAT(std::string(s.message()), HasSubstr("touch_pages: must be a boolean"));
}

TEST(WorkloadTest, FindParam) {
  const Workload& w = EbizzyWorkload();
  ASSERT_NE(w.FindParam("chunk_size"), nullptr);
  EXPECT_EQ(w.FindParam("chunk_size")->default_value, "524288");
  EXPECT_EQ(w.FindParam("nope"), nullptr);
}

TEST(WorkloadTest, EverySchemaDefaultIsValid) {
  for (const std::string& name : Registry::Get().Names()) {
    for (const ParamSpec& spec : Registry::Get().Find(name)->Schema()) {
      EXPECT_TRUE(spec.Check(spec.default_value).ok()) << name << "." << spec.name;
    }
  }
}

TEST(WorkloadTest, ClassicFlagsNameSchemaParameters) {
  for (const std::string& name : Registry::Get().Names()) {
    const Workload& w = *Registry::Get().Find(name);
    for (const ClassicFlag& flag : w.ClassicFlags()) {
      if (flag.param.empty()) continue;
      const ParamSpec* spec = w.FindParam(flag.param);
      ASSERT_NE(spec, nullptr) << name << " " << flag.flag;
      if (!flag.fixed_value.empty()) {
        EXPECT_TRUE(spec->Check(flag.fixed_value).ok()) << flag.flag;
      }
    }
  }
}

TEST(RegistryTest, FindsEbizzyAfterLinkAllWorkloads) {
  LinkAllWorkloads();
  const Workload* w = Registry::Get().Find("ebizzy");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->Name(), "ebizzy");
  EXPECT_EQ(w->PrimaryMetric(), "records_per_sec");
  EXPECT_EQ(Registry::Get().Find("nope"), nullptr);
  EXPECT_THAT(Registry::Get().Names(), Contains("ebizzy"));
}

// A second run loop under a name the registry has.
class FakeLoop : public Workload {
 public:
  FakeLoop() : Workload("ebizzy") {}
  absl::StatusOr<std::vector<Measurement>> Run(const Params&) const override {
    return std::vector<Measurement>{};
  }
  std::string ClassicOutput(const Params&, const std::vector<Measurement>&) const override {
    return "";
  }
};

TEST(RegistryDeathTest, DuplicateNameAborts) {
  LinkAllWorkloads();
  EXPECT_DEATH(Registry::Get().Add(std::make_unique<FakeLoop>()),
               "workload \"ebizzy\" registered twice");
}

TEST(RegistryTest, EveryWorkloadOfTheCatalogueHasARunLoop) {
  EXPECT_TRUE(Registry::Get().CheckCoversCatalogue().ok())
      << Registry::Get().CheckCoversCatalogue();
  EXPECT_EQ(Registry::Get().Names(), catalogue::WorkloadNames());
}

// A run loop's schema is the catalogue's entry: it cannot drift from what the controller
// validates against.
TEST(RegistryTest, ARunLoopsSchemaIsTheCataloguesEntry) {
  for (const std::string& name : Registry::Get().Names()) {
    const Workload* loop = Registry::Get().Find(name);
    const catalogue::WorkloadSchema* schema = catalogue::FindWorkload(name);
    ASSERT_NE(schema, nullptr) << name;
    EXPECT_EQ(&loop->Schema(), &schema->Schema()) << name;
    EXPECT_EQ(&loop->Metrics(), &schema->Metrics()) << name;
  }
}

TEST(RegistryDeathTest, ARunLoopWithoutACatalogueEntryAborts) {
  class Orphan : public Workload {
   public:
    Orphan() : Workload("no-such-workload") {}
    absl::StatusOr<std::vector<Measurement>> Run(const Params&) const override {
      return std::vector<Measurement>{};
    }
    std::string ClassicOutput(const Params&, const std::vector<Measurement>&) const override {
      return "";
    }
  };
  EXPECT_DEATH(Orphan(), "has a run loop but no catalogue entry");
}

// A string parameter whose canonical spelling is lower case, and a rule across two
// parameters, as netperf's `server` and `port` have.
class StringWorkload : public catalogue::WorkloadSchema {
 public:
  StringWorkload() {
    ParamSpec name{"name", ParamType::kString, "", 0, 0, {}, ""};
    name.canonical = [](std::string_view v) -> absl::StatusOr<std::string> {
      if (v.find(' ') != std::string_view::npos) {
        return absl::InvalidArgumentError("must not contain spaces");
      }
      std::string lower(v);
      for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      return lower;
    };
    schema_ = {name, {"count", ParamType::kInt, "0", 0, 9, {}, ""}};
  }
  std::string_view Name() const override { return "strings"; }
  std::string_view Description() const override { return ""; }
  const std::vector<ParamSpec>& Schema() const override { return schema_; }
  const std::vector<MetricSpec>& Metrics() const override { return metrics_; }
  std::string_view PrimaryMetric() const override { return ""; }
  int64_t TimeoutSeconds(const Params&) const override { return 1; }
  absl::Status CheckCombination(const Params& params) const override {
    if (params.Str("name").empty() && params.Int("count") > 0) {
      return absl::InvalidArgumentError("count: needs a name");
    }
    return absl::OkStatus();
  }

 private:
  std::vector<ParamSpec> schema_;
  std::vector<MetricSpec> metrics_;
};

TEST(ParamSpecTest, StringWithoutCanonicalizerTakesAnything) {
  ParamSpec spec{"label", ParamType::kString, "", 0, 0, {}, ""};
  EXPECT_TRUE(spec.Check("").ok());
  EXPECT_TRUE(spec.Check("any thing").ok());
}

TEST(ResolveParamsTest, StringsAreCheckedAndStoredCanonically) {
  StringWorkload w;
  EXPECT_EQ(w.FindParam("name")->Check("a b").message(), "must not contain spaces");
  absl::StatusOr<Params> p = ResolveParams(w, {{"name", "MiXed"}});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->Str("name"), "mixed");
  EXPECT_EQ(ResolveParams(w, {{"name", "a b"}}).status().message(),
            "name: must not contain spaces");
}

TEST(ResolveParamsTest, TheWorkloadChecksHowParametersCombine) {
  StringWorkload w;
  EXPECT_TRUE(ResolveParams(w, {{"name", "x"}, {"count", "3"}}).ok());
  absl::Status s = ResolveParams(w, {{"count", "3"}}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "count: needs a name");
}

TEST(ParamsDeathTest, UndeclaredParameterIsABug) {
  Params p(std::map<std::string, std::string>{{"threads", "2"}});
  EXPECT_DEATH(p.Int("thread"), "no such validated parameter");
}

}  // namespace
}  // namespace tlbfleet::workloads
