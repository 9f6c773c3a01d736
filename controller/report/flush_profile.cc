#include "controller/report/flush_profile.h"

#include <algorithm>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace tlbfleet::report {

namespace {

constexpr char kEvents[] = "tlb_flush_events";
constexpr char kLost[] = "tlb_flush_lost";
constexpr char kCostPrefix[] = "tlb_flush_cost_";
constexpr char kCostCalls[] = "tlb_flush_cost_calls";
constexpr char kCostUnavailable[] = "tlb_flush_cost_unavailable";
constexpr char kInvlpgb[] = "tlb_flush_invlpgb";
constexpr int kLocalMmShootdown = 3;

std::string Percent(double part, double whole) {
  return whole > 0 ? absl::StrFormat("%6.2f%%", 100.0 * part / whole) : "     -";
}

bool IsProfileMetric(const std::string& m) {
  return m == kEvents || m == kLost || m == kInvlpgb || absl::StartsWith(m, kCostPrefix);
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// One iteration's cost figures of one bucket.
struct IterationCost {
  double calls = 0, mean = 0, p50 = 0, p90 = 0, p99 = 0;
};

}  // namespace

double ArmFlushProfile::PagesTotal() const {
  double total = 0;
  for (const auto& [bucket, events] : pages) total += events;
  return total;
}

const std::map<std::string, double>& ArmFlushProfile::Local() const {
  static const std::map<std::string, double> kEmpty;
  auto it = cross.find(kLocalMmShootdown);
  return it == cross.end() ? kEmpty : it->second;
}

const std::vector<std::string>& PageBucketOrder() {
  static const std::vector<std::string> kOrder = [] {
    std::vector<std::string> order = {"-1", "0"};
    for (int i = 1; i <= 64; ++i) order.push_back(absl::StrCat(i));
    for (const char* b : {"65-128", "129-256", "257-512", ">512"}) order.push_back(b);
    return order;
  }();
  return kOrder;
}

std::string FlushReasonName(int code) {
  switch (code) {
    case 0:
      return "task switch";
    case 1:
      return "remote shootdown";
    case 2:
      return "local shootdown";
    case 3:
      return "local mm shootdown";
    case 4:
      return "remote IPI send";
    case 5:
      return "remote wrong CPU";
    default:
      return absl::StrCat("reason ", code);
  }
}

std::vector<ArmFlushProfile> BuildFlushProfiles(const std::vector<v1::Sample>& samples,
                                                const std::vector<std::string>& arm_order,
                                                const std::optional<std::string>& param_value) {
  std::vector<std::string> order = arm_order;
  std::map<std::string, ArmFlushProfile> by_arm;
  // arm -> boot/param/iteration keys: iteration numbers repeat in every boot of a run.
  std::map<std::string, std::set<std::string>> iterations;
  std::map<std::string, std::set<std::string>> lossy;
  // arm -> bucket -> iteration key -> that iteration's cost figures
  std::map<std::string, std::map<std::string, std::map<std::string, IterationCost>>> costs;
  for (const v1::Sample& s : samples) {
    if (!IsProfileMetric(s.metric())) continue;
    if (!s.excluded().empty()) continue;  // measured again elsewhere (Sample.excluded)
    if (param_value && s.param_value() != *param_value) continue;
    if (std::find(order.begin(), order.end(), s.arm()) == order.end()) order.push_back(s.arm());
    ArmFlushProfile& p = by_arm[s.arm()];
    p.arm = s.arm();
    const std::string key = absl::StrCat(s.boot_id(), "/", s.param_value(), "/", s.iteration());
    iterations[s.arm()].insert(key);
    const std::string& series = s.series();
    if (s.metric() == kLost) {
      p.lost += s.value();
      if (s.value() > 0) lossy[s.arm()].insert(key);
      continue;
    }
    if (s.metric() == kInvlpgb) {
      p.invlpgb = p.invlpgb || s.value() > 0;
      continue;
    }
    if (s.metric() == kCostUnavailable) {
      p.cost_unavailable.insert(series);
      continue;
    }
    if (absl::StartsWith(s.metric(), kCostPrefix)) {
      // "pages=<bucket>" (calls) or "pages=<bucket>,stat=<mean|p50|p90|p99>" (cost)
      std::vector<std::string> parts = absl::StrSplit(series, ',');
      if (parts.empty() || !absl::StartsWith(parts[0], "pages=")) continue;
      IterationCost& c = costs[s.arm()][parts[0].substr(6)][key];
      if (s.metric() == kCostCalls) {
        c.calls = s.value();
        continue;
      }
      p.cost_unit = s.metric().substr(sizeof(kCostPrefix) - 1);
      if (parts.size() != 2) continue;
      if (parts[1] == "stat=mean") c.mean = s.value();
      if (parts[1] == "stat=p50") c.p50 = s.value();
      if (parts[1] == "stat=p90") c.p90 = s.value();
      if (parts[1] == "stat=p99") c.p99 = s.value();
      continue;
    }
    int code = 0;
    if (series.rfind("pages=", 0) == 0) {
      p.pages[series.substr(6)] += s.value();
    } else if (series.rfind("reason=", 0) == 0) {
      const size_t comma = series.find(',');
      if (comma == std::string::npos) {
        if (absl::SimpleAtoi(series.substr(7), &code)) p.reasons[code] += s.value();
      } else if (absl::SimpleAtoi(series.substr(7, comma - 7), &code) &&
                 series.compare(comma + 1, 6, "pages=") == 0) {
        p.cross[code][series.substr(comma + 7)] += s.value();
      }
    }
  }
  std::vector<ArmFlushProfile> out;
  for (const std::string& arm : order) {
    auto it = by_arm.find(arm);
    if (it == by_arm.end()) continue;
    ArmFlushProfile& p = it->second;
    p.iterations = static_cast<uint32_t>(iterations[arm].size());
    p.lossy_iterations = static_cast<uint32_t>(lossy[arm].size());
    for (const auto& [bucket, per_iteration] : costs[arm]) {
      FlushCost c;
      double weighted = 0;
      std::vector<double> p50, p90, p99;
      for (const auto& [key, ic] : per_iteration) {
        c.calls += ic.calls;
        weighted += ic.mean * ic.calls;
        p50.push_back(ic.p50);
        p90.push_back(ic.p90);
        p99.push_back(ic.p99);
      }
      if (c.calls <= 0) continue;
      c.mean = weighted / c.calls;
      c.p50 = Median(p50);
      c.p90 = Median(p90);
      c.p99 = Median(p99);
      p.cost[bucket] = c;
    }
    out.push_back(std::move(p));
  }
  return out;
}

namespace {

// The old table: every event of the machine, by size.
std::string SizesTable(const std::vector<ArmFlushProfile>& profiles,
                       const std::vector<std::map<std::string, double>>& by_bucket,
                       bool with_cost) {
  std::string out = absl::StrFormat("%-8s", "");
  const int width = with_cost ? 34 : 20;
  for (const ArmFlushProfile& p : profiles) out += absl::StrFormat("%*s", width, p.arm);
  out += absl::StrFormat("\n%-8s", "size");
  std::string unit;
  for (const ArmFlushProfile& p : profiles) {
    if (!p.cost_unit.empty()) unit = p.cost_unit;
  }
  for (size_t i = 0; i < profiles.size(); ++i) {
    out += absl::StrFormat("%11s %8s", "percent", "percent<=");
    if (with_cost) out += absl::StrFormat("%14s", absl::StrCat("avg ", unit));
  }
  out += "\n";
  std::vector<double> totals, cumulative(profiles.size(), 0.0);
  for (const auto& b : by_bucket) {
    double t = 0;
    for (const auto& [bucket, events] : b) t += events;
    totals.push_back(t);
  }
  for (const std::string& bucket : PageBucketOrder()) {
    bool any = std::any_of(by_bucket.begin(), by_bucket.end(),
                           [&](const std::map<std::string, double>& b) { return b.count(bucket); });
    if (!any) continue;
    out += absl::StrFormat("%7s:", bucket == "-1" ? "GLOBAL" : bucket);
    for (size_t i = 0; i < profiles.size(); ++i) {
      auto it = by_bucket[i].find(bucket);
      double events = it == by_bucket[i].end() ? 0 : it->second;
      cumulative[i] += events;
      out += absl::StrFormat("%11s %8s", Percent(events, totals[i]),
                             Percent(cumulative[i], totals[i]));
      if (with_cost) {
        auto c = profiles[i].cost.find(bucket);
        out += c == profiles[i].cost.end() ? absl::StrFormat("%14s", "-")
                                           : absl::StrFormat("%14.0f", c->second.mean);
      }
    }
    out += "\n";
  }
  return out;
}

}  // namespace

std::string RenderFlushProfileText(const std::vector<ArmFlushProfile>& profiles) {
  if (profiles.empty()) {
    return "no flush profile in this run (add `monitors: [flush_profile]` to the run spec)\n";
  }
  const bool cross = std::all_of(profiles.begin(), profiles.end(),
                                 [](const ArmFlushProfile& p) { return p.HasCross(); });
  std::string out;
  if (cross) {
    const bool with_cost = std::any_of(profiles.begin(), profiles.end(),
                                       [](const ArmFlushProfile& p) { return !p.cost.empty(); });
    std::vector<std::map<std::string, double>> local;
    for (const ArmFlushProfile& p : profiles) local.push_back(p.Local());
    out +=
        "local mm shootdowns (reason 3): one per flush_tlb_mm_range() call of the workload, "
        "as in the 2014 table\n";
    out += SizesTable(profiles, local, with_cost);
  } else {
    std::vector<std::map<std::string, double>> all;
    for (const ArmFlushProfile& p : profiles) all.push_back(p.pages);
    out +=
        "all events, every reason together (recorded system-wide by an agent without the "
        "cross table)\n";
    out += SizesTable(profiles, all, false);
  }

  // Reasons and totals: events per arm.
  out += absl::StrFormat("\n%-24s", "reason (all sizes)");
  for (const ArmFlushProfile& p : profiles) out += absl::StrFormat("%12s", p.arm);
  out += "\n";
  std::set<int> codes;
  for (const ArmFlushProfile& p : profiles) {
    for (const auto& [code, events] : p.reasons) codes.insert(code);
  }
  auto row = [&](const std::string& label, auto value_of) {
    out += absl::StrFormat("%-24s", label);
    for (const ArmFlushProfile& p : profiles) out += absl::StrFormat("%12.0f", value_of(p));
    out += "\n";
  };
  for (int code : codes) {
    row(absl::StrCat(code, " ", FlushReasonName(code)), [&](const ArmFlushProfile& p) {
      auto it = p.reasons.find(code);
      return it == p.reasons.end() ? 0.0 : it->second;
    });
  }
  row("events", [](const ArmFlushProfile& p) { return p.PagesTotal(); });
  row("lost", [](const ArmFlushProfile& p) { return p.lost; });
  row("iterations", [](const ArmFlushProfile& p) { return static_cast<double>(p.iterations); });

  std::vector<std::string> notes;
  for (const ArmFlushProfile& p : profiles) {
    if (p.lost > 0) {
      notes.push_back(absl::StrFormat(
          "%s: %.0f events lost in %u of %u iterations (ring buffer full): its counts are "
          "incomplete",
          p.arm, p.lost, p.lossy_iterations, p.iterations));
    }
    if (p.invlpgb) {
      notes.push_back(
          absl::StrCat(p.arm,
                       ": ran where the kernel may flush by INVLPGB broadcast, which bypasses "
                       "tlb:tlb_flush: its counts are incomplete"));
    }
    for (const std::string& why : p.cost_unavailable) {
      notes.push_back(absl::StrCat(p.arm, ": no cost per flush: ", why));
    }
  }
  if (!notes.empty()) out += "\nnotes:\n  - " + absl::StrJoin(notes, "\n  - ") + "\n";
  return out;
}

namespace {

// Buckets in table order with their share and running share of `total`, and the cost per
// call where `cost` has one.
void AddBuckets(const std::map<std::string, double>& buckets,
                const std::map<std::string, FlushCost>* cost,
                google::protobuf::RepeatedPtrField<v1::FlushProfile::Bucket>* out) {
  double total = 0;
  for (const auto& [bucket, events] : buckets) total += events;
  double cumulative = 0;
  for (const std::string& bucket : PageBucketOrder()) {
    auto it = buckets.find(bucket);
    if (it == buckets.end()) continue;
    cumulative += it->second;
    v1::FlushProfile::Bucket* b = out->Add();
    b->set_bucket(bucket);
    b->set_events(it->second);
    b->set_percent(total > 0 ? 100 * it->second / total : 0.0);
    b->set_cumulative_percent(total > 0 ? 100 * cumulative / total : 0.0);
    if (cost == nullptr) continue;
    if (auto c = cost->find(bucket); c != cost->end()) {
      b->set_calls(c->second.calls);
      b->set_cost_mean(c->second.mean);
      b->set_cost_p50(c->second.p50);
      b->set_cost_p90(c->second.p90);
      b->set_cost_p99(c->second.p99);
    }
  }
}

}  // namespace

v1::FlushProfile FlushProfileToProto(const ArmFlushProfile& p) {
  v1::FlushProfile out;
  out.set_arm(p.arm);
  out.set_iterations(p.iterations);
  out.set_lossy_iterations(p.lossy_iterations);
  out.set_total(p.PagesTotal());
  out.set_lost(p.lost);
  out.set_scope(p.HasCross() ? "workload" : "system");
  AddBuckets(p.pages, nullptr, out.mutable_pages());
  if (p.HasCross()) AddBuckets(p.Local(), &p.cost, out.mutable_local_mm_shootdowns());
  for (const auto& [code, events] : p.reasons) {
    v1::FlushProfile::Reason* r = out.add_reasons();
    r->set_code(code);
    r->set_name(FlushReasonName(code));
    r->set_events(events);
  }
  for (const auto& [code, buckets] : p.cross) {
    for (const std::string& bucket : PageBucketOrder()) {
      auto it = buckets.find(bucket);
      if (it == buckets.end()) continue;
      v1::FlushProfile::Cross* c = out.add_cross();
      c->set_code(code);
      c->set_bucket(bucket);
      c->set_events(it->second);
    }
  }
  out.set_cost_unit(p.cost_unit);
  for (const std::string& why : p.cost_unavailable) out.add_cost_unavailable(why);
  out.set_invlpgb(p.invlpgb);
  return out;
}

ArmFlushProfile FlushProfileFromProto(const v1::FlushProfile& p) {
  ArmFlushProfile out;
  out.arm = p.arm();
  out.iterations = p.iterations();
  out.lossy_iterations = p.lossy_iterations();
  out.lost = p.lost();
  for (const v1::FlushProfile::Bucket& b : p.pages()) out.pages[b.bucket()] = b.events();
  for (const v1::FlushProfile::Reason& r : p.reasons()) out.reasons[r.code()] = r.events();
  for (const v1::FlushProfile::Cross& c : p.cross()) out.cross[c.code()][c.bucket()] = c.events();
  for (const v1::FlushProfile::Bucket& b : p.local_mm_shootdowns()) {
    if (!b.has_calls()) continue;
    out.cost[b.bucket()] = {b.calls(), b.cost_mean(), b.cost_p50(), b.cost_p90(), b.cost_p99()};
  }
  out.cost_unit = p.cost_unit();
  out.cost_unavailable.insert(p.cost_unavailable().begin(), p.cost_unavailable().end());
  out.invlpgb = p.invlpgb();
  return out;
}

absl::StatusOr<std::string> FlushSizesFromProfile(const ArmFlushProfile& profile,
                                                  std::vector<std::string>* warnings) {
  if (!profile.HasCross()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "arm ", profile.arm,
        ": this profile has no reason x size table (recorded by an older agent, system-wide)"));
  }
  std::vector<std::string> entries;
  for (const std::string& bucket : PageBucketOrder()) {
    auto it = profile.Local().find(bucket);
    if (it == profile.Local().end() || it->second <= 0) continue;
    if (bucket == "-1") {
      warnings->push_back(absl::StrFormat(
          "%.0f full flushes left out: a full flush is the ceiling's decision, not a size; "
          "record under a ceiling above every size (ceiling: 2147483647) to keep their sizes",
          it->second));
      continue;
    }
    if (bucket == "0") continue;  // the CPU was already up to date: nothing was asked
    std::string size = bucket;
    if (bucket == ">512") {
      size = "513-1024";
      warnings->push_back(absl::StrFormat(
          "%.0f flushes above 512 pages replayed as 513-1024 pages (the profile does not say "
          "how far above)",
          it->second));
    }
    entries.push_back(absl::StrFormat("%s:%.0f", size, it->second));
  }
  if (entries.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("arm ", profile.arm, ": no local flush of a known size to replay"));
  }
  return absl::StrJoin(entries, ",");
}

}  // namespace tlbfleet::report
