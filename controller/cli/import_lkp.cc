#include "controller/cli/import_lkp.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/files.h"
#include "controller/cli/exit_codes.h"
#include "controller/scheduler/run_spec.h"

namespace tlbfleet::cli {
namespace {

// One key of a job, flattened: "will-it-scale.test", "nr_task". A list value is one of LKP's
// matrix dimensions.
// Held as text, not as YAML::Node: assigning a node writes through to the node it refers to.
struct LkpField {
  std::string path;
  std::vector<std::string> values;  // one value, or the elements of a list
  bool list = false;
};
using LkpJob = std::vector<LkpField>;  // in the file's order, which is LKP's expansion order

std::string ScalarOf(const YAML::Node& node) {
  return node.IsScalar() ? node.Scalar() : std::string();
}

// ---- Values in LKP's syntax (lkp-tests' params/* and lib/unit.sh) -------------------------

// A task or thread count: "16", or "50%" of the CPUs (LKP: (50.0 * nr_cpu / 100).to_i).
struct LkpCount {
  std::optional<int64_t> constant;
  std::string ncpus_expr;  // set when the count is a share of the CPUs
};

absl::StatusOr<LkpCount> ParseLkpCount(const std::string& text) {
  LkpCount c;
  int64_t n = 0;
  if (absl::SimpleAtoi(text, &n)) {
    c.constant = n;
    return c;
  }
  if (absl::EndsWith(text, "%")) {
    const std::string number = text.substr(0, text.size() - 1);
    const size_t dot = number.find('.');
    std::string digits = number;
    int64_t scale = 100;
    if (dot != std::string::npos) {
      digits = number.substr(0, dot) + number.substr(dot + 1);
      for (size_t i = dot + 1; i < number.size(); ++i) scale *= 10;
    }
    int64_t numerator = 0;
    if (!digits.empty() && absl::SimpleAtoi(digits, &numerator) && numerator > 0) {
      if (numerator % scale == 0) {
        const int64_t times = numerator / scale;
        c.ncpus_expr = times == 1 ? "ncpus" : absl::StrCat(times, "*ncpus");
      } else {
        c.ncpus_expr = absl::StrCat("ncpus*", numerator, "/", scale);
      }
      return c;
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat("\"", text, "\" is neither a count nor a share of the CPUs like 50%"));
}

// "300s", "5m", "2h", "1d" or plain seconds (lib/unit.sh to_seconds).
absl::StatusOr<int64_t> ParseLkpSeconds(const std::string& text) {
  int64_t unit = 1;
  std::string digits = text;
  if (!text.empty() && std::isalpha(static_cast<unsigned char>(text.back()))) {
    switch (text.back()) {
      case 's':
        unit = 1;
        break;
      case 'm':
        unit = 60;
        break;
      case 'h':
        unit = 3600;
        break;
      case 'd':
        unit = 86400;
        break;
      default:
        unit = 0;
    }
    digits = text.substr(0, text.size() - 1);
  }
  int64_t n = 0;
  if (unit == 0 || !absl::SimpleAtoi(digits, &n) || n < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", text, "\" is not a duration like 300s, 5m or 300"));
  }
  return n * unit;
}

// "100x" or "8" (params/iterations), "10000000ops" (perf-bench's loops): a number with an
// optional unit word.
absl::StatusOr<int64_t> ParseLkpNumber(const std::string& text, std::string_view unit) {
  std::string digits = text;
  if (!unit.empty() && absl::EndsWith(text, std::string(unit)))
    digits = text.substr(0, text.size() - unit.size());
  int64_t n = 0;
  if (!absl::SimpleAtoi(digits, &n)) {
    return absl::InvalidArgumentError(absl::StrCat("\"", text, "\" is not a number"));
  }
  return n;
}

// "10K", "1M", "4G", "4096" (lib/unit.sh to_byte: binary multiples).
absl::StatusOr<int64_t> ParseLkpBytes(const std::string& text) {
  std::string t = absl::AsciiStrToUpper(text);
  if (absl::EndsWith(t, "B")) t.pop_back();
  int64_t unit = 1;
  if (!t.empty() && std::string("KMGT").find(t.back()) != std::string::npos) {
    unit = int64_t{1} << (10 * (std::string("KMGT").find(t.back()) + 1));
    t.pop_back();
  }
  int64_t n = 0;
  if (!absl::SimpleAtoi(t, &n) || n < 0) {
    return absl::InvalidArgumentError(absl::StrCat("\"", text, "\" is not a size like 10K"));
  }
  return n * unit;
}

bool LkpTrue(const std::string& text) {
  // LKP's flags are set by presence ("mmap:" alone) or by a value; 0 and false are off.
  return text != "0" && text != "false" && text != "no" && text != "off";
}

// ---- One atomic job --------------------------------------------------------------------

// The scalar values of one atomic job, and which of them a mapping used.
class LkpAtom {
 public:
  LkpAtom(std::string suite, std::vector<std::pair<std::string, std::string>> values,
          std::vector<std::string> picks)
      : suite_(std::move(suite)), values_(std::move(values)), picks_(std::move(picks)) {}

  // The program's own option ("will-it-scale.test") or the job's top-level one ("nr_task"),
  // as LKP passes both to the program's run script. Marks it used; nullopt when absent.
  std::optional<std::string> Get(const std::string& name) {
    for (const std::string& path : {absl::StrCat(suite_, ".", name), name}) {
      for (auto& [p, v] : values_) {
        if (p == path) {
          used_.insert(p);
          last_path_ = p;
          return v;
        }
      }
    }
    last_path_ = absl::StrCat(suite_, ".", name);
    return std::nullopt;
  }
  // The path of the last Get(), for messages ("will-it-scale.mode").
  const std::string& path() const { return last_path_; }
  void Use(const std::string& path) { used_.insert(path); }

  const std::string& suite() const { return suite_; }
  const std::vector<std::pair<std::string, std::string>>& values() const { return values_; }
  const std::vector<std::string>& picks() const { return picks_; }
  bool used(const std::string& path) const { return used_.count(path) > 0; }

 private:
  std::string suite_;
  std::vector<std::pair<std::string, std::string>> values_;
  std::vector<std::string> picks_;  // the values taken from lists, for the spec's name
  std::set<std::string> used_;
  std::string last_path_;
};

// A run spec before it is written as YAML.
struct LkpSpec {
  std::string name_suffix;  // e.g. "-process" when one atomic job makes two specs
  std::string benchmark;
  std::vector<std::pair<std::string, std::string>> params;
  std::string sweep;  // YAML flow text, or ""
  std::optional<int64_t> iterations;
};

// What a suite's mapping makes of an atomic job: specs, or why it makes none.
struct LkpMapped {
  std::vector<LkpSpec> specs;
  std::string skipped;  // "<field>: <why>" when the job cannot be imported
};

class LkpMapper {
 public:
  LkpMapper(LkpAtom& atom, std::function<void(const std::string&)> warn)
      : atom_(atom), warn_(std::move(warn)) {}

  // A count parameter: a constant in params, a share of the CPUs as a one-value sweep.
  void Count(const std::string& lkp, const std::string& param, LkpSpec* s) {
    std::optional<std::string> v = atom_.Get(lkp);
    if (!v.has_value()) return;
    absl::StatusOr<LkpCount> c = ParseLkpCount(*v);
    if (!c.ok()) {
      warn_(absl::StrCat(atom_.path(), ": ", c.status().message(), "; left at the default"));
    } else if (c->constant.has_value()) {
      s->params.emplace_back(param, absl::StrCat(*c->constant));
    } else {
      s->sweep = absl::StrCat("{", param, ": {policy: linear, min: ", c->ncpus_expr,
                              ", max: ", c->ncpus_expr, "}}");
    }
  }

  template <typename Parse>
  std::optional<int64_t> Number(const std::string& lkp, Parse parse) {
    std::optional<std::string> v = atom_.Get(lkp);
    if (!v.has_value()) return std::nullopt;
    absl::StatusOr<int64_t> n = parse(*v);
    if (!n.ok()) {
      warn_(absl::StrCat(atom_.path(), ": ", n.status().message(), "; left at the default"));
      return std::nullopt;
    }
    return *n;
  }

  void Iterations(LkpSpec* s) {
    s->iterations =
        Number("iterations", [](const std::string& t) { return ParseLkpNumber(t, "x"); });
  }

  LkpAtom& atom() { return atom_; }
  void Warn(const std::string& text) { warn_(text); }

 private:
  LkpAtom& atom_;
  std::function<void(const std::string&)> warn_;
};

// ---- The suites that map ---------------------------------------------------------------

LkpMapped MapWillItScale(LkpMapper& m) {
  LkpMapped out;
  LkpAtom& a = m.atom();
  std::optional<std::string> test = a.Get("test");
  if (!test.has_value()) {
    out.skipped = absl::StrCat(a.path(), ": not set (which will-it-scale test?)");
    return out;
  }
  if (*test != "tlb_flush1" && *test != "tlb_flush2" && *test != "tlb_flush3") {
    out.skipped = absl::StrCat(a.path(), ": \"", *test,
                               "\" has no tlbfleet workload (willitscale runs tlb_flush1, "
                               "tlb_flush2 and tlb_flush3)");
    return out;
  }
  LkpSpec s;
  s.benchmark = "willitscale";
  s.params.emplace_back("test", *test);
  m.Count("nr_task", "tasks", &s);
  const bool one_shot = a.Get("nr_task").has_value();
  // LKP's run script: with nr_task, one run of runtime - WARMUP_ITERATIONS seconds (runtime
  // 300 by default); without, a sweep whose duration depends on the host's NUMA nodes.
  std::optional<int64_t> runtime = m.Number("runtime", ParseLkpSeconds);
  if (!one_shot) {
    s.sweep = "{tasks: {policy: topology, max: ncpus}}";
    if (runtime.has_value()) {
      m.Warn(absl::StrCat(a.path(),
                          ": without nr_task LKP divides it by 3 + the host's NUMA nodes; "
                          "duration left at the default"));
    }
  } else {
    s.params.emplace_back("duration",
                          absl::StrCat(std::max<int64_t>(1, runtime.value_or(300) - 5)));
  }
  if (std::optional<std::string> v = a.Get("no_affinity")) {
    s.params.emplace_back("no_affinity", LkpTrue(*v) ? "true" : "false");
  }
  if (std::optional<std::string> v = a.Get("smt")) {
    s.params.emplace_back("smt", LkpTrue(*v) ? "true" : "false");
  }
  std::optional<std::string> mode = a.Get("mode");
  const std::string modes = mode.value_or("both");
  if (modes != "process" && modes != "thread" && modes != "both") {
    out.skipped = absl::StrCat(a.path(), ": \"", modes, "\" is not process, thread or both");
    return out;
  }
  for (const char* one : {"process", "thread"}) {
    if (modes != "both" && modes != one) continue;
    LkpSpec spec = s;
    spec.params.insert(spec.params.begin() + 1, {"mode", one});
    // LKP's "both" runs the two modes in one job; here they are two runs, named apart.
    if (modes == "both") spec.name_suffix = absl::StrCat("-", one);
    out.specs.push_back(std::move(spec));
  }
  return out;
}

LkpMapped MapEbizzy(LkpMapper& m) {
  LkpAtom& a = m.atom();
  LkpSpec s;
  s.benchmark = "ebizzy";
  m.Count("nr_threads", "threads", &s);
  if (std::optional<int64_t> d = m.Number("duration", ParseLkpSeconds)) {
    s.params.emplace_back("seconds", absl::StrCat(*d));
  }
  // LKP runs ebizzy without -m unless `mmap` is set: buffers from glibc's malloc, which is
  // what `mmap: auto` reproduces (docs/workloads/ebizzy.md).
  std::optional<std::string> mmap = a.Get("mmap");
  s.params.emplace_back("mmap", mmap.has_value() && LkpTrue(*mmap) ? "always" : "auto");
  if (std::optional<std::string> v = a.Get("linear")) {
    s.params.emplace_back("linear_search", LkpTrue(*v) ? "true" : "false");
  }
  m.Iterations(&s);
  return {{s}, ""};
}

LkpMapped MapHackbench(LkpMapper& m) {
  LkpMapped out;
  LkpAtom& a = m.atom();
  LkpSpec s;
  s.benchmark = "hackbench";
  m.Count("nr_threads", "groups", &s);  // LKP: hackbench -g $nr_threads
  if (std::optional<std::string> mode = a.Get("mode")) {
    if (*mode != "process" && *mode != "threads") {
      out.skipped = absl::StrCat(a.path(), ": \"", *mode, "\" is not process or threads");
      return out;
    }
    s.params.emplace_back("mode", *mode == "process" ? "processes" : "threads");
  }
  if (std::optional<std::string> ipc = a.Get("ipc")) {
    if (*ipc != "pipe" && *ipc != "socket") {
      out.skipped = absl::StrCat(a.path(), ": \"", *ipc, "\" is not pipe or socket");
      return out;
    }
    s.params.emplace_back("ipc", *ipc);
  }
  for (const char* key : {"fds", "loops", "datasize"}) {
    if (std::optional<int64_t> v =
            m.Number(key, [](const std::string& t) { return ParseLkpNumber(t, ""); })) {
      s.params.emplace_back(key, absl::StrCat(*v));
    }
  }
  if (!a.used(absl::StrCat(a.suite(), ".loops")) && !a.used("loops")) {
    m.Warn(
        "hackbench.loops: not set, and LKP then computes 30000 x nr_cpu / nr_threads on "
        "the host; left at tlbfleet's default");
  }
  if (a.Get("runtime").has_value()) {
    m.Warn(absl::StrCat(a.path(),
                        ": LKP repeats hackbench until it has passed; tlbfleet runs "
                        "`iterations` times; ignored"));
  }
  m.Iterations(&s);
  out.specs.push_back(std::move(s));
  return out;
}

LkpMapped MapPft(LkpMapper& m) {
  LkpAtom& a = m.atom();
  LkpSpec s;
  s.benchmark = "pft";
  m.Count("nr_task", "threads", &s);
  if (std::optional<int64_t> bytes = m.Number("test_memory_size", ParseLkpBytes)) {
    s.params.emplace_back("size_mb", absl::StrCat(std::max<int64_t>(1, *bytes >> 20)));
  } else if (!a.used(a.path())) {
    m.Warn(
        "pft.test_memory_size: not set, and LKP then maps a fifth of the host's memory; "
        "size_mb left at tlbfleet's default");
  }
  if (a.Get("runtime").has_value()) {
    m.Warn(absl::StrCat(a.path(),
                        ": LKP repeats pft until it has passed; tlbfleet runs `iterations` "
                        "times; ignored"));
  }
  m.Iterations(&s);
  return {{s}, ""};
}

LkpMapped MapNetperf(LkpMapper& m) {
  LkpMapped out;
  LkpAtom& a = m.atom();
  static const auto* kTests = new std::map<std::string, std::string>{{"TCP_STREAM", "tcp_stream"},
                                                                     {"UDP_STREAM", "udp_stream"},
                                                                     {"TCP_RR", "tcp_rr"},
                                                                     {"UDP_RR", "udp_rr"}};
  std::optional<std::string> test = a.Get("test");
  if (!test.has_value()) {
    out.skipped = absl::StrCat(a.path(), ": not set (which netperf test?)");
    return out;
  }
  auto it = kTests->find(*test);
  if (it == kTests->end()) {
    out.skipped = absl::StrCat(a.path(), ": \"", *test,
                               "\" has no tlbfleet workload (netperf runs TCP_STREAM, "
                               "UDP_STREAM, TCP_RR and UDP_RR)");
    return out;
  }
  LkpSpec s;
  s.benchmark = "netperf";
  s.params.emplace_back("test", it->second);
  if (std::optional<int64_t> secs = m.Number("runtime", ParseLkpSeconds)) {
    s.params.emplace_back("seconds", absl::StrCat(*secs));
  }
  if (std::optional<int64_t> size = m.Number("send_size", ParseLkpBytes)) {
    s.params.emplace_back("message_size", absl::StrCat(*size));
  }
  if (std::optional<std::string> n = a.Get("nr_threads"); n.has_value() && *n != "1") {
    m.Warn(absl::StrCat(a.path(), ": LKP runs ", *n,
                        " netperf clients at once; tlbfleet's netperf runs one; ignored"));
  }
  if (std::optional<std::string> ip = a.Get("ip"); ip.has_value() && *ip != "ipv4") {
    m.Warn(absl::StrCat(a.path(), ": \"", *ip,
                        "\": tlbfleet's own server listens on IPv4 loopback; ignored"));
  }
  // cs-localhost: client and server on one host, which is what netperf with its own server
  // (server "", port 0) does.
  if (std::optional<std::string> c = a.Get("cluster"); c.has_value() && *c != "cs-localhost") {
    m.Warn(absl::StrCat(a.path(), ": \"", *c,
                        "\": a cluster of hosts; use netperf's `server: peer` by hand; ignored"));
  }
  m.Iterations(&s);
  out.specs.push_back(std::move(s));
  return out;
}

LkpMapped MapPerfBenchSchedPipe(LkpMapper& m) {
  LkpMapped out;
  LkpAtom& a = m.atom();
  if (std::optional<std::string> mode = a.Get("mode"); mode.has_value() && *mode != "process") {
    out.skipped =
        absl::StrCat(a.path(), ": \"", *mode, "\": tlbfleet's pipetest runs two processes only");
    return out;
  }
  LkpSpec s;
  s.benchmark = "pipetest";
  if (std::optional<int64_t> loops =
          m.Number("loops", [](const std::string& t) { return ParseLkpNumber(t, "ops"); })) {
    s.params.emplace_back("loops", absl::StrCat(*loops));
  }
  m.Iterations(&s);
  out.specs.push_back(std::move(s));
  return out;
}

using SuiteMapping = LkpMapped (*)(LkpMapper&);

const std::map<std::string, SuiteMapping>& Suites() {
  // LKP suite -> mapping. The workloads named here are checked against the catalogue when each
  // spec is parsed (ParseRunSpec), so a renamed workload fails the tests, not the user.
  static const auto* kSuites = new std::map<std::string, SuiteMapping>{
      {"will-it-scale", &MapWillItScale}, {"ebizzy", &MapEbizzy},
      {"hackbench", &MapHackbench},       {"pft", &MapPft},
      {"netperf", &MapNetperf},           {"perf-bench-sched-pipe", &MapPerfBenchSchedPipe},
  };
  return *kSuites;
}

std::string SuiteNames() {
  std::vector<std::string> names;
  for (const auto& [name, mapping] : Suites()) names.push_back(name);
  return absl::StrJoin(names, ", ");
}

// A value as part of a run spec's name (letters, digits, '.', '_', '-'): LKP's "100%"
// becomes "100pct".
std::string NamePart(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '%') {
      out += "pct";
    } else if (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-') {
      out += c;
    } else {
      out += '_';
    }
  }
  return out;
}

// Keys every job has that say nothing to a run spec.
bool Descriptive(const std::string& path) {
  return path == "suite" || path == "testcase" || path == "category";
}

// ---- Reading and expanding the job -----------------------------------------------------

class LkpImporter {
 public:
  explicit LkpImporter(std::string source) : source_(std::move(source)) {}

  absl::StatusOr<LkpImport> Import(std::string_view text) {
    std::vector<YAML::Node> docs;
    try {
      docs = YAML::LoadAll(std::string(text));
    } catch (const YAML::Exception& e) {
      return absl::InvalidArgumentError(absl::StrCat(source_, ": not YAML: ", e.what()));
    }
    std::vector<YAML::Node> present;
    for (const YAML::Node& d : docs) {
      if (!d.IsNull()) present.push_back(d);
    }
    docs = present;
    if (docs.empty() || !docs[0].IsMap()) {
      return absl::InvalidArgumentError(
          absl::StrCat(source_, ": not an LKP job: expected a map of keys such as suite:"));
    }
    LkpJob base;
    Flatten(docs[0], "", &base);
    std::vector<LkpJob> jobs = {base};
    for (size_t i = 1; i < docs.size(); ++i) {
      if (!docs[i].IsMap()) {
        return absl::InvalidArgumentError(
            absl::StrCat(source_, ": document ", i + 1, ": expected a map of keys"));
      }
      LkpJob doc;
      Flatten(docs[i], "", &doc);
      jobs.push_back(Merge(base, doc));
    }
    std::vector<std::string> specs;
    std::string first_skip;
    for (const LkpJob& job : jobs) {
      std::vector<LkpAtom> atoms;
      Expand(job, 0, {}, {}, &atoms);
      for (LkpAtom& atom : atoms) {
        absl::Status s = MapAtom(atom, &specs, &first_skip);
        if (!s.ok()) return s;
      }
    }
    if (specs.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(source_, ": none of its jobs can be imported",
                       first_skip.empty() ? "" : absl::StrCat(" (", first_skip, ")")));
    }
    LkpImport out;
    out.yaml = absl::StrJoin(specs, "---\n");
    out.warnings = std::move(warnings_);
    return out;
  }

 private:
  void Warn(const std::string& text) {
    const std::string w = absl::StrCat(source_, ": ", text);
    if (std::find(warnings_.begin(), warnings_.end(), w) == warnings_.end()) {
      warnings_.push_back(w);
    }
  }

  void Flatten(const YAML::Node& map, const std::string& prefix, LkpJob* out) {
    for (const auto& kv : map) {
      const std::string key = ScalarOf(kv.first);
      const std::string path = prefix + key;
      const YAML::Node& v = kv.second;
      if (key == "<<") {
        Warn(absl::StrCat(path,
                          ": includes another job file, which import-lkp does not "
                          "follow; ignored"));
      } else if (absl::StartsWith(key, "if role client")) {
        Flatten(v, prefix, out);  // where the benchmark runs
      } else if (absl::StartsWith(key, "if role server")) {
        // The server side of a client/server suite: tlbfleet's netperf starts its own.
        if (v.IsMap()) {
          for (const auto& inner : v) {
            const std::string name = ScalarOf(inner.first);
            if (name != "netserver") {
              Warn(absl::StrCat(path, ".", name, ": runs on the server; ignored"));
            }
          }
        }
      } else if (absl::StartsWith(key, "if ")) {
        Warn(absl::StrCat(path, ": a condition import-lkp does not evaluate; ignored"));
      } else if (v.IsMap()) {
        Flatten(v, path + ".", out);
      } else if (v.IsSequence()) {
        bool scalars = true;
        for (const YAML::Node& e : v) scalars = scalars && (e.IsScalar() || e.IsNull());
        if (scalars && v.size() > 0) {
          LkpField f{path, {}, true};
          for (const YAML::Node& e : v) f.values.push_back(ScalarOf(e));
          out->push_back(std::move(f));
        } else {
          Warn(absl::StrCat(path, ": a list of maps or an empty list; ignored"));
        }
      } else {
        out->push_back({path, {ScalarOf(v)}, false});
      }
    }
  }

  // `doc` over `base`, as LKP merges each further document of a job file into the first.
  static LkpJob Merge(const LkpJob& base, const LkpJob& doc) {
    LkpJob out = base;
    for (const LkpField& f : doc) {
      auto it =
          std::find_if(out.begin(), out.end(), [&](const LkpField& o) { return o.path == f.path; });
      if (it != out.end()) {
        *it = f;
      } else {
        out.push_back(f);
      }
    }
    return out;
  }

  // Every combination of the list values, the first list outermost (lkp split-job's order).
  void Expand(const LkpJob& job, size_t i, std::vector<std::pair<std::string, std::string>> values,
              std::vector<std::string> picks, std::vector<LkpAtom>* out) {
    if (i == job.size()) {
      std::string suite;
      for (const auto& [p, v] : values) {
        if (p == "suite") suite = v;
      }
      out->emplace_back(suite, std::move(values), std::move(picks));
      return;
    }
    const LkpField& f = job[i];
    if (!f.list) {
      values.emplace_back(f.path, f.values[0]);
      Expand(job, i + 1, std::move(values), std::move(picks), out);
      return;
    }
    for (const std::string& e : f.values) {
      auto v = values;
      auto p = picks;
      v.emplace_back(f.path, e);
      p.push_back(e);
      Expand(job, i + 1, std::move(v), std::move(p), out);
    }
  }

  absl::Status MapAtom(LkpAtom& atom, std::vector<std::string>* specs, std::string* first_skip) {
    if (atom.suite().empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(source_, ": suite: required (the LKP suite, e.g. will-it-scale)"));
    }
    auto suite = Suites().find(atom.suite());
    if (suite == Suites().end()) {
      return absl::InvalidArgumentError(
          absl::StrCat(source_, ": suite: \"", atom.suite(),
                       "\" has no tlbfleet workload (import-lkp knows ", SuiteNames(), ")"));
    }
    LkpMapper mapper(atom, [this](const std::string& w) { Warn(w); });
    LkpMapped mapped = suite->second(mapper);
    if (!mapped.skipped.empty()) {
      Warn(absl::StrCat(mapped.skipped, "; not imported"));
      if (first_skip->empty()) *first_skip = mapped.skipped;
      return absl::OkStatus();
    }
    const std::string benchmark = mapped.specs.empty() ? "" : mapped.specs[0].benchmark;
    for (const auto& [path, value] : atom.values()) {
      if (atom.used(path) || Descriptive(path) || path == atom.suite()) continue;
      Warn(absl::StrCat(path, ": not used by tlbfleet's ", benchmark, "; ignored"));
    }
    for (const LkpSpec& s : mapped.specs) {
      std::string name = atom.suite();
      for (const std::string& pick : atom.picks()) absl::StrAppend(&name, "-", NamePart(pick));
      absl::StrAppend(&name, s.name_suffix);
      if (int n = ++names_[name]; n > 1) absl::StrAppend(&name, "-", n);
      const std::string yaml = Render(s, name, atom);
      // Checked against the workload catalogue here, so that a value out of range is reported
      // naming the job it came from rather than at submit.
      absl::StatusOr<v1::RunSpec> parsed = scheduler::ParseRunSpec(yaml, name);
      if (!parsed.ok()) {
        Warn(absl::StrCat(name, ": not imported: ", std::string(parsed.status().message())));
        if (first_skip->empty()) *first_skip = std::string(parsed.status().message());
        continue;
      }
      specs->push_back(yaml);
    }
    return absl::OkStatus();
  }

  static std::string Render(const LkpSpec& s, const std::string& name, const LkpAtom& atom) {
    std::vector<std::string> origin;
    for (const auto& [p, v] : atom.values()) {
      if (!Descriptive(p)) origin.push_back(v.empty() ? p : absl::StrCat(p, "=", v));
    }
    std::string out = absl::StrCat("# lkp ", atom.suite(), ": ", absl::StrJoin(origin, " "),
                                   "\nname: ", name, "\nbenchmark: ", s.benchmark, "\n");
    if (!s.params.empty()) {
      std::vector<std::string> kv;
      for (const auto& [k, v] : s.params) kv.push_back(absl::StrCat(k, ": ", v));
      absl::StrAppend(&out, "params: {", absl::StrJoin(kv, ", "), "}\n");
    }
    if (!s.sweep.empty()) absl::StrAppend(&out, "sweep: ", s.sweep, "\n");
    if (s.iterations.has_value()) absl::StrAppend(&out, "iterations: ", *s.iterations, "\n");
    absl::StrAppend(&out, "arms:\n  - {name: baseline}\n");
    return out;
  }

  std::string source_;
  std::vector<std::string> warnings_;
  std::map<std::string, int> names_;
};

}  // namespace

absl::StatusOr<LkpImport> ImportLkpJob(std::string_view text, std::string_view source) {
  LkpImporter importer(std::string(source.empty() ? "<job>" : source));
  return importer.Import(text);
}

int ImportLkpCommand(const std::string& file, std::ostream& out, std::ostream& err) {
  const bool from_stdin = file == "-";
  absl::StatusOr<std::string> text = ReadFile(from_stdin ? "/dev/stdin" : file);
  if (!text.ok()) {
    err << "tlbfleet: cannot read LKP job: " << text.status().message() << '\n';
    return kExitUsage;
  }
  absl::StatusOr<LkpImport> imported = ImportLkpJob(*text, from_stdin ? "<stdin>" : file);
  if (!imported.ok()) {
    err << "tlbfleet: " << imported.status().message() << '\n';
    return kExitUsage;
  }
  for (const std::string& warning : imported->warnings) err << "tlbfleet: " << warning << '\n';
  out << imported->yaml << std::flush;
  return kExitOk;
}

}  // namespace tlbfleet::cli
