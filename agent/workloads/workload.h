#pragma once
// The agent's workloads: the run loop of every benchmark of the catalogue (catalogue/), which
// holds their schemas. The agent runs only workloads registered here, with parameters
// resolved against the catalogue's schema; the controller links the catalogue alone.
//
// A workload runs one iteration in the calling process (the agent runs it in a child
// process: see agent/runner). Output is a list of Measurements.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "catalogue/catalogue.h"
#include "catalogue/schema.h"

namespace tlbfleet::workloads {

// The catalogue's schema types, as the run loops use them.
using catalogue::Better;
using catalogue::ClassicFlag;
using catalogue::MetricSpec;
using catalogue::Params;
using catalogue::ParamSpec;
using catalogue::ParamType;
using catalogue::PeerResolution;
using catalogue::ResolveParams;
using catalogue::StringCanonicalizer;

// One measured value of one iteration.
struct Measurement {
  std::string metric;
  std::string series;  // "" for the aggregate; "thread0", "thread1", ... for per-thread values
  double value = 0;
  std::string unit;
  Better better = Better::kHigher;
};

// A run loop. Its schema is the catalogue's entry of the same name: the schema methods are the
// catalogue's, so a run loop cannot drift from what the controller validates against.
class Workload : public catalogue::WorkloadSchema {
 public:
  // Binds to catalogue workload `name`; aborts at start-up when the catalogue has none (a run
  // loop no run spec could ever name).
  explicit Workload(std::string_view name);

  std::string_view Name() const final { return schema_.Name(); }
  std::string_view Description() const final { return schema_.Description(); }
  const std::vector<ParamSpec>& Schema() const final { return schema_.Schema(); }
  const std::vector<MetricSpec>& Metrics() const final { return schema_.Metrics(); }
  std::string_view PrimaryMetric() const final { return schema_.PrimaryMetric(); }
  int64_t TimeoutSeconds(const Params& params) const final {
    return schema_.TimeoutSeconds(params);
  }
  absl::Status CheckCombination(const Params& params) const final {
    return schema_.CheckCombination(params);
  }
  const std::vector<ClassicFlag>& ClassicFlags() const final { return schema_.ClassicFlags(); }
  // The catalogue's metric `name`; aborts when the schema has none (a bug of the run loop).
  const MetricSpec& Metric(std::string_view name) const;

  // Runs one iteration. Errors (e.g. cannot allocate memory) are returned, never thrown.
  virtual absl::StatusOr<std::vector<Measurement>> Run(const Params& params) const = 0;

  // The line(s) the classic tool prints for one iteration, e.g. ebizzy's
  // "1234 records/s 617 617". Ends with a newline.
  virtual std::string ClassicOutput(const Params& params,
                                    const std::vector<Measurement>& result) const = 0;

 private:
  const catalogue::WorkloadSchema& schema_;
};

// Registry of workloads by name. Registration happens at static-initialisation time via
// REGISTER_WORKLOAD; a duplicate name aborts at start-up.
// Thread-compatible: Add() runs during static initialisation only; afterwards the registry
// is read-only and safe to use from any thread.
class Registry {
 public:
  static Registry& Get();
  void Add(std::unique_ptr<Workload> workload);
  const Workload* Find(std::string_view name) const;  // nullptr if unknown
  std::vector<std::string> Names() const;             // sorted
  // OK when every workload of the catalogue has a run loop here (and, Add guarantees, no run
  // loop lacks a schema); otherwise which ones are missing. The agent checks it at start.
  absl::Status CheckCoversCatalogue() const;

 private:
  std::map<std::string, std::unique_ptr<Workload>, std::less<>> workloads_;
};

// Registers `Class` (default-constructible, derived from Workload) at static-initialisation
// time. Use once per workload, at namespace scope inside tlbfleet::workloads, in the
// workload's .cc file:
//   REGISTER_WORKLOAD(Ebizzy);
// It also defines `void LinkEbizzyWorkload()`: the build generates LinkAllWorkloads() from the
// REGISTER_WORKLOAD lines of agent/workloads/*.cc (CMakeLists.txt), which Registry::Get() calls,
// so that a static link keeps every registration and no hand-kept list can forget one.
#define REGISTER_WORKLOAD(Class)                                           \
  void Link##Class##Workload() {}                                          \
  namespace {                                                              \
  [[maybe_unused]] const bool kRegistered##Class = [] {                    \
    ::tlbfleet::workloads::Registry::Get().Add(std::make_unique<Class>()); \
    return true;                                                           \
  }();                                                                     \
  }                                                                        \
  static_assert(true, "REGISTER_WORKLOAD needs a trailing semicolon")

// Generated (workloads_linked.cc): references every registered workload's object file.
void LinkAllWorkloads();

}  // namespace tlbfleet::workloads
