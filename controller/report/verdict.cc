// DecideVerdicts (declared in comparison.h): multiplicity across the rows, each row's verdict,
// and the notes that say why, what the result speaks for, and what to measure next.

#include <cmath>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "controller/report/comparison.h"
#include "controller/stats/multiplicity.h"

namespace tlbfleet::report {
namespace {

std::string Pct(double fraction) { return absl::StrFormat("%.2f %%", 100 * fraction); }
std::string Level(double level) { return absl::StrFormat("%g %%", 100 * level); }
std::string P(double p) { return absl::StrFormat("%.4g", p); }

std::string Interval(double level, double lo, double hi) {
  return absl::StrFormat("the %s interval of the ratio [%.4f, %.4f]", Level(level), lo, hi);
}

// Each arm measured in one boot of its own (e.g. two kernels, one boot each): the arms
// differ by their boots as much as by themselves, and nothing in the data measures how much
// boots differ. A test on the iterations would call boot-to-boot noise a change (73 % of null
// data sets with 3 % boot noise, docs/statistics.md#calibration), so no verdict is given.
bool ArmsConfoundedWithBoots(const ArmResult& arm, const ArmResult& base) {
  return arm.test.scope == stats::Scope::kWithinBoot && arm.test.shared_boots == 0 &&
         arm.boots == 1 && base.boots == 1;
}

// Why the verdict is what it is, in one sentence.
std::string VerdictNote(const CompareOptions& options, const Comparison& c, const ArmResult& arm,
                        const ArmResult& base) {
  const stats::RatioTest& t = arm.test;
  const double alpha = 1 - options.level;
  if (!t.p) return absl::StrCat("unknown: no test (", t.why_undefined, ")");
  if (ArmsConfoundedWithBoots(arm, base)) {
    return absl::StrCat("unknown: each arm was measured in one boot of its own, so the ratio (",
                        Interval(options.level, *t.ci_low, *t.ci_high),
                        ") mixes the arms' difference with the boots'; measure 2 boots or more "
                        "per arm, or both arms in the same boots");
  }
  // "p = 0.0011 < 0.05", or "q = 0.0033 < 0.05 (p = 0.0011, adjusted over 3 rows)".
  const bool adjusted = c.adjusted && c.rows > 1;
  auto evidence = [&](double p, double q, const char* test) {
    if (!adjusted) return absl::StrCat(test, "p = ", P(p), " < ", P(alpha));
    return absl::StrCat(test, "q = ", P(q), " < ", P(alpha), " (p = ", P(p), ", adjusted over ",
                        c.rows, " rows)");
  };
  const std::optional<std::pair<double, double>> tost = IntervalAt(t, 1 - 2 * alpha);
  switch (arm.verdict) {
    case Verdict::kSame:
      return absl::StrCat("same: ", Interval(1 - 2 * alpha, tost->first, tost->second),
                          " lies within ±", Pct(options.margin), "; ",
                          evidence(*t.same_p, *arm.same_q, "TOST "));
    case Verdict::kBetter:
    case Verdict::kWorse:
      return absl::StrCat(VerdictName(arm.verdict), ": ", evidence(*t.p, *arm.q, ""), "; ",
                          Interval(options.level, *t.ci_low, *t.ci_high), " lies ",
                          *t.ratio > 1 ? "above" : "below", " 1");
    default:
      break;
  }
  if (*t.p < alpha && adjusted) {
    return absl::StrCat("unknown: p = ", P(*t.p), " < ", P(alpha),
                        " for this row alone, but q = ", P(*arm.q), " across the ", c.rows,
                        " rows (Benjamini–Hochberg); --unadjusted judges each row alone");
  }
  std::string note =
      absl::StrCat("unknown: ", Interval(options.level, *t.ci_low, *t.ci_high), " contains 1");
  if (tost) {
    absl::StrAppend(&note, ", and ", Interval(1 - 2 * alpha, tost->first, tost->second),
                    " reaches beyond ±", Pct(options.margin));
  }
  return note;
}

// What the result speaks for.
std::string ScopeNote(const ArmResult& arm, const ArmResult& base) {
  const stats::RatioTest& t = arm.test;
  if (t.scope == stats::Scope::kAcrossBoots) {
    if (t.design == stats::Design::kPairedBoots) {
      return absl::StrCat("across boots: both arms were measured in the same ", t.other_units,
                          " boots; the test pairs them, so the noise a boot gives both arms "
                          "cancels");
    }
    return absl::StrCat("across boots: ", t.base_units, " and ", t.other_units,
                        " boots, each boot one unit, so the interval includes reboot-to-reboot "
                        "variance");
  }
  if (t.shared_boots == 0 && arm.boots > 0 && base.boots > 0) {
    return "within one boot each: each arm was measured in a boot of its own, so a difference "
           "between the two boots cannot be told from one between the arms; measure 2 boots or "
           "more per arm (boots: N in the run spec)";
  }
  return "within one boot: both arms were measured in one boot, so this speaks for that boot, "
         "not for the kernel; measure 2 boots or more (boots: N in the run spec) to include "
         "reboot-to-reboot variance";
}

void BootNotes(const CompareOptions& options, ArmResult* arm) {
  const stats::VarianceComponents& vc = arm->variance;
  if (vc.between_share && *vc.between_share > options.between_boot_dominates) {
    arm->notes.push_back(absl::StrFormat(
        "%.0f %% of this arm's variance is between boots: add boots, not iterations",
        100 * *vc.between_share));
  }
}

void AdviceNote(const CompareOptions& options, ArmResult* arm) {
  const stats::RepetitionAdvice& advice = arm->advice;
  if (!advice.boots || !advice.iterations_per_boot || !advice.expected_half_width_pct) return;
  arm->notes.push_back(absl::StrFormat(
      "to detect a ±%.2f %% change, or show there is none, with %.0f %% power: %d iteration%s "
      "per boot, %d boots per arm (expected ±%.2f %%, at %g s per iteration and %g s per boot)",
      100 * options.margin, 100 * options.power, *advice.iterations_per_boot,
      *advice.iterations_per_boot == 1 ? "" : "s", *advice.boots, *advice.expected_half_width_pct,
      options.costs.seconds_per_iteration, options.costs.seconds_per_boot));
}

// Welch, Mann–Whitney and Hodges–Lehmann on all the samples are cross-checks; with boots
// their p-values and intervals count iterations of one boot as independent replicates.
void PooledNote(const ArmResult& base, ArmResult* arm) {
  if (arm->boots < 2 && base.boots < 2) return;
  arm->notes.push_back(absl::StrCat(
      "the pooled Welch, Mann–Whitney and Hodges–Lehmann figures take all ", base.n, " + ", arm->n,
      " samples as independent: with boots they overstate the evidence (the verdict's "
      "test counts boots)"));
}

}  // namespace

void DecideVerdicts(const CompareOptions& options, Comparison* comparison) {
  const double alpha = 1 - options.level;
  // Every non-baseline row, in order.
  std::vector<ArmResult*> rows;
  std::vector<bool> confounded;
  for (GroupResult& g : comparison->groups) {
    for (size_t i = 1; i < g.arms.size(); ++i) {
      rows.push_back(&g.arms[i]);
      confounded.push_back(ArmsConfoundedWithBoots(g.arms[i], g.arms[0]));
    }
  }
  // Rows that cannot have a verdict take no part in the adjustment.
  std::vector<std::optional<double>> p, same_p;
  for (size_t k = 0; k < rows.size(); ++k) {
    p.push_back(confounded[k] ? std::nullopt : rows[k]->test.p);
    same_p.push_back(confounded[k] ? std::nullopt : rows[k]->test.same_p);
  }
  const std::vector<std::optional<double>> q = options.adjust ? stats::BenjaminiHochberg(p) : p;
  const std::vector<std::optional<double>> same_q =
      options.adjust ? stats::BenjaminiHochberg(same_p) : same_p;
  comparison->level = options.level;
  comparison->margin = options.margin;
  comparison->adjusted = options.adjust;
  comparison->rows = 0;
  comparison->discoveries = 0;
  for (size_t k = 0; k < rows.size(); ++k) {
    if (p[k]) ++comparison->rows;
    if (q[k] && *q[k] < alpha) ++comparison->discoveries;
  }
  const double adjusted_level =
      options.adjust
          ? stats::FcrAdjustedLevel(options.level, comparison->discoveries, comparison->rows)
          : options.level;
  for (size_t k = 0; k < rows.size(); ++k) {
    ArmResult& a = *rows[k];
    a.q = q[k];
    a.same_q = same_q[k];
    a.significant = a.q && *a.q < alpha;
    a.adjusted_level = adjusted_level;
    if (auto ci = IntervalAt(a.test, adjusted_level)) {
      a.adjusted_ci_low = ci->first;
      a.adjusted_ci_high = ci->second;
    }
    a.verdict = Verdict::kUnknown;
    if (confounded[k]) {
      a.significant = false;
      continue;
    }
    if (a.same_q && *a.same_q < alpha) {
      a.verdict = Verdict::kSame;
    } else if (a.significant && a.test.ratio && *a.test.ratio != 1) {
      a.verdict = Verdict::kBetter;
    }
  }
  for (GroupResult& g : comparison->groups) {
    if (g.arms.empty()) continue;
    const bool higher = g.direction == stats::Direction::kHigherIsBetter;
    ArmResult& base = g.arms[0];
    base.notes.clear();
    BootNotes(options, &base);
    for (size_t i = 1; i < g.arms.size(); ++i) {
      ArmResult& a = g.arms[i];
      if (a.verdict == Verdict::kBetter && (*a.test.ratio > 1) != higher)
        a.verdict = Verdict::kWorse;
      a.notes.clear();
      a.notes.push_back(VerdictNote(options, *comparison, a, base));
      a.notes.push_back(ScopeNote(a, base));
      if (!a.test.note.empty()) a.notes.push_back(a.test.note);
      BootNotes(options, &a);
      AdviceNote(options, &a);
      PooledNote(base, &a);
    }
  }
}

}  // namespace tlbfleet::report
