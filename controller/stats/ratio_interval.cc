#include "controller/stats/ratio_interval.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "boost/math/distributions/students_t.hpp"

namespace tlbfleet::stats {
namespace {

// Double precision throughout: Boost would otherwise promote to long double, several times
// slower (every row of every comparison, and every round of a calibration, evaluates these).
using StudentsT = boost::math::students_t_distribution<
    double, boost::math::policies::policy<boost::math::policies::promote_double<false>>>;

// A t statistic's ingredients: the estimate of the mean log difference, its standard error
// and degrees of freedom.
struct TParts {
  double estimate = 0;
  double se = 0;
  double df = 0;
};

struct MeanVar {
  double mean = 0;
  double var = 0;  // n - 1 denominator; 0 for n = 1
};

MeanVar MeanAndVariance(const std::vector<double>& v) {
  MeanVar mv;
  const double n = static_cast<double>(v.size());
  for (double x : v) mv.mean += x;
  mv.mean /= n;
  if (v.size() < 2) return mv;
  for (double x : v) mv.var += (x - mv.mean) * (x - mv.mean);
  mv.var /= n - 1;
  return mv;
}

// ln(x) of every value, or nullopt when one is <= 0 or not finite.
std::optional<std::vector<double>> Logs(const std::vector<double>& values) {
  std::vector<double> out;
  out.reserve(values.size());
  for (double x : values) {
    if (!(x > 0) || !std::isfinite(x)) return std::nullopt;
    out.push_back(std::log(x));
  }
  return out;
}

std::optional<double> LogMean(const std::vector<double>& values) {
  std::optional<std::vector<double>> logs = Logs(values);
  if (!logs || logs->empty()) return std::nullopt;
  return MeanAndVariance(*logs).mean;
}

constexpr char kNotPositive[] =
    "a value is <= 0 or not finite: the ratio test works on logarithms of positive values";

// One sample of differences (paired designs): mean, sd / sqrt(n), n - 1.
std::optional<TParts> PairedParts(const std::vector<double>& diffs, std::string* why) {
  if (diffs.size() < 2) {
    *why = "one pair: no spread to test against";
    return std::nullopt;
  }
  const MeanVar mv = MeanAndVariance(diffs);
  return TParts{mv.mean, std::sqrt(mv.var / static_cast<double>(diffs.size())),
                static_cast<double>(diffs.size() - 1)};
}

// Two independent samples: Welch's t; when one arm has a single unit, Student's t with the
// other arm's variance (the only estimate there is), df = n_other - 1.
std::optional<TParts> UnpairedParts(const std::vector<double>& base,
                                    const std::vector<double>& other, std::string* note,
                                    std::string* why) {
  const MeanVar a = MeanAndVariance(base);
  const MeanVar b = MeanAndVariance(other);
  const double na = static_cast<double>(base.size());
  const double nb = static_cast<double>(other.size());
  TParts t;
  t.estimate = b.mean - a.mean;
  if (base.size() < 2 && other.size() < 2) {
    *why = "one unit per arm: no spread to test against";
    return std::nullopt;
  }
  if (base.size() < 2 || other.size() < 2) {
    const double var = base.size() < 2 ? b.var : a.var;
    t.se = std::sqrt(var * (1 / na + 1 / nb));
    t.df = std::max(na, nb) - 1;
    *note = "one arm has a single unit: its variance is taken from the other arm";
    return t;
  }
  const double va = a.var / na;
  const double vb = b.var / nb;
  t.se = std::sqrt(va + vb);
  t.df =
      va + vb > 0 ? (va + vb) * (va + vb) / (va * va / (na - 1) + vb * vb / (nb - 1)) : na + nb - 2;
  return t;
}

void Finish(const TParts& parts, const RatioTestOptions& options, RatioTest* r) {
  if (!std::isfinite(parts.estimate) || !std::isfinite(parts.se) || !(parts.df > 0)) {
    r->why_undefined = "overflow";
    return;
  }
  r->log_ratio = parts.estimate;
  r->ratio = std::exp(parts.estimate);
  r->se = parts.se;
  r->df = parts.df;
  // "Same" is |ln ratio| < ln(1 + margin), i.e. [1 / (1 + m), 1 + m]: symmetric on the log
  // scale, so swapping the arms (ratio -> 1 / ratio) gives the same answer.
  const double upper = std::log1p(options.margin);
  const double lower = -upper;
  if (parts.se == 0) {
    // Every unit gives the same log ratio: the data leave no doubt, whatever it is.
    r->p = parts.estimate == 0 ? 1.0 : 0.0;
    r->ci_low = r->ci_high = r->ratio;
    r->same_p = parts.estimate > lower && parts.estimate < upper ? 0.0 : 1.0;
    if (r->note.empty()) r->note = "every unit gives the same ratio: no spread";
    return;
  }
  const StudentsT dist(parts.df);
  const double t = parts.estimate / parts.se;
  r->p = std::min(1.0, 2 * boost::math::cdf(boost::math::complement(dist, std::fabs(t))));
  const double q = boost::math::quantile(dist, 1 - (1 - options.level) / 2);
  r->ci_low = std::exp(parts.estimate - q * parts.se);
  r->ci_high = std::exp(parts.estimate + q * parts.se);
  const double p_low =
      boost::math::cdf(boost::math::complement(dist, (parts.estimate - lower) / parts.se));
  const double p_high =
      boost::math::cdf(boost::math::complement(dist, (upper - parts.estimate) / parts.se));
  r->same_p = std::max(p_low, p_high);
}

// Indexes of the non-empty boots.
std::vector<size_t> UsedBoots(const ArmSamples& arm) {
  std::vector<size_t> out;
  for (size_t b = 0; b < arm.boots.size(); ++b) {
    if (!arm.boots[b].empty()) out.push_back(b);
  }
  return out;
}

std::string BootId(const ArmSamples& arm, size_t b) {
  return b < arm.boot_ids.size() ? arm.boot_ids[b] : absl::StrCat("#", b);
}

absl::Status PairingError(const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat("pairing: ", what));
}

// Log ratios of iterations with the same index in one shared boot (several values with one
// index: their log mean).
std::optional<std::vector<double>> IterationPairs(const ArmSamples& base, size_t bb,
                                                  const ArmSamples& other, size_t ob) {
  auto by_iteration = [](const ArmSamples& arm, size_t b) {
    std::map<uint32_t, std::vector<double>> out;
    for (size_t i = 0; i < arm.boots[b].size(); ++i) {
      out[arm.iterations[b][i]].push_back(arm.boots[b][i]);
    }
    return out;
  };
  const auto x = by_iteration(base, bb);
  const auto y = by_iteration(other, ob);
  std::vector<double> diffs;
  for (const auto& [iteration, values] : x) {
    auto it = y.find(iteration);
    if (it == y.end()) continue;
    const std::optional<double> lx = LogMean(values);
    const std::optional<double> ly = LogMean(it->second);
    if (!lx || !ly) return std::nullopt;
    diffs.push_back(*ly - *lx);
  }
  return diffs;
}

bool HasIterations(const ArmSamples& arm, size_t b) {
  return b < arm.iterations.size() && arm.iterations[b].size() == arm.boots[b].size();
}

}  // namespace

const char* PairingName(Pairing pairing) {
  switch (pairing) {
    case Pairing::kAuto:
      return "auto";
    case Pairing::kBoots:
      return "boots";
    case Pairing::kIterations:
      return "iterations";
    case Pairing::kNone:
      return "none";
  }
  return "auto";
}

absl::StatusOr<Pairing> ParsePairing(std::string_view name) {
  for (Pairing p : {Pairing::kAuto, Pairing::kBoots, Pairing::kIterations, Pairing::kNone}) {
    if (name == PairingName(p)) return p;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "pairing: expected auto, boots, iterations or none, got \"", std::string(name), "\""));
}

const char* DesignName(Design design) {
  switch (design) {
    case Design::kNone:
      return "";
    case Design::kPairedBoots:
      return "paired-boots";
    case Design::kUnpairedBoots:
      return "unpaired-boots";
    case Design::kPairedIterations:
      return "paired-iterations";
    case Design::kUnpairedIterations:
      return "unpaired-iterations";
  }
  return "";
}

const char* ScopeName(Scope scope) {
  return scope == Scope::kAcrossBoots ? "across-boots" : "within-boot";
}

absl::StatusOr<RatioTest> TestRatio(const ArmSamples& base, const ArmSamples& other,
                                    const RatioTestOptions& options) {
  RatioTest r;
  const std::vector<size_t> nb = UsedBoots(base);
  const std::vector<size_t> no = UsedBoots(other);
  // Boots both arms were measured in, by id: (base index, other index).
  std::vector<std::pair<size_t, size_t>> common;
  for (size_t i : nb) {
    for (size_t j : no) {
      if (BootId(base, i) == BootId(other, j)) common.emplace_back(i, j);
    }
  }
  const bool several = nb.size() >= 2 || no.size() >= 2;
  r.shared_boots = common.size();
  switch (options.pairing) {
    case Pairing::kBoots:
      if (common.size() < 2) {
        return PairingError(absl::StrCat(
            "pairing by boot needs at least 2 boots both arms were measured in; these arms "
            "share ",
            common.size(), " (", nb.size(), " and ", no.size(), " boots)"));
      }
      r.design = Design::kPairedBoots;
      break;
    case Pairing::kIterations:
      if (common.empty()) {
        return PairingError(
            "pairing by iteration needs a boot both arms were measured in; these arms share "
            "none");
      }
      if (common.size() == 1 && several) {
        return PairingError(
            absl::StrCat("pairing by iteration needs every boot shared; these arms share 1 of ",
                         std::max(nb.size(), no.size()), " boots"));
      }
      if (common.size() == 1 &&
          (!HasIterations(base, common[0].first) || !HasIterations(other, common[0].second))) {
        return PairingError("pairing by iteration needs the samples' iteration numbers");
      }
      r.design = common.size() >= 2 ? Design::kPairedBoots : Design::kPairedIterations;
      break;
    case Pairing::kNone:
      r.design = several ? Design::kUnpairedBoots : Design::kUnpairedIterations;
      break;
    case Pairing::kAuto:
      r.design = common.size() >= 2 ? Design::kPairedBoots
                 : several          ? Design::kUnpairedBoots
                                    : Design::kUnpairedIterations;
      break;
  }
  r.scope = r.design == Design::kPairedBoots || r.design == Design::kUnpairedBoots
                ? Scope::kAcrossBoots
                : Scope::kWithinBoot;
  if (nb.empty() || no.empty()) {
    r.why_undefined = "an arm has no samples";
    return r;
  }

  std::optional<TParts> parts;
  switch (r.design) {
    case Design::kPairedBoots: {
      std::vector<std::string> left_out;
      for (size_t i : nb) {
        if (std::none_of(common.begin(), common.end(), [&](auto c) { return c.first == i; }))
          left_out.push_back(BootId(base, i));
      }
      for (size_t j : no) {
        if (std::none_of(common.begin(), common.end(), [&](auto c) { return c.second == j; }))
          left_out.push_back(BootId(other, j));
      }
      for (const auto& [i, j] : common) {
        const std::optional<double> lb = LogMean(base.boots[i]);
        const std::optional<double> lo = LogMean(other.boots[j]);
        if (!lb || !lo) {
          r.why_undefined = kNotPositive;
          return r;
        }
        r.base_values.push_back(0);
        r.other_values.push_back(*lo - *lb);
      }
      r.base_units = r.other_units = common.size();
      if (!left_out.empty()) {
        r.note = absl::StrCat("paired on the ", common.size(),
                              " boots both arms share; left out: ", absl::StrJoin(left_out, ", "));
      }
      parts = PairedParts(r.other_values, &r.why_undefined);
      break;
    }
    case Design::kUnpairedBoots:
      for (const auto& [arm, used, out] :
           {std::tuple{&base, &nb, &r.base_values}, std::tuple{&other, &no, &r.other_values}}) {
        for (size_t b : *used) {
          const std::optional<double> u = LogMean(arm->boots[b]);
          if (!u) {
            r.why_undefined = kNotPositive;
            return r;
          }
          out->push_back(*u);
        }
      }
      r.base_units = r.base_values.size();
      r.other_units = r.other_values.size();
      parts = UnpairedParts(r.base_values, r.other_values, &r.note, &r.why_undefined);
      if (!r.note.empty()) {
        r.note = "one arm has a single boot: its boot-to-boot variance is taken from the other arm";
      }
      break;
    case Design::kUnpairedIterations: {
      std::optional<std::vector<double>> x = Logs(base.boots[nb[0]]);
      std::optional<std::vector<double>> y = Logs(other.boots[no[0]]);
      if (!x || !y) {
        r.why_undefined = kNotPositive;
        return r;
      }
      r.base_values = std::move(*x);
      r.other_values = std::move(*y);
      r.base_units = r.base_values.size();
      r.other_units = r.other_values.size();
      parts = UnpairedParts(r.base_values, r.other_values, &r.note, &r.why_undefined);
      break;
    }
    case Design::kPairedIterations: {
      std::optional<std::vector<double>> diffs =
          IterationPairs(base, common[0].first, other, common[0].second);
      if (!diffs) {
        r.why_undefined = kNotPositive;
        return r;
      }
      r.other_values = std::move(*diffs);
      r.base_values.assign(r.other_values.size(), 0);
      r.base_units = r.other_units = r.other_values.size();
      const size_t unmatched = base.boots[common[0].first].size() +
                               other.boots[common[0].second].size() - 2 * r.other_units;
      if (unmatched > 0) {
        r.note = absl::StrCat(unmatched, " iteration", unmatched == 1 ? "" : "s",
                              " without a partner of the same index left out");
      }
      parts = PairedParts(r.other_values, &r.why_undefined);
      break;
    }
    case Design::kNone:
      break;
  }
  if (!parts) {
    // The point estimate is still meaningful without a spread.
    if (!r.other_values.empty() && !r.base_values.empty()) {
      double mb = 0, mo = 0;
      for (double v : r.base_values) mb += v;
      for (double v : r.other_values) mo += v;
      r.log_ratio = mo / static_cast<double>(r.other_values.size()) -
                    mb / static_cast<double>(r.base_values.size());
      r.ratio = std::exp(*r.log_ratio);
    }
    return r;
  }
  Finish(*parts, options, &r);
  return r;
}

std::optional<std::pair<double, double>> IntervalAt(const RatioTest& test, double level) {
  if (!test.log_ratio || !test.se || !test.df || !(level > 0 && level < 1)) return std::nullopt;
  if (*test.se == 0) return std::pair{*test.ratio, *test.ratio};
  const StudentsT dist(*test.df);
  const double q = boost::math::quantile(dist, 1 - (1 - level) / 2);
  return std::pair{std::exp(*test.log_ratio - q * *test.se),
                   std::exp(*test.log_ratio + q * *test.se)};
}

}  // namespace tlbfleet::stats
