#include "controller/nightly/cron.h"

#include <array>
#include <cctype>
#include <optional>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace tlbfleet::nightly {

namespace {

struct FieldSpec {
  const char* name;
  int position;  // 1-based, for messages
  int min, max;
  // Names for values min, min+1, ... (upper case); empty when the field has none.
  std::vector<absl::string_view> names;
};

const FieldSpec kMinute{"minute", 1, 0, 59, {}};
const FieldSpec kHour{"hour", 2, 0, 23, {}};
const FieldSpec kDayOfMonth{"day-of-month", 3, 1, 31, {}};
const FieldSpec kMonth{
    "month",
    4,
    1,
    12,
    {"JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"}};
// 7 is Sunday too; names cover 0..6.
const FieldSpec kDayOfWeek{
    "day-of-week", 5, 0, 7, {"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"}};

absl::Status FieldError(const FieldSpec& f, absl::string_view element, absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("cron field ", f.position, " (", f.name, ") '", element, "': ", what));
}

absl::StatusOr<int> ParseValue(const FieldSpec& f, absl::string_view element,
                               absl::string_view token) {
  if (token.empty()) return FieldError(f, element, "a value is missing");
  int value = 0;
  if (absl::SimpleAtoi(token, &value) &&
      std::all_of(token.begin(), token.end(), [](char c) { return std::isdigit(c); })) {
    if (value < f.min || value > f.max) {
      return FieldError(f, element, absl::StrCat(value, " is out of range ", f.min, "-", f.max));
    }
    return value;
  }
  const std::string upper = absl::AsciiStrToUpper(std::string(token));
  for (size_t i = 0; i < f.names.size(); ++i) {
    if (upper == f.names[i]) return f.min + static_cast<int>(i);
  }
  if (f.names.empty()) {
    return FieldError(f, element, absl::StrCat("'", token, "' is not a number"));
  }
  return FieldError(f, element,
                    absl::StrCat("'", token, "' is not a number or a name (", f.names.front(), "..",
                                 f.names.back(), ")"));
}

// Sets the bits of one field; `star` tells whether it began with '*'.
template <size_t N>
absl::Status ParseField(const FieldSpec& f, absl::string_view text, std::bitset<N>* bits,
                        bool* star) {
  *star = !text.empty() && text[0] == '*';
  for (absl::string_view element : absl::StrSplit(text, ',')) {
    if (element.empty()) return FieldError(f, text, "an empty list element");
    absl::string_view range = element;
    int step = 1;
    if (size_t slash = element.find('/'); slash != absl::string_view::npos) {
      range = element.substr(0, slash);
      const absl::string_view step_text = element.substr(slash + 1);
      if (!absl::SimpleAtoi(step_text, &step) || step_text.empty() ||
          !std::all_of(step_text.begin(), step_text.end(),
                       [](char c) { return std::isdigit(c); })) {
        return FieldError(f, element, absl::StrCat("step '", step_text, "' is not a number"));
      }
      if (step < 1) return FieldError(f, element, "a step must be at least 1");
    }
    int lo = 0, hi = 0;
    if (range == "*") {
      lo = f.min;
      hi = f.position == kDayOfWeek.position ? 6 : f.max;  // 7 would repeat Sunday
    } else if (size_t dash = range.find('-'); dash != absl::string_view::npos) {
      absl::StatusOr<int> a = ParseValue(f, element, range.substr(0, dash));
      if (!a.ok()) return a.status();
      absl::StatusOr<int> b = ParseValue(f, element, range.substr(dash + 1));
      if (!b.ok()) return b.status();
      if (*a > *b) {
        return FieldError(f, element, absl::StrCat("the range ", *a, "-", *b, " runs backwards"));
      }
      lo = *a;
      hi = *b;
    } else {
      absl::StatusOr<int> a = ParseValue(f, element, range);
      if (!a.ok()) return a.status();
      lo = *a;
      // `N/STEP` runs from N to the maximum; a bare N is just N.
      hi = element.find('/') != absl::string_view::npos ? f.max : *a;
    }
    for (int v = lo; v <= hi; v += step) {
      const int bit = f.position == kDayOfWeek.position && v == 7 ? 0 : v;
      bits->set(static_cast<size_t>(bit));
    }
  }
  return absl::OkStatus();
}

int DaysInMonthAtMost(int month) {  // February may have 29
  static constexpr std::array<int, 13> kDays = {0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return kDays[static_cast<size_t>(month)];
}

// absl::Weekday is Monday-first; cron counts from Sunday = 0.
int CronWeekday(absl::CivilDay day) {
  switch (absl::GetWeekday(day)) {
    case absl::Weekday::sunday:
      return 0;
    case absl::Weekday::monday:
      return 1;
    case absl::Weekday::tuesday:
      return 2;
    case absl::Weekday::wednesday:
      return 3;
    case absl::Weekday::thursday:
      return 4;
    case absl::Weekday::friday:
      return 5;
    case absl::Weekday::saturday:
      return 6;
  }
  return 0;
}

std::optional<absl::string_view> ExpandMacro(absl::string_view text) {
  if (text == "@yearly" || text == "@annually") return "0 0 1 1 *";
  if (text == "@monthly") return "0 0 1 * *";
  if (text == "@weekly") return "0 0 * * 0";
  if (text == "@daily" || text == "@midnight") return "0 0 * * *";
  if (text == "@hourly") return "0 * * * *";
  return std::nullopt;
}

}  // namespace

absl::StatusOr<CronSchedule> CronSchedule::Parse(std::string_view text_in) {
  const absl::string_view text(text_in.data(), text_in.size());
  CronSchedule s;
  s.text_ = std::string(absl::StripAsciiWhitespace(text));
  absl::string_view fields_text = s.text_;
  if (!fields_text.empty() && fields_text[0] == '@') {
    std::optional<absl::string_view> expanded =
        ExpandMacro(absl::AsciiStrToLower(std::string(fields_text)));
    if (!expanded) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cron: unknown macro '", fields_text,
          "' (known: @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly)"));
    }
    fields_text = *expanded;
  }
  const std::vector<absl::string_view> fields =
      absl::StrSplit(fields_text, absl::ByAnyChar(" \t"), absl::SkipEmpty());
  if (fields.size() != 5) {
    return absl::InvalidArgumentError(
        absl::StrCat("cron: expected 5 fields (minute hour day-of-month month day-of-week), got ",
                     fields.size(), " in '", s.text_, "'"));
  }
  bool star = false;
  if (absl::Status st = ParseField(kMinute, fields[0], &s.minutes_, &star); !st.ok()) return st;
  if (absl::Status st = ParseField(kHour, fields[1], &s.hours_, &star); !st.ok()) return st;
  if (absl::Status st = ParseField(kDayOfMonth, fields[2], &s.days_of_month_, &s.any_day_of_month_);
      !st.ok()) {
    return st;
  }
  if (absl::Status st = ParseField(kMonth, fields[3], &s.months_, &star); !st.ok()) return st;
  if (absl::Status st = ParseField(kDayOfWeek, fields[4], &s.days_of_week_, &s.any_day_of_week_);
      !st.ok()) {
    return st;
  }
  // With the day of week unrestricted (or both restricted: then every weekday in the list
  // fires), a day of month must exist in some chosen month.
  if (s.any_day_of_week_ && !s.any_day_of_month_) {
    bool exists = false;
    for (int m = 1; m <= 12 && !exists; ++m) {
      if (!s.months_.test(static_cast<size_t>(m))) continue;
      for (int d = 1; d <= DaysInMonthAtMost(m) && !exists; ++d) {
        exists = s.days_of_month_.test(static_cast<size_t>(d));
      }
    }
    if (!exists) {
      return absl::InvalidArgumentError(absl::StrCat("cron field 3 (day-of-month) '", fields[2],
                                                     "': never fires, no such day in month '",
                                                     fields[3], "'"));
    }
  }
  return s;
}

bool CronSchedule::DayMatches(absl::CivilDay day) const {
  const bool dom = days_of_month_.test(static_cast<size_t>(day.day()));
  const bool dow = days_of_week_.test(static_cast<size_t>(CronWeekday(day)));
  if (any_day_of_month_ || any_day_of_week_) return dom && dow;
  return dom || dow;
}

bool CronSchedule::Matches(absl::CivilMinute m) const {
  return minutes_.test(static_cast<size_t>(m.minute())) &&
         hours_.test(static_cast<size_t>(m.hour())) &&
         months_.test(static_cast<size_t>(m.month())) && DayMatches(absl::CivilDay(m));
}

absl::Time CronSchedule::NextAfter(absl::Time t) const {
  const absl::TimeZone utc = absl::UTCTimeZone();
  if (t == absl::InfiniteFuture()) return t;
  // The minute after the one holding t (fire times are whole minutes).
  absl::CivilMinute m = absl::ToCivilMinute(t, utc) + 1;
  const absl::CivilYear give_up = absl::CivilYear(m) + 30;  // Parse() ensures a slot exists
  while (absl::CivilYear(m) < give_up) {
    if (!months_.test(static_cast<size_t>(m.month()))) {
      m = absl::CivilMinute(absl::CivilMonth(m) + 1);
    } else if (!DayMatches(absl::CivilDay(m))) {
      m = absl::CivilMinute(absl::CivilDay(m) + 1);
    } else if (!hours_.test(static_cast<size_t>(m.hour()))) {
      m = absl::CivilMinute(absl::CivilHour(m) + 1);
    } else if (!minutes_.test(static_cast<size_t>(m.minute()))) {
      m += 1;
    } else {
      return absl::FromCivil(m, utc);
    }
  }
  return absl::InfiniteFuture();
}

FireDecision DecideFire(const CronSchedule& schedule, absl::Time last_handled, absl::Time now) {
  FireDecision d;
  for (absl::Time slot = schedule.NextAfter(last_handled); slot <= now;
       slot = schedule.NextAfter(slot)) {
    if (d.fire && d.skipped < FireDecision::kMaxCounted) ++d.skipped;
    d.fire = true;
    d.slot = slot;
  }
  d.next = schedule.NextAfter(now);
  return d;
}

}  // namespace tlbfleet::nightly
