#include "controller/cli/import_mmtests.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "catalogue/catalogue.h"
#include "common/files.h"
#include "controller/cli/exit_codes.h"
#include "controller/scheduler/ncpus_expr.h"
#include "controller/scheduler/run_spec.h"

namespace tlbfleet::cli {
namespace {

bool IsNameStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool IsNameChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// One assignment of the config, with its value expanded.
struct Variable {
  int line = 0;
  std::string raw;          // as written, quotes removed
  std::string value;        // $VAR and $((...)) expanded; NUMCPUS became "ncpus"
  std::string problem;      // why the value could not be expanded ("" if it could)
  bool arithmetic = false;  // value is an expression (from $((...)) or NUMCPUS)
  bool used = false;
  bool warned = false;  // its problem has been reported
};

// Host facts of mmtests' environment that tlbfleet cannot evaluate at import time (the
// names of mmtests 0.15 and of today's shellpacks/common.sh). MEMTOTAL_BYTES can still become
// a multiple of RAM where a workload takes one (MmtestsConfig::RamFactor).
const std::set<std::string>& HostOnlyVariables() {
  static const std::set<std::string> kVars = {"MEMTOTAL_BYTES", "NUMNODES",         "PAGESIZE",
                                              "MEMTOTAL_PAGES", "NUMCPUS_PER_NODE", "NUM_NODES",
                                              "NUM_LLCS",       "NUM_CORES",        "SMT_WEIGHT",
                                              "LLC_WEIGHT",     "NODE_WEIGHT",      "LLC_INDEX"};
  return kVars;
}

// The host's logical CPU count: NUMCPUS in mmtests 0.15, NUM_LOGICAL_CPUS today.
bool IsCpuCount(const std::string& name) { return name == "NUMCPUS" || name == "NUM_LOGICAL_CPUS"; }

// RamFactor evaluates a size at two RAM sizes: a multiple of RAM doubles exactly (up to the
// shell's truncating division), anything else (an offset, a product of two host facts) does not.
constexpr int64_t kProbeRamBytes = 1'000'000'000'000;

class Importer : public catalogue::MmtestsConfig {
 public:
  explicit Importer(std::string source) : source_(std::move(source)) {}

  void ReadConfig(std::string_view text) {
    int line_no = 0;
    int depth = 0;  // nesting of if/case/for/while blocks
    for (absl::string_view line :
         absl::StrSplit(absl::string_view(text.data(), text.size()), '\n')) {
      ++line_no;
      std::string l(absl::StripAsciiWhitespace(line));
      if (l.empty() || l[0] == '#') continue;
      // Shell control flow is not evaluated: what it guards is reported, not guessed.
      const std::string first_word = l.substr(0, l.find_first_of(" \t;"));
      if (first_word == "if" || first_word == "case" || first_word == "for" ||
          first_word == "while" || first_word == "until") {
        ++depth;
      } else if ((first_word == "fi" || first_word == "esac" || first_word == "done") &&
                 depth > 0) {
        --depth;
      }
      absl::string_view rest(l);
      if (rest.size() > 7 && absl::StartsWith(rest, "export") &&
          (rest[6] == ' ' || rest[6] == '\t')) {
        rest = absl::StripLeadingAsciiWhitespace(rest.substr(6));
      }
      size_t eq = rest.find('=');
      std::string name(rest.substr(0, eq == absl::string_view::npos ? 0 : eq));
      if (eq == absl::string_view::npos || name.empty() || !IsNameStart(name[0]) ||
          !std::all_of(name.begin(), name.end(), IsNameChar)) {
        WarnLine(line_no, absl::StrCat("not an assignment (", Shorten(l), "); ignored"));
        continue;
      }
      if (depth > 0) {
        WarnLine(line_no, absl::StrCat(name,
                                       ": set inside a conditional or a loop, which "
                                       "import-mmtests does not evaluate; ignored"));
        continue;
      }
      Variable var;
      var.line = line_no;
      var.raw = Unquote(std::string(rest.substr(eq + 1)));
      Expand(&var);
      vars_[name] = std::move(var);
    }
  }

  absl::StatusOr<MmtestsImport> Build() {
    auto mmtests = vars_.find("MMTESTS");
    if (mmtests == vars_.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat(source_, ": no MMTESTS variable: which benchmarks does it run?"));
    }
    mmtests->second.used = true;
    std::vector<std::string> docs;
    for (absl::string_view b :
         absl::StrSplit(mmtests->second.value, absl::ByAnyChar(" \t,"), absl::SkipEmpty())) {
      std::optional<std::string> doc = BuildSpec(std::string(b), mmtests->second.line);
      if (doc.has_value()) docs.push_back(*std::move(doc));
    }
    for (auto& [name, var] : vars_) {
      if (var.used) continue;
      WarnLine(var.line, absl::StrCat(name, ": not used by any imported benchmark; ignored"));
    }
    std::stable_sort(warnings_.begin(), warnings_.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    MmtestsImport out;
    // Two benchmarks of one config read the same variable: say what was lost once.
    std::set<std::string> said;
    for (auto& [line, text] : warnings_) {
      if (said.insert(text).second) out.warnings.push_back(std::move(text));
    }
    if (docs.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(source_,
                                                     ": none of the benchmarks in MMTESTS (",
                                                     mmtests->second.value, ") can be imported"));
    }
    out.yaml = absl::StrJoin(docs, "---\n");
    return out;
  }

 private:
  static std::string Shorten(const std::string& s) {
    return s.size() > 40 ? s.substr(0, 37) + "..." : s;
  }

  static std::string Unquote(std::string v) {
    v = std::string(absl::StripAsciiWhitespace(v));
    // A trailing comment after an unquoted value.
    if (!v.empty() && v[0] != '"' && v[0] != '\'') {
      size_t hash = v.find(" #");
      if (hash != std::string::npos) v = std::string(absl::StripAsciiWhitespace(v.substr(0, hash)));
    }
    if (v.size() >= 2 && (v[0] == '"' || v[0] == '\'') && v.back() == v[0]) {
      return v.substr(1, v.size() - 2);
    }
    return v;
  }

  void WarnLine(int line, const std::string& what) {
    warnings_.emplace_back(line, absl::StrCat(source_, ":", line, ": ", what));
  }

  // The value of variable `name` for use inside another value, or nullopt with `problem` set.
  std::optional<std::string> Reference(const std::string& name, bool in_arithmetic,
                                       bool* arithmetic, std::string* problem) {
    if (ram_mode_) {
      // Only while RamFactor probes a size: MEMTOTAL_BYTES stands in the `ncpus` slot.
      if (name == "MEMTOTAL_BYTES") {
        *arithmetic = true;
        return std::string("ncpus");
      }
      if (IsCpuCount(name)) {
        *problem = absl::StrCat("mixes MEMTOTAL_BYTES with ", name);
        return std::nullopt;
      }
    }
    if (IsCpuCount(name)) {
      *arithmetic = true;
      return std::string("ncpus");
    }
    if (HostOnlyVariables().count(name) > 0) {
      *problem = absl::StrCat("uses ", name, ", which tlbfleet cannot know before the job runs");
      return std::nullopt;
    }
    auto it = vars_.find(name);
    if (it == vars_.end()) {
      *problem = absl::StrCat("uses ", name, ", which the config does not set");
      return std::nullopt;
    }
    if (!it->second.problem.empty()) {
      *problem = it->second.problem;
      return std::nullopt;
    }
    if (it->second.arithmetic) *arithmetic = true;
    it->second.used = true;  // consumed through the variable that references it
    return in_arithmetic || it->second.arithmetic ? absl::StrCat("(", it->second.value, ")")
                                                  : it->second.value;
  }

  void Expand(Variable* var) {
    const std::string& s = var->raw;
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] == '`' || (s[i] == '$' && i + 1 < s.size() && s[i + 1] == '(' &&
                          !(i + 2 < s.size() && s[i + 2] == '('))) {
        var->problem = "runs a command, and import-mmtests never runs the config";
        return;
      }
      if (s[i] != '$') {
        out += s[i];
        continue;
      }
      if (s.compare(i, 3, "$((") == 0) {
        size_t end = s.find("))", i + 3);
        if (end == std::string::npos) {
          var->problem = "unterminated $((";
          return;
        }
        std::string expr;
        const std::string body = s.substr(i + 3, end - i - 3);
        for (size_t j = 0; j < body.size();) {
          if (body[j] == '$') ++j;  // $VAR inside arithmetic means VAR
          if (j < body.size() && IsNameStart(body[j])) {
            size_t k = j;
            while (k < body.size() && IsNameChar(body[k])) ++k;
            std::optional<std::string> v =
                Reference(body.substr(j, k - j), true, &var->arithmetic, &var->problem);
            if (!v.has_value()) return;
            expr += *v;
            j = k;
          } else if (j < body.size()) {
            expr += body[j++];
          }
        }
        var->arithmetic = true;
        out += expr;
        i = end + 1;
        continue;
      }
      size_t start = i + 1;
      size_t end = start;
      bool braced = start < s.size() && s[start] == '{';
      if (braced) ++start;
      end = start;
      while (end < s.size() && IsNameChar(s[end])) ++end;
      if (end == start) {
        out += '$';
        continue;
      }
      std::optional<std::string> v =
          Reference(s.substr(start, end - start), false, &var->arithmetic, &var->problem);
      if (!v.has_value()) return;
      out += *v;
      i = braced && end < s.size() && s[end] == '}' ? end : end - 1;
    }
    var->value = out;
  }

  // The variable, marked used; nullptr if unset. Reports variables whose value was unusable.
  const Variable* Use(const std::string& name) {
    auto it = vars_.find(name);
    if (it == vars_.end()) return nullptr;
    it->second.used = true;
    if (!it->second.problem.empty()) {
      if (!it->second.warned) {
        WarnLine(it->second.line,
                 absl::StrCat(name, ": ", it->second.problem, "; left at the default"));
      }
      it->second.warned = true;
      return nullptr;
    }
    return &it->second;
  }

  // An integer that must not depend on the host (a workload parameter, iterations).
  std::optional<int64_t> Int(const std::string& name) override {
    const Variable* v = Use(name);
    if (v == nullptr) return std::nullopt;
    absl::StatusOr<scheduler::NcpusExpr> e = scheduler::ParseNcpusExpr(v->value);
    if (!e.ok()) {
      WarnLine(v->line, absl::StrCat(name, ": not an integer (", std::string(e.status().message()),
                                     "); left at the default"));
      return std::nullopt;
    }
    if (e->uses_ncpus) {
      WarnLine(v->line, absl::StrCat(name,
                                     ": depends on NUMCPUS, which only a sweep bound may; "
                                     "left at the default"));
      return std::nullopt;
    }
    return e->constant;
  }

  // A sweep bound: an integer or an ncpus expression, in run spec syntax.
  std::optional<std::string> Bound(const std::string& name) override {
    const Variable* v = Use(name);
    if (v == nullptr) return std::nullopt;
    absl::StatusOr<scheduler::NcpusExpr> e = scheduler::ParseNcpusExpr(v->value);
    if (!e.ok()) {
      WarnLine(v->line, absl::StrCat(name, ": not an integer or an expression of NUMCPUS (",
                                     std::string(e.status().message()), "); left at the default"));
      return std::nullopt;
    }
    if (e->constant.has_value()) return absl::StrCat(*e->constant);
    std::string text = v->value;
    text.erase(std::remove(text.begin(), text.end(), ' '), text.end());
    return text;
  }

  std::vector<std::string> List(const std::string& name) override {
    const Variable* v = Use(name);
    if (v == nullptr) return {};
    return absl::StrSplit(v->value, absl::ByAnyChar(", \t"), absl::SkipEmpty());
  }

  std::optional<double> RamFactor(const std::string& name) override {
    auto it = vars_.find(name);
    if (it == vars_.end() || it->second.raw.find("MEMTOTAL_BYTES") == std::string::npos) {
      return std::nullopt;
    }
    Variable& var = it->second;
    var.used = true;
    Variable probe;
    probe.raw = var.raw;
    ram_mode_ = true;
    Expand(&probe);
    ram_mode_ = false;
    std::string problem = probe.problem;
    double factor = 0;
    if (problem.empty()) {
      absl::StatusOr<int64_t> one = scheduler::EvaluateNcpusExpr(probe.value, kProbeRamBytes);
      absl::StatusOr<int64_t> two = scheduler::EvaluateNcpusExpr(probe.value, 2 * kProbeRamBytes);
      if (!one.ok() || !two.ok()) {
        problem = absl::StrCat("not an expression of MEMTOTAL_BYTES (",
                               std::string((one.ok() ? two : one).status().message()), ")");
      } else if (*one <= 0 || std::abs(*two - 2 * *one) > 2) {
        problem = "not a positive multiple of MEMTOTAL_BYTES";
      } else {
        factor = static_cast<double>(*one) / static_cast<double>(kProbeRamBytes);
      }
    }
    if (!problem.empty()) {
      if (!var.warned)
        WarnLine(var.line, absl::StrCat(name, ": ", problem, "; left at the default"));
      var.warned = true;
      return std::nullopt;
    }
    return factor;
  }

  void Warn(const std::string& name, const std::string& what) override {
    auto it = vars_.find(name);
    if (it == vars_.end()) return;  // unset: there is nothing to carry over
    it->second.used = true;
    WarnLine(it->second.line, absl::StrCat(name, ": ", what));
  }

  // Emits a spec; nullopt (with a warning) for a benchmark tlbfleet does not have.
  std::optional<std::string> BuildSpec(const std::string& mmtest, int line);

  std::string source_;
  std::map<std::string, Variable> vars_;
  std::vector<std::pair<int, std::string>> warnings_;
  bool ram_mode_ = false;  // Expand reads MEMTOTAL_BYTES as `ncpus` (RamFactor's probe)
};

// One run spec's fields before they are written as YAML.
struct Spec {
  std::string name;
  std::string benchmark;
  std::vector<std::pair<std::string, std::string>> params;
  std::string sweep;  // the YAML flow text of `sweep:`, or ""
  std::optional<int64_t> iterations;
};

std::string RenderSpec(const Spec& s, const std::string& mmtest) {
  std::string out =
      absl::StrCat("# mmtests ", mmtest, "\nname: ", s.name, "\nbenchmark: ", s.benchmark, "\n");
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

std::optional<std::string> Importer::BuildSpec(const std::string& mmtest, int line) {
  // Each workload of the catalogue says which mmtests benchmarks it runs, and how.
  const catalogue::WorkloadSchema* workload = catalogue::FindMmtestsWorkload(mmtest);
  if (workload == nullptr) {
    WarnLine(line, absl::StrCat("MMTESTS: benchmark \"", mmtest,
                                "\" has no tlbfleet workload; not imported"));
    return std::nullopt;
  }
  Spec s;
  s.name = mmtest;
  catalogue::MmtestsSpec mapped;
  workload->FromMmtests(mmtest, *this, &mapped);
  if (!mapped.refused.empty()) {
    WarnLine(line,
             absl::StrCat("MMTESTS: benchmark \"", mmtest, "\" not imported: ", mapped.refused));
    return std::nullopt;
  }
  s.benchmark = mapped.benchmark;
  s.params = std::move(mapped.params);
  s.sweep = std::move(mapped.sweep);
  s.iterations = mapped.iterations;
  std::string yaml = RenderSpec(s, mmtest);
  // Check what we emit against the workload catalogue, so that a bad value in the config
  // is reported here, naming the variable's benchmark, rather than at submit.
  absl::StatusOr<v1::RunSpec> parsed = scheduler::ParseRunSpec(yaml, mmtest);
  if (!parsed.ok()) {
    WarnLine(line, absl::StrCat("MMTESTS: benchmark \"", mmtest,
                                "\" not imported: ", std::string(parsed.status().message())));
    return std::nullopt;
  }
  return yaml;
}

}  // namespace

absl::StatusOr<MmtestsImport> ImportMmtestsConfig(std::string_view text, std::string_view source) {
  Importer importer(std::string(source.empty() ? "<config>" : source));
  importer.ReadConfig(text);
  return importer.Build();
}

int ImportMmtestsCommand(const std::string& file, std::ostream& out, std::ostream& err) {
  const bool from_stdin = file == "-";
  absl::StatusOr<std::string> text = ReadFile(from_stdin ? "/dev/stdin" : file);
  if (!text.ok()) {
    err << "tlbfleet: cannot read mmtests config: " << text.status().message() << '\n';
    return kExitUsage;
  }
  absl::StatusOr<MmtestsImport> imported =
      ImportMmtestsConfig(*text, from_stdin ? "<stdin>" : file);
  if (!imported.ok()) {
    err << "tlbfleet: " << imported.status().message() << '\n';
    return kExitUsage;
  }
  for (const std::string& warning : imported->warnings) err << "tlbfleet: " << warning << '\n';
  out << imported->yaml << std::flush;
  return kExitOk;
}

}  // namespace tlbfleet::cli
