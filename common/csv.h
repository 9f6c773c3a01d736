#pragma once
// CSV, the one reader and the one writer of it (RFC 4180): the samples CSV that `results`,
// `compare --from-csv` and the HTTP API speak, and the series CSV of `changepoints
// --from-csv`. A field holds no newline (none of ours can), so a record is a line.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"

namespace tlbfleet {

// RFC 4180 quoting: a field containing a comma, a double quote, CR or LF, or beginning or
// ending with a blank (which the reader would trim), is wrapped in double quotes and its quotes
// are doubled; any other field is returned unchanged.
std::string CsvEscape(std::string_view field);
// The escaped fields joined by commas, terminated by '\n'.
std::string CsvRow(const std::vector<std::string>& fields);

// Splits one line into fields. An unquoted field loses its surrounding blanks (space, tab,
// CR); a quoted one keeps its text exactly, "" standing for one quote, with blanks allowed
// around the quotes. False on a stray quote: one inside an unquoted field, text after a closing
// quote, or a quote never closed.
bool SplitCsvLine(std::string_view line, std::vector<std::string>* fields);

struct CsvReadOptions {
  // Lines whose first non-blank character is '#' are comments (the series CSV allows them).
  bool comment_lines = false;
};

// Calls `record(line_number, fields)` for each line of `text` that is not blank (nor a comment,
// when asked), in order, line numbers counted from 1 over every line; LF and CR LF both end a
// line. Stops at the first error: a stray quote ("line N: a stray double quote") or what
// `record` returns. Streams: nothing but the current line's fields is held.
absl::Status ForEachCsvRecord(
    std::string_view text, const CsvReadOptions& options,
    absl::FunctionRef<absl::Status(size_t line_number, const std::vector<std::string>& fields)>
        record);

}  // namespace tlbfleet
