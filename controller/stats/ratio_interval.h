#pragma once
// The verdict's test (pure functions): is arm `other` faster or slower than arm `base`, and by
// how much? One row of a comparison (one metric at one sweep value) is two arms' samples
// grouped by boot. docs/statistics.md#the-verdicts-test has the formulas and why.
//
// The estimand is the ratio of the arms' geometric means, each boot weighing the same:
//   u_b   = mean of ln(x) over boot b's iterations      (one unit per boot)
//   ratio = exp(mean_b u_b(other) - mean_b u_b(base))
// With one boot per arm the units are the iterations, and the ratio is the ratio of the
// arms' geometric means. The geometric mean is the only mean whose ratio does not depend on
// whether a metric is written as ops/s or s/op.
//
// The design follows which boots the arms share (Pairing::kAuto):
//   paired-boots         both arms measured in >= 2 common boots (interleaved arms): a paired
//                        t on the per-boot log ratios u_b(other) - u_b(base), df = B - 1. The
//                        boot-to-boot noise both arms share cancels.
//   unpaired-boots       otherwise, when an arm has >= 2 boots (e.g. two kernels): Welch's t on
//                        the per-boot log means, Welch–Satterthwaite df; when one arm has a
//                        single boot, its variance is taken from the other arm (Student's t,
//                        df = B_other - 1).
//   unpaired-iterations  one boot per arm: Welch's t on the log iterations. Scope within-boot.
//   paired-iterations    one shared boot, Pairing::kIterations only: a paired t on the log
//                        ratios of iterations with the same index (adjacent in time).
// Scope: across-boots for the boot designs (the interval includes reboot-to-reboot noise, so
// it speaks for the kernel/configuration); within-boot for the iteration designs (it speaks
// only for the boot that was measured).
//
// All t-based: exact for normal log units at every B >= 2, which a bootstrap of 2–5 boots is
// not (bootstrap.h; the calibration table in docs/statistics.md shows both).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "controller/stats/boots.h"

namespace tlbfleet::stats {

// One arm's samples in one row, grouped by boot.
struct ArmSamples {
  std::vector<std::string> boot_ids;  // boot_ids[b] names boots[b]; distinct
  BootGroups boots;                   // boots[b]: boot b's values, in measurement order
  // Empty, or parallel to `boots`: iterations[b][i] is the iteration index of boots[b][i].
  // Only Pairing::kIterations needs it.
  std::vector<std::vector<uint32_t>> iterations;
};

enum class Pairing {
  kAuto,        // paired-boots when the arms share >= 2 boots, else unpaired
  kBoots,       // paired-boots; INVALID_ARGUMENT unless the arms share >= 2 boots
  kIterations,  // one shared boot: pair iterations by index; several: as kBoots
  kNone,        // unpaired, whatever the boots
};
const char* PairingName(Pairing pairing);  // "auto", "boots", "iterations", "none"
// INVALID_ARGUMENT naming `pairing` for anything but the four names.
absl::StatusOr<Pairing> ParsePairing(std::string_view name);

enum class Design { kNone, kPairedBoots, kUnpairedBoots, kPairedIterations, kUnpairedIterations };
const char* DesignName(Design design);  // "paired-boots", ...; "" for kNone

enum class Scope { kWithinBoot, kAcrossBoots };
const char* ScopeName(Scope scope);  // "within-boot", "across-boots"

struct RatioTestOptions {
  double level = 0.95;  // of ci_low/ci_high; the tests run at alpha = 1 - level
  // Equivalence margin: "same" means the ratio lies in [1 / (1 + m), 1 + m] (symmetric on
  // the log scale, so the arms' order does not matter).
  double margin = 0.01;
  Pairing pairing = Pairing::kAuto;
};

struct RatioTest {
  Design design = Design::kNone;
  Scope scope = Scope::kWithinBoot;
  // The units of the test: boots (boot designs) or iterations (iteration designs) of each
  // arm; the number of pairs in both for paired designs.
  size_t base_units = 0;
  size_t other_units = 0;
  size_t shared_boots = 0;          // boots (by id) both arms were measured in
  std::optional<double> log_ratio;  // mean log difference
  std::optional<double> ratio;      // exp(log_ratio)
  std::optional<double> se;         // standard error of log_ratio; 0 when every unit agrees
  std::optional<double> df;
  std::optional<double> p;                // two-sided, H0: ratio = 1
  std::optional<double> ci_low, ci_high;  // at RatioTestOptions::level
  // Two one-sided tests (TOST), H0: the ratio lies outside [1/(1 + m), 1 + m]. Below
  // alpha exactly when the (1 - 2 alpha) interval lies within the margin.
  std::optional<double> same_p;
  // The units on the log scale: u_b of each arm, or the per-pair log ratios in `other_units`
  // with `base_units` all 0 for paired designs (what a bootstrap resamples).
  std::vector<double> base_values, other_values;
  // How the data shaped the design, for people: boots left out of a pairing, a variance
  // borrowed from the other arm, no spread at all. Empty when unremarkable.
  std::string note;
  std::string why_undefined;  // set when p / the interval are undefined
};

// INVALID_ARGUMENT (message starting "pairing: ") when options.pairing asks for a pairing the
// boots do not allow; otherwise a result, undefined with a reason when an arm has no
// samples, a value is <= 0 or not finite (the test works on logarithms), or there is no
// spread to test against (one unit per arm).
absl::StatusOr<RatioTest> TestRatio(const ArmSamples& base, const ArmSamples& other,
                                    const RatioTestOptions& options = {});

// The test's interval of the ratio at another confidence level (e.g. false-coverage-rate
// adjusted intervals); nullopt when the test is undefined.
std::optional<std::pair<double, double>> IntervalAt(const RatioTest& test, double level);

}  // namespace tlbfleet::stats
