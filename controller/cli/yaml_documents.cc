#include "controller/cli/yaml_documents.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"

namespace tlbfleet::cli {
namespace {

bool IsMarker(absl::string_view line, absl::string_view marker) {
  if (!absl::StartsWith(line, marker)) return false;
  absl::string_view rest = line.substr(marker.size());
  return rest.empty() || rest[0] == ' ' || rest[0] == '\t' || rest[0] == '\r';
}

bool HasContent(absl::string_view line) {
  absl::string_view s = absl::StripLeadingAsciiWhitespace(line);
  return !s.empty() && s[0] != '#';
}

}  // namespace

std::vector<YamlDocument> SplitYamlDocuments(std::string_view text) {
  std::vector<YamlDocument> docs;
  YamlDocument current;
  bool has_content = false;
  bool separated = false;
  int line_no = 0;
  auto flush = [&](int next_line) {
    if (has_content) docs.push_back(std::move(current));
    current = YamlDocument();
    current.text.assign(static_cast<size_t>(next_line - 1), '\n');
    current.first_line = next_line;
    has_content = false;
  };
  const std::vector<absl::string_view> lines =
      absl::StrSplit(absl::string_view(text.data(), text.size()), '\n');
  for (size_t i = 0; i < lines.size(); ++i) {
    ++line_no;
    const absl::string_view line = lines[i];
    if (IsMarker(line, "---") || IsMarker(line, "...")) {
      separated = true;
      flush(line_no + 1);
      continue;
    }
    current.text.append(line.data(), line.size());
    if (i + 1 < lines.size()) current.text += '\n';
    has_content = has_content || HasContent(line);
  }
  if (!separated) return {YamlDocument{std::string(text), 1}};
  flush(line_no + 1);
  return docs;
}

}  // namespace tlbfleet::cli
