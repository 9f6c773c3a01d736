#pragma once
// Splitting a multi-document YAML file (documents separated by "---" lines) so that
// `tlbfleet submit` can send each run spec of a preset file on its own.

#include <string>
#include <string_view>
#include <vector>

namespace tlbfleet::cli {

struct YamlDocument {
  // The document's text, preceded by as many empty lines as the file had before it, so that
  // a parser's line numbers are the file's.
  std::string text;
  int first_line = 1;  // 1-based line of the document's first line in the file
};

// The documents of `text`, split at lines that are "---" (optionally followed by a space or a
// comment) and ended by "..." lines. Documents holding only blank lines and comments are left
// out (a file that starts with "---" has no empty first document). A text without separators
// is one document, returned unchanged.
std::vector<YamlDocument> SplitYamlDocuments(std::string_view text);

}  // namespace tlbfleet::cli
