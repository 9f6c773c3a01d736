#include "controller/report/flush_profile.h"

#include <algorithm>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/json.h"

namespace tlbfleet::report {

namespace {

constexpr char kEvents[] = "tlb_flush_events";
constexpr char kLost[] = "tlb_flush_lost";

std::string Percent(double part, double whole) {
  return whole > 0 ? absl::StrFormat("%6.2f%%", 100.0 * part / whole) : "     -";
}

}  // namespace

double ArmFlushProfile::PagesTotal() const {
  double total = 0;
  for (const auto& [bucket, events] : pages) total += events;
  return total;
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
  for (const v1::Sample& s : samples) {
    if (s.metric() != kEvents && s.metric() != kLost) continue;
    if (param_value && s.param_value() != *param_value) continue;
    if (std::find(order.begin(), order.end(), s.arm()) == order.end()) order.push_back(s.arm());
    ArmFlushProfile& p = by_arm[s.arm()];
    p.arm = s.arm();
    iterations[s.arm()].insert(absl::StrCat(s.boot_id(), "/", s.param_value(), "/", s.iteration()));
    if (s.metric() == kLost) {
      p.lost += s.value();
      continue;
    }
    const std::string& series = s.series();
    int code = 0;
    if (series.rfind("pages=", 0) == 0) {
      p.pages[series.substr(6)] += s.value();
    } else if (series.rfind("reason=", 0) == 0 && absl::SimpleAtoi(series.substr(7), &code)) {
      p.reasons[code] += s.value();
    }
  }
  std::vector<ArmFlushProfile> out;
  for (const std::string& arm : order) {
    auto it = by_arm.find(arm);
    if (it == by_arm.end()) continue;
    it->second.iterations = static_cast<uint32_t>(iterations[arm].size());
    out.push_back(std::move(it->second));
  }
  return out;
}

std::string RenderFlushProfileText(const std::vector<ArmFlushProfile>& profiles) {
  if (profiles.empty()) {
    return "no flush profile in this run (add `monitors: [flush_profile]` to the run spec)\n";
  }
  // Sizes: per arm a "percent percent<=" pair, 20 columns wide, after an 8-column label.
  std::string out = absl::StrFormat("%-8s", "");
  for (const ArmFlushProfile& p : profiles) out += absl::StrFormat("%20s", p.arm);
  out += absl::StrFormat("\n%-8s", "size");
  for (size_t i = 0; i < profiles.size(); ++i) {
    out += absl::StrFormat("%11s %8s", "percent", "percent<=");
  }
  out += "\n";
  std::vector<double> totals, cumulative(profiles.size(), 0.0);
  for (const ArmFlushProfile& p : profiles) totals.push_back(p.PagesTotal());
  for (const std::string& bucket : PageBucketOrder()) {
    bool any = std::any_of(profiles.begin(), profiles.end(),
                           [&](const ArmFlushProfile& p) { return p.pages.count(bucket) > 0; });
    if (!any) continue;
    out += absl::StrFormat("%7s:", bucket == "-1" ? "GLOBAL" : bucket);
    for (size_t i = 0; i < profiles.size(); ++i) {
      auto it = profiles[i].pages.find(bucket);
      double events = it == profiles[i].pages.end() ? 0 : it->second;
      cumulative[i] += events;
      out += absl::StrFormat("%11s %8s", Percent(events, totals[i]),
                             Percent(cumulative[i], totals[i]));
    }
    out += "\n";
  }

  // Reasons and totals: events per arm.
  out += absl::StrFormat("\n%-24s", "reason");
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
  return out;
}

std::string RenderFlushProfileJson(const std::vector<ArmFlushProfile>& profiles) {
  std::vector<std::string> arms;
  for (const ArmFlushProfile& p : profiles) {
    double total = p.PagesTotal();
    double cumulative = 0;
    std::vector<std::string> pages;
    for (const std::string& bucket : PageBucketOrder()) {
      auto it = p.pages.find(bucket);
      if (it == p.pages.end()) continue;
      cumulative += it->second;
      pages.push_back(
          absl::StrFormat(R"({"bucket":%s,"events":%.0f,"percent":%.6g,"cumulative_percent":%.6g})",
                          JsonQuote(bucket), it->second, total > 0 ? 100 * it->second / total : 0.0,
                          total > 0 ? 100 * cumulative / total : 0.0));
    }
    std::vector<std::string> reasons;
    for (const auto& [code, events] : p.reasons) {
      reasons.push_back(absl::StrFormat(R"({"code":%d,"name":%s,"events":%.0f})", code,
                                        JsonQuote(FlushReasonName(code)), events));
    }
    arms.push_back(absl::StrFormat(
        R"({"arm":%s,"iterations":%u,"total":%.0f,"lost":%.0f,"pages":[%s],"reasons":[%s]})",
        JsonQuote(p.arm), p.iterations, total, p.lost, absl::StrJoin(pages, ","),
        absl::StrJoin(reasons, ",")));
  }
  return absl::StrCat("[", absl::StrJoin(arms, ",\n "), "]\n");
}

}  // namespace tlbfleet::report
