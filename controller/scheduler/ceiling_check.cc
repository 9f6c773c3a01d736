#include "controller/scheduler/ceiling_check.h"

#include <cerrno>
#include <cstdlib>
#include <optional>

#include "absl/strings/str_cat.h"

namespace tlbfleet::scheduler {
namespace {

// The arm's page count (base 0, as the kernel reads it); nullopt for "" and "default".
absl::StatusOr<std::optional<int64_t>> Pages(std::string_view text) {
  if (text.empty() || text == "default") return std::optional<int64_t>();
  const std::string s(text);
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 0);
  if (errno != 0 || end == s.c_str() || *end != '\0' || v < 0) {
    return absl::InvalidArgumentError(absl::StrCat("job row has an invalid ceiling '", s, "'"));
  }
  return std::optional<int64_t>(v);
}

std::string Claim(const SampleCeiling& s) {
  if (!s.applied) return "says the agent did not set the ceiling";
  if (!s.has_value) return "says the agent set the ceiling but not to what";
  return absl::StrCat("ran under ", s.value);
}

}  // namespace

absl::Status CheckJobCeilings(std::string_view arm, std::string_view arm_ceiling,
                              const std::vector<SampleCeiling>& samples) {
  absl::StatusOr<std::optional<int64_t>> pages = Pages(arm_ceiling);
  if (!pages.ok()) return pages.status();
  const std::string who = absl::StrCat("arm ", std::string(arm));
  std::optional<int64_t> resolved;  // "default": the first sample's value
  for (const SampleCeiling& s : samples) {
    if (arm_ceiling.empty()) {
      if (s.applied) {
        return absl::FailedPreconditionError(absl::StrCat(
            who, " sets no flush ceiling but sample ", s.seq, " says the agent set it to ",
            s.has_value ? absl::StrCat(s.value) : "an unknown value"));
      }
      continue;
    }
    if (!s.applied || !s.has_value) {
      return absl::FailedPreconditionError(absl::StrCat(who, " asked for flush ceiling ",
                                                        std::string(arm_ceiling), " but sample ",
                                                        s.seq, " ", Claim(s)));
    }
    if (pages->has_value() && s.value != **pages) {
      return absl::FailedPreconditionError(absl::StrCat(who, " asked for flush ceiling ",
                                                        std::string(arm_ceiling), " but sample ",
                                                        s.seq, " ran under ", s.value));
    }
    if (!pages->has_value()) {
      if (!resolved.has_value()) resolved = s.value;
      if (s.value != *resolved) {
        return absl::FailedPreconditionError(absl::StrCat(
            who,
            " asked for the default flush ceiling, but its samples disagree on what that "
            "was: ",
            *resolved, " and ", s.value, " (sample ", s.seq, ")"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace tlbfleet::scheduler
