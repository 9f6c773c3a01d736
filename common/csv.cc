#include "common/csv.h"

#include "absl/strings/str_cat.h"

namespace tlbfleet {
namespace {

constexpr std::string_view kBlanks = " \t\r";

std::string_view TrimBlanks(std::string_view s) {
  const size_t first = s.find_first_not_of(kBlanks);
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(kBlanks) - first + 1);
}

}  // namespace

std::string CsvEscape(std::string_view field) {
  // Blanks at either end are quoted too: the reader trims them from an unquoted field.
  const bool blank_ends = !field.empty() && (field.front() == ' ' || field.front() == '\t' ||
                                             field.back() == ' ' || field.back() == '\t');
  if (!blank_ends && field.find_first_of(",\"\r\n") == std::string_view::npos) {
    return std::string(field);
  }
  std::string out;
  out.reserve(field.size() + 2);
  out += '"';
  for (char c : field) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

std::string CsvRow(const std::vector<std::string>& fields) {
  std::string out;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i > 0) out += ',';
    out += CsvEscape(fields[i]);
  }
  out += '\n';
  return out;
}

bool SplitCsvLine(std::string_view line, std::vector<std::string>* fields) {
  fields->clear();
  std::string field;
  bool in_quotes = false;
  bool was_quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (in_quotes) {
      if (c != '"') {
        field += c;
      } else if (i + 1 < line.size() && line[i + 1] == '"') {
        field += '"';
        ++i;
      } else {
        in_quotes = false;
      }
    } else if (c == '"') {
      // Only blanks may precede the opening quote, and a field has one quoted part.
      if (was_quoted || !TrimBlanks(field).empty()) return false;
      in_quotes = was_quoted = true;
      field.clear();
    } else if (c == ',') {
      fields->push_back(was_quoted ? field : std::string(TrimBlanks(field)));
      field.clear();
      was_quoted = false;
    } else if (was_quoted) {
      if (kBlanks.find(c) == std::string_view::npos) return false;
    } else {
      field += c;
    }
  }
  if (in_quotes) return false;
  fields->push_back(was_quoted ? field : std::string(TrimBlanks(field)));
  return true;
}

absl::Status ForEachCsvRecord(
    std::string_view text, const CsvReadOptions& options,
    absl::FunctionRef<absl::Status(size_t line_number, const std::vector<std::string>& fields)>
        record) {
  std::vector<std::string> fields;
  size_t line_number = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++line_number;
    const std::string_view content = TrimBlanks(line);
    if (content.empty() || (options.comment_lines && content.front() == '#')) continue;
    if (!SplitCsvLine(line, &fields)) {
      return absl::InvalidArgumentError(
          absl::StrCat("line ", line_number, ": a stray double quote"));
    }
    if (absl::Status status = record(line_number, fields); !status.ok()) return status;
  }
  return absl::OkStatus();
}

}  // namespace tlbfleet
