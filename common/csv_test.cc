#include "common/csv.h"

#include <utility>

#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tlbfleet {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

std::vector<std::string> Split(std::string_view line) {
  std::vector<std::string> fields;
  EXPECT_TRUE(SplitCsvLine(line, &fields)) << line;
  return fields;
}

bool Splits(std::string_view line) {
  std::vector<std::string> fields;
  return SplitCsvLine(line, &fields);
}

TEST(SplitCsvLineTest, UnquotedFieldsLoseTheirBlanks) {
  EXPECT_THAT(Split(" a ,\tb\t,c\r"), ElementsAre("a", "b", "c"));
  EXPECT_THAT(Split(",,"), ElementsAre("", "", ""));
}

TEST(SplitCsvLineTest, QuotedFieldsKeepCommasQuotesAndBlanks) {
  EXPECT_THAT(Split(R"("a,b", "say ""hi""" ,"  x  ")"), ElementsAre("a,b", "say \"hi\"", "  x  "));
  EXPECT_THAT(Split(R"("")"), ElementsAre(""));
}

TEST(SplitCsvLineTest, StrayQuotesAreRefused) {
  EXPECT_FALSE(Splits(R"(a"b,c)"));       // inside an unquoted field
  EXPECT_FALSE(Splits(R"("a"b,c)"));      // text after the closing quote
  EXPECT_FALSE(Splits(R"("a,b)"));        // never closed
  EXPECT_FALSE(Splits(R"("a""b" "c")"));  // two quoted parts
}

TEST(CsvEscapeTest, BlanksAtEitherEndAreQuotedInsideAreNot) {
  EXPECT_EQ(CsvEscape(" x"), "\" x\"");
  EXPECT_EQ(CsvEscape("x\t"), "\"x\t\"");
  EXPECT_EQ(CsvEscape("a b"), "a b");
}

TEST(CsvRowTest, RoundTripsThroughTheReader) {
  const std::vector<std::string> fields = {"plain", "a,b", "say \"hi\"", "", " blanks "};
  std::string row = CsvRow(fields);
  ASSERT_EQ(row.back(), '\n');
  row.pop_back();
  EXPECT_EQ(Split(row), fields);
}

absl::StatusOr<std::vector<std::pair<size_t, std::vector<std::string>>>> ReadRecords(
    std::string_view text, CsvReadOptions options = {}) {
  std::vector<std::pair<size_t, std::vector<std::string>>> records;
  absl::Status status =
      ForEachCsvRecord(text, options, [&](size_t line, const std::vector<std::string>& fields) {
        records.emplace_back(line, fields);
        return absl::OkStatus();
      });
  if (!status.ok()) return status;
  return records;
}

TEST(ForEachCsvRecordTest, SkipsBlankLinesAndCountsEveryLine) {
  auto records = ReadRecords("a,b\r\n\n  \r\n1,2\n3,4");
  ASSERT_TRUE(records.ok()) << records.status();
  EXPECT_THAT(*records, ElementsAre(Pair(1, ElementsAre("a", "b")), Pair(4, ElementsAre("1", "2")),
                                    Pair(5, ElementsAre("3", "4"))));
}

TEST(ForEachCsvRecordTest, CommentLinesOnlyWhenAsked) {
  const std::string text = "a\n  # note\n1\n";
  auto plain = ReadRecords(text);
  ASSERT_TRUE(plain.ok());
  EXPECT_THAT(*plain, ElementsAre(Pair(1, ElementsAre("a")), Pair(2, ElementsAre("# note")),
                                  Pair(3, ElementsAre("1"))));
  auto with_comments = ReadRecords(text, CsvReadOptions{.comment_lines = true});
  ASSERT_TRUE(with_comments.ok());
  EXPECT_THAT(*with_comments, ElementsAre(Pair(1, ElementsAre("a")), Pair(3, ElementsAre("1"))));
}

TEST(ForEachCsvRecordTest, AStrayQuoteNamesItsLine) {
  auto records = ReadRecords("a,b\n1,2\n\"3,4\n");
  ASSERT_FALSE(records.ok());
  EXPECT_EQ(records.status().message(), "line 3: a stray double quote");
}

TEST(ForEachCsvRecordTest, StopsAtTheFirstErrorTheCallbackReturns) {
  int calls = 0;
  absl::Status status =
      ForEachCsvRecord("x\ny\nz\n", {}, [&](size_t line, const std::vector<std::string>&) {
        ++calls;
        return line == 2 ? absl::InvalidArgumentError("line 2: bad") : absl::OkStatus();
      });
  EXPECT_THAT(status.message(), HasSubstr("line 2: bad"));
  EXPECT_EQ(calls, 2);
}

}  // namespace
}  // namespace tlbfleet
