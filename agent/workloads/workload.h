#pragma once
// The workload catalogue: every benchmark the agent may run, with its parameter schema and
// metrics. The agent runs only workloads registered here, with parameters validated against
// the schema; the controller links this library to validate run specs at submit time.
//
// A workload runs one iteration in the calling process (the agent runs it in a child
// process: see agent/runner). Output is a list of Measurements.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace tlbfleet::workloads {

enum class ParamType { kInt, kBool, kEnum, kString };

// Checks a kString value and returns its canonical spelling (e.g. an IP address as
// inet_ntop writes it). The error says what is expected, without the parameter name.
using StringCanonicalizer = std::function<absl::StatusOr<std::string>(std::string_view value)>;

// A placeholder value of a kString parameter that the controller resolves to another
// agent's server before the job runs (netperf's `server: peer`): it picks a connected agent
// that advertises a server (HostInfo.netserver), reserves it for the job, and writes the
// server's address into the parameter and its port into `port_param`. Agents and
// tlbfleet-bench never resolve it; a job that reaches a workload unresolved fails.
struct PeerResolution {
  std::string placeholder;  // e.g. "peer"
  std::string port_param;   // e.g. "port", a kInt parameter of the same schema
};

// One parameter of a workload's schema.
struct ParamSpec {
  std::string name;
  ParamType type = ParamType::kInt;
  std::string default_value;         // as it would be written in a run spec
  int64_t min = 0;                   // kInt only, inclusive
  int64_t max = 0;                   // kInt only, inclusive
  std::vector<std::string> choices;  // kEnum only
  std::string help;
  // kString only; unset: any string is valid as written.
  StringCanonicalizer canonical = nullptr;
  // kString only; set when one value of this parameter is resolved to a peer by the controller.
  std::optional<PeerResolution> resolves_to_peer = std::nullopt;

  // OK if `value` is a valid spelling for this parameter. Bools accept
  // true/false/yes/no/on/off/1/0. The error message does not repeat the parameter name:
  // callers prefix the field path (e.g. "arms[1].params.threads: ").
  absl::Status Check(std::string_view value) const;
};

enum class Better { kHigher, kLower };

struct MetricSpec {
  std::string name;  // e.g. "records_per_sec"
  std::string unit;  // e.g. "records/s"
  Better better = Better::kHigher;
  std::string help;
};

// One measured value of one iteration.
struct Measurement {
  std::string metric;
  std::string series;  // "" for the aggregate; "thread0", "thread1", ... for per-thread values
  double value = 0;
  std::string unit;
  Better better = Better::kHigher;
};

// Validated parameter values: every schema parameter present, defaults filled in.
class Params {
 public:
  Params() = default;
  explicit Params(std::map<std::string, std::string> values) : values_(std::move(values)) {}
  int64_t Int(std::string_view name) const;
  bool Bool(std::string_view name) const;
  const std::string& Str(std::string_view name) const;
  const std::map<std::string, std::string>& values() const { return values_; }

 private:
  std::map<std::string, std::string> values_;
};

// One flag of the classic tool's command line, mapped onto a schema parameter, so that
// `tlbfleet-bench ebizzy -t 2 -m` means threads=2, mmap=always.
struct ClassicFlag {
  std::string flag;  // "-t"; short flags may be combined ("-mR") as with getopt
  // "threads". Empty for a flag without a value that is accepted (and may be repeated, as
  // in "-vvv") for compatibility, and ignored.
  std::string param;
  // Empty: the flag takes a value ("-t 2"). Otherwise the flag takes no value and sets
  // `param` to this ("-m" sets mmap=always).
  std::string fixed_value;
  std::string help;
};

class Workload {
 public:
  virtual ~Workload() = default;
  virtual std::string_view Name() const = 0;
  virtual std::string_view Description() const = 0;
  virtual const std::vector<ParamSpec>& Schema() const = 0;
  virtual const std::vector<MetricSpec>& Metrics() const = 0;
  // The metric shown first in comparisons (e.g. "records_per_sec").
  virtual std::string_view PrimaryMetric() const = 0;

  // Runs one iteration. Errors (e.g. cannot allocate memory) are returned, never thrown.
  virtual absl::StatusOr<std::vector<Measurement>> Run(const Params& params) const = 0;

  // The line(s) the classic tool prints for one iteration, e.g. ebizzy's
  // "1234 records/s 617 617". Ends with a newline.
  virtual std::string ClassicOutput(const Params& params,
                                    const std::vector<Measurement>& result) const = 0;

  // An upper bound on one iteration's wall time with these parameters, used for the job
  // timeout when the run spec does not set one.
  virtual int64_t TimeoutSeconds(const Params& params) const = 0;

  const ParamSpec* FindParam(std::string_view name) const;

  // Checks parameters that are valid alone but may not combine (e.g. netperf's `port` 0,
  // "start a server of our own", with a remote `server`). ResolveParams calls it once every
  // value is valid and the defaults are filled in, so the agent, tlbfleet-bench and the
  // controller at submit all refuse the same combinations. An error starts with the name of
  // the parameter to change ("port: ..."). OK by default.
  virtual absl::Status CheckCombination(const Params& params) const;

  // The classic tool's command-line flags, for tlbfleet-bench. Empty by default.
  virtual const std::vector<ClassicFlag>& ClassicFlags() const;
};

// Checks `given` against the schema (unknown names, types, bounds) and fills defaults, then
// asks the workload whether the values combine (Workload::CheckCombination).
// Error messages start with the parameter name: "threads: must be an integer in [1, 4096]...".
// Values are stored in canonical spelling (ints in decimal, bools as "true"/"false", strings
// as their canonicalizer writes them) so that equal settings compare equal whatever the
// user wrote.
absl::StatusOr<Params> ResolveParams(const Workload& workload,
                                     const std::map<std::string, std::string>& given);

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

 private:
  std::map<std::string, std::unique_ptr<Workload>, std::less<>> workloads_;
};

// Registers `Class` (default-constructible, derived from Workload) at static-initialisation
// time. Use once per workload, at namespace scope inside tlbfleet::workloads, in the
// workload's .cc file:
//   REGISTER_WORKLOAD(Ebizzy);
// It also defines `void LinkEbizzyWorkload()`, which LinkAllWorkloads() calls so that the
// object file (and with it the registration) survives static linking. A new workload adds
// its Link<Class>Workload() call to LinkAllWorkloads() in workload.cc.
#define REGISTER_WORKLOAD(Class)                                           \
  void Link##Class##Workload() {}                                          \
  namespace {                                                              \
  [[maybe_unused]] const bool kRegistered##Class = [] {                    \
    ::tlbfleet::workloads::Registry::Get().Add(std::make_unique<Class>()); \
    return true;                                                           \
  }();                                                                     \
  }                                                                        \
  static_assert(true, "REGISTER_WORKLOAD needs a trailing semicolon")

// Forces the linker to keep every workload's object file (static libraries drop unreferenced
// objects, and with them their registrations). Call once before using the registry.
void LinkAllWorkloads();

}  // namespace tlbfleet::workloads
