#pragma once
// The workload catalogue's schema types: what a benchmark accepts (parameters with types,
// bounds, defaults and the classic tool's flags), what it measures (metrics with units and
// directions), which combinations it refuses and how long an iteration may take. Both sides
// link this: the controller validates run specs against it and serves it to the dashboard;
// the agent runs only workloads of the catalogue, with parameters resolved against it
// (agent/workloads/workload.h adds the run loops). No host access, no run loop.

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace tlbfleet::catalogue {

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

// What an mmtests config says, as a workload's mapping reads it (the config's shell variables:
// controller/cli/import_mmtests.cc implements it, warning about values it cannot use).
class MmtestsConfig {
 public:
  virtual ~MmtestsConfig() = default;
  // An integer that must not depend on the host (a parameter, the iterations).
  virtual std::optional<int64_t> Int(const std::string& var) = 0;
  // A sweep bound: an integer or an expression of ncpus, in run spec syntax.
  virtual std::optional<std::string> Bound(const std::string& var) = 0;
  virtual std::vector<std::string> List(const std::string& var) = 0;
  // A size written as an expression of the host's RAM (MEMTOTAL_BYTES/20) as a multiple of
  // it (0.05); nullopt, without a warning, when the variable is unset or does not use
  // MEMTOTAL_BYTES (read it with Int then).
  virtual std::optional<double> RamFactor(const std::string& var) = 0;
  // Reports what the mapping could not carry over from `var` ("<source>:<line>: VAR: what");
  // the variable counts as read. Nothing about a config is dropped silently.
  virtual void Warn(const std::string& var, const std::string& what) = 0;
};

// The run spec an mmtests benchmark becomes, before it is written as YAML.
struct MmtestsSpec {
  std::string benchmark;
  std::vector<std::pair<std::string, std::string>> params;  // values in YAML flow syntax
  std::string sweep;                                        // YAML flow text of `sweep:`, or ""
  std::optional<int64_t> iterations;
  // Set when the benchmark cannot be run faithfully at all: why (the import warns and skips it).
  std::string refused;
};

// How today's mmtests summarises a benchmark in its compare tables (its shellpack.yaml's
// `summarise` and `DecimalPlaces`), for `compare --table mmtests`.
struct MmtestsSummaryStyle {
  std::string summarise = "Multiops";  // or "Normalisedops"
  int decimals = 2;
};

// "{threads: {policy: topology, min: 1, max: 4*ncpus}}": a policy sweep in YAML flow syntax.
std::string PolicySweep(const std::string& param, const std::string& policy,
                        const std::optional<std::string>& min,
                        const std::optional<std::string>& max);

// One workload of the catalogue: its name, schema and metrics, the combinations it refuses and
// the bound of one iteration. Implementations are immutable and thread-safe.
class WorkloadSchema {
 public:
  virtual ~WorkloadSchema() = default;
  virtual std::string_view Name() const = 0;
  virtual std::string_view Description() const = 0;
  virtual const std::vector<ParamSpec>& Schema() const = 0;
  virtual const std::vector<MetricSpec>& Metrics() const = 0;
  // The metric shown first in comparisons (e.g. "records_per_sec").
  virtual std::string_view PrimaryMetric() const = 0;
  // An upper bound on one iteration's wall time with these parameters, used for the job
  // timeout when the run spec does not set one.
  virtual int64_t TimeoutSeconds(const Params& params) const = 0;
  // Checks parameters that are valid alone but may not combine (e.g. netperf's `port` 0,
  // "start a server of our own", with a remote `server`). ResolveParams calls it once every
  // value is valid and the defaults are filled in, so the agent, tlbfleet-bench and the
  // controller at submit all refuse the same combinations. An error starts with the name of
  // the parameter to change ("port: ..."). OK by default.
  virtual absl::Status CheckCombination(const Params& params) const;
  // The classic tool's command-line flags, for tlbfleet-bench. Empty by default.
  virtual const std::vector<ClassicFlag>& ClassicFlags() const;
  // The mmtests benchmark names this workload runs (e.g. "hackbench-pipes"), and how one of
  // their configs becomes a run spec (import-mmtests). None by default.
  virtual std::vector<std::string> MmtestsNames() const;
  virtual void FromMmtests(const std::string& mmtest, MmtestsConfig& config,
                           MmtestsSpec* spec) const;
  // How mmtests summarises the benchmark this workload runs. Multiops, 2 decimals by default.
  virtual MmtestsSummaryStyle MmtestsSummary() const { return {}; }

  const ParamSpec* FindParam(std::string_view name) const;
  const MetricSpec* FindMetric(std::string_view name) const;
};

// Checks `given` against the schema (unknown names, types, bounds) and fills defaults, then
// asks the workload whether the values combine (WorkloadSchema::CheckCombination).
// Error messages start with the parameter name: "threads: must be an integer in [1, 4096]...".
// Values are stored in canonical spelling (ints in decimal, bools as "true"/"false", strings
// as their canonicalizer writes them) so that equal settings compare equal whatever the
// user wrote.
absl::StatusOr<Params> ResolveParams(const WorkloadSchema& workload,
                                     const std::map<std::string, std::string>& given);

// Builders for schemas.
ParamSpec IntParam(std::string name, std::string def, int64_t min, int64_t max, std::string help);
ParamSpec BoolParam(std::string name, std::string help);
ParamSpec EnumParam(std::string name, std::string def, std::vector<std::string> choices,
                    std::string help);
// A free-form string; `canonical` checks a value and gives its canonical spelling (`def`
// must already be in it).
ParamSpec StringParam(std::string name, std::string def, StringCanonicalizer canonical,
                      std::string help);

}  // namespace tlbfleet::catalogue
