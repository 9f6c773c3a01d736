#include "controller/report/render.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "controller/report/arm_hosts.h"
#include "controller/report/results_csv.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/util/json_util.h"

namespace tlbfleet::report {
namespace {

using v1::Report;

std::string Pad(const std::string& s, size_t width, bool left) {
  if (s.size() >= width) return s;
  const std::string fill(width - s.size(), ' ');
  return left ? fill + s : s + fill;
}

std::string Num(bool has, double v) { return has ? absl::StrFormat("%.4g", v) : "n/a"; }

std::string Ratio(double v) { return absl::StrFormat("%.4f", v); }

std::string SweepLabelOf(const Report::Group& group) {
  if (group.param_name().empty()) return group.param_value();
  return absl::StrCat(group.param_name(), "=", group.param_value());
}

std::string MetricTitle(const Report::Group& group) {
  const char* direction =
      group.better() == v1::BETTER_LOWER ? "lower is better" : "higher is better";
  if (group.unit().empty()) return absl::StrCat(group.metric(), " (", direction, ")");
  return absl::StrCat(group.metric(), " (", group.unit(), ", ", direction, ")");
}

// Whether pct_diff[i] means something: both values defined, and a zero baseline only against
// a zero value (compare.h).
bool PctDefined(const Report::Stat& stat, int i) {
  if (stat.defined_size() <= i || !stat.defined(0) || !stat.defined(i)) return false;
  return stat.values(0) != 0 || stat.values(i) == 0;
}

bool Significant(const Report::Group& group, int arm) {
  return arm < group.records_size() && group.records(arm).significant();
}

// A cell of a report that did not come from ReportFromComparison may lack columns; print those
// as undefined rather than read past the end.
std::string Cell(const Report::Group& group, const Report::Stat& stat, int i) {
  const bool defined = i < stat.values_size() && i < stat.defined_size() && stat.defined(i);
  const std::string value =
      defined ? absl::StrFormat("%12.2f", stat.values(i)) : absl::StrFormat("%12s", "NaN");
  const std::string pct = PctDefined(stat, i) && i < stat.pct_diff_size()
                              ? absl::StrFormat("%7.2f", stat.pct_diff(i))
                              : absl::StrFormat("%7s", "NaN");
  if (stat.headline() && Significant(group, i)) return absl::StrCat(value, " *", pct, "%*");
  return absl::StrCat(value, " (", pct, "%)");
}

const Report::Verdict* VerdictOf(const Report::Group& group, const std::string& arm) {
  for (const Report::Verdict& v : group.verdicts()) {
    if (v.arm() == arm) return &v;
  }
  return nullptr;
}

std::string VerdictLine(const Report::Group& group, const std::string& arm) {
  const Report::Verdict* v = VerdictOf(group, arm);
  if (v == nullptr) return absl::StrCat(arm, "  baseline");
  std::string line = absl::StrCat(arm, "  ", v->verdict());
  if (v->has_ratio()) {
    absl::StrAppend(&line, "  ratio ", Ratio(v->ratio()));
    if (v->has_ci_low() && v->has_ci_high()) {
      absl::StrAppend(&line, " [", Ratio(v->ci_low()), ", ", Ratio(v->ci_high()), "]");
    }
  }
  if (v->has_p())
    absl::StrAppend(&line, "  p ", Num(true, v->p()), "  q ", Num(v->has_q(), v->q()));
  if (!v->design().empty()) {
    absl::StrAppend(&line, "  ", v->scope());
    if (v->design() == "paired-boots") {
      absl::StrAppend(&line, ", paired over ", v->units_other(), " boots");
    } else if (v->design() == "unpaired-boots") {
      absl::StrAppend(&line, ", ", v->units_base(), " + ", v->units_other(), " boots");
    } else if (v->design() == "paired-iterations") {
      absl::StrAppend(&line, ", paired over ", v->units_other(), " iterations");
    }
  }
  return line;
}

// The cross-checks on all samples, one line.
std::string PooledLine(const Report::Record& r) {
  std::string line = absl::StrCat("pooled samples: Welch p ", Num(r.has_welch_p(), r.welch_p()),
                                  ", MWU p ", Num(r.has_mwu_p(), r.mwu_p()));
  if (r.has_hl_shift()) {
    absl::StrAppend(&line, ", HL shift ", Num(true, r.hl_shift()), " [",
                    Num(r.has_hl_ci_low(), r.hl_ci_low()), ", ",
                    Num(r.has_hl_ci_high(), r.hl_ci_high()), "]");
  }
  return line;
}

std::string VerdictsHeader(const Report& report) {
  std::string head = absl::StrFormat(
      "Verdicts: ratio of geometric means, other / baseline (not the Hmean/Amean above), %g %% "
      "intervals",
      100 * report.level());
  if (!report.adjusted()) return head + "; q = p (unadjusted)";
  if (report.rows() > 1) {
    return absl::StrCat(head, "; q: p adjusted over ", report.rows(), " rows (Benjamini–Hochberg)");
  }
  return head;
}

// "hosts per arm: …" (at most 8 hosts named per arm) and a "left out: …" line per reason.
std::string HostsText(const Report& report) {
  constexpr int kMaxHostsPerArm = 8;
  std::string out;
  std::vector<std::string> per_arm;
  for (const std::string& arm : report.arms()) {
    std::vector<std::string> names;
    int total = 0;
    for (const Report::ArmHost& h : report.hosts()) {
      if (h.arm() != arm) continue;
      if (++total > kMaxHostsPerArm) continue;
      names.push_back(absl::StrCat(HostWho(h.hostname(), h.agent_id(), h.machine_id()), " ",
                                   CountOf(h.samples(), "sample"), ", ",
                                   CountOf(h.boots(), "boot")));
    }
    if (total == 0) continue;
    if (total > kMaxHostsPerArm)
      names.push_back(absl::StrCat("and ", total - kMaxHostsPerArm, " more"));
    per_arm.push_back(absl::StrCat(arm, " ", absl::StrJoin(names, ", ")));
  }
  if (!per_arm.empty())
    absl::StrAppend(&out, "hosts per arm: ", absl::StrJoin(per_arm, "; "), "\n");
  for (const Report::Excluded& e : report.excluded()) {
    absl::StrAppend(&out, "left out: ", CountOf(e.samples(), "sample"), " of ",
                    HostWho(e.hostname(), e.agent_id(), e.machine_id()),
                    ", kept for the record: ", e.reason(), "\n");
  }
  return out;
}

// The record's column fields (the singular ones), in declaration order.
std::vector<const google::protobuf::FieldDescriptor*> Columns() {
  const google::protobuf::Descriptor* d = Report::Record::descriptor();
  std::vector<const google::protobuf::FieldDescriptor*> out;
  for (int i = 0; i < d->field_count(); ++i) {
    if (!d->field(i)->is_repeated()) out.push_back(d->field(i));
  }
  return out;
}

std::string CsvCell(const Report::Record& r, const google::protobuf::FieldDescriptor* f) {
  using google::protobuf::FieldDescriptor;
  const google::protobuf::Reflection* reflection = r.GetReflection();
  if (f->has_presence() && !reflection->HasField(r, f)) return "";
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_DOUBLE:
      return absl::StrFormat("%.15g", reflection->GetDouble(r, f));
    case FieldDescriptor::CPPTYPE_UINT32:
      return absl::StrCat(reflection->GetUInt32(r, f));
    case FieldDescriptor::CPPTYPE_INT32:
      return absl::StrCat(reflection->GetInt32(r, f));
    case FieldDescriptor::CPPTYPE_BOOL:
      return reflection->GetBool(r, f) ? "true" : "false";
    case FieldDescriptor::CPPTYPE_STRING:
      return CsvEscape(reflection->GetString(r, f));
    default:
      return "";  // no other types among the record's columns
  }
}

}  // namespace

std::string RenderReportText(const Report& report) {
  // Every width is measured from what is printed, so long arm names, long sweep labels and
  // huge values all stay aligned.
  const int num_arms = report.arms_size();
  std::string out;
  if (!report.title().empty()) absl::StrAppend(&out, report.title(), "\n\n");
  if (!report.ceilings().empty()) absl::StrAppend(&out, report.ceilings(), "\n");
  absl::StrAppend(&out, HostsText(report));
  int g = 0;
  const int groups = report.groups_size();
  while (g < groups) {
    // One metric: its groups are contiguous.
    int end = g;
    while (end < groups && report.groups(end).metric() == report.groups(g).metric()) ++end;
    std::vector<size_t> column(num_arms);
    for (int i = 0; i < num_arms; ++i) column[i] = report.arms(i).size();
    size_t label_width = 0, stat_width = 0;
    for (int k = g; k < end; ++k) {
      const Report::Group& group = report.groups(k);
      label_width = std::max(label_width, SweepLabelOf(group).size());
      for (const Report::Stat& stat : group.stats()) {
        stat_width = std::max(stat_width, stat.name().size());
        for (int i = 0; i < num_arms; ++i) {
          column[i] = std::max(column[i], Cell(group, stat, i).size());
        }
      }
    }
    stat_width += 2;  // as compare-kernels: "BAmean-99" still gets two spaces before the label
    if (g > 0) out += "\n";
    absl::StrAppend(&out, MetricTitle(report.groups(g)), "\n",
                    std::string(stat_width + label_width, ' '));
    for (int i = 0; i < num_arms; ++i)
      absl::StrAppend(&out, " ", Pad(report.arms(i), column[i], true));
    out += "\n";
    bool records = false;
    for (int k = g; k < end; ++k) {
      const Report::Group& group = report.groups(k);
      records = records || group.records_size() > 0;
      const std::string label = Pad(SweepLabelOf(group), label_width, false);
      for (const Report::Stat& stat : group.stats()) {
        std::string line = Pad(stat.name(), stat_width, false) + label;
        for (int i = 0; i < num_arms; ++i) {
          absl::StrAppend(&line, " ", Pad(Cell(group, stat, i), column[i], true));
        }
        absl::StrAppend(&out, line, "\n");
      }
    }
    if (records) {
      absl::StrAppend(&out, "\n", VerdictsHeader(report), "\n");
      for (int k = g; k < end; ++k) {
        const Report::Group& group = report.groups(k);
        const std::string label = SweepLabelOf(group);
        for (const Report::Record& r : group.records()) {
          absl::StrAppend(&out, label.empty() ? "" : label + "  ", VerdictLine(group, r.arm()),
                          "\n");
          for (const std::string& note : r.note_lines()) {
            absl::StrAppend(&out, "    - ", note, "\n");
          }
          if (VerdictOf(group, r.arm()) != nullptr) {
            absl::StrAppend(&out, "    - ", PooledLine(r), "\n");
          }
        }
      }
    }
    g = end;
  }
  return out;
}

std::string RenderReportJson(const Report& report) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string out;
  if (!google::protobuf::util::MessageToJsonString(report, &out, options).ok()) {
    return "{\"error\": \"cannot convert the report to JSON\"}\n";
  }
  if (out.empty() || out.back() != '\n') out += '\n';
  return out;
}

std::string RenderReportCsv(const Report& report) {
  const std::vector<const google::protobuf::FieldDescriptor*> columns = Columns();
  std::vector<std::string> names;
  for (const auto* f : columns) names.push_back(f->name());
  std::string out = absl::StrCat(absl::StrJoin(names, ","), "\n");
  for (const Report::Group& group : report.groups()) {
    for (const Report::Record& r : group.records()) {
      std::vector<std::string> cells;
      for (const auto* f : columns) cells.push_back(CsvCell(r, f));
      absl::StrAppend(&out, absl::StrJoin(cells, ","), "\n");
    }
  }
  return out;
}

}  // namespace tlbfleet::report
