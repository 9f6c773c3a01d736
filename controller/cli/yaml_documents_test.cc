#include "controller/cli/yaml_documents.h"

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include "common/clock.h"
#include "controller/cli/commands.h"
#include "controller/cli/exit_codes.h"
#include "controller/cli/fake_fleet_for_test.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tlbfleet::cli {
namespace {

using ::testing::HasSubstr;

TEST(SplitYamlDocumentsTest, OneDocumentIsReturnedUnchanged) {
  const std::string text = "name: a\nbenchmark: ebizzy\n";
  std::vector<YamlDocument> docs = SplitYamlDocuments(text);
  ASSERT_EQ(docs.size(), 1u);
  EXPECT_EQ(docs[0].text, text);
  EXPECT_EQ(docs[0].first_line, 1);
}

TEST(SplitYamlDocumentsTest, SplitsAndKeepsTheFilesLineNumbers) {
  std::vector<YamlDocument> docs =
      SplitYamlDocuments("# comment\n---\nname: a\n--- # second\nname: b\nx: 1\n...\n");
  ASSERT_EQ(docs.size(), 2u);  // the comment-only document before the first --- is dropped
  EXPECT_EQ(docs[0].text, "\n\nname: a\n");
  EXPECT_EQ(docs[0].first_line, 3);
  EXPECT_EQ(docs[1].text, "\n\n\n\nname: b\nx: 1\n");
  EXPECT_EQ(docs[1].first_line, 5);
}

TEST(SplitYamlDocumentsTest, DashesInsideALineDoNotSplit) {
  std::vector<YamlDocument> docs = SplitYamlDocuments("name: a---b\n----\nnote: ---\n");
  ASSERT_EQ(docs.size(), 1u);
}

class MultiDocumentSubmitTest : public ::testing::Test {
 protected:
  MultiDocumentSubmitTest() {
    FleetClientOptions options;
    options.address = fleet_.address();
    client_ = *FleetClient::Create(options);
    commands_ = std::make_unique<Commands>(*client_, out_, err_, clock_, false);
  }
  std::string Write(const std::string& contents) {
    // One file per test and process: CTest runs this suite's tests in parallel processes,
    // and a shared name let one test read the other's half-written file.
    std::string path = ::testing::TempDir() + "/multi-" + std::to_string(::getpid()) + "-" +
                       ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".yaml";
    std::ofstream(path) << contents;
    return path;
  }

  FakeFleet fleet_;
  FakeClock clock_;
  std::ostringstream out_, err_;
  std::unique_ptr<FleetClient> client_;
  std::unique_ptr<Commands> commands_;
};

TEST_F(MultiDocumentSubmitTest, EachDocumentIsARunAndTheIdsEndTheOutput) {
  v1::SubmitRunResponse response;
  response.set_run_id("7");
  fleet_.SetSubmitResponse(response);
  const std::string path = Write("name: a\n---\nname: b\n");
  EXPECT_EQ(commands_->Submit(path), kExitOk);
  EXPECT_EQ(out_.str(),
            "submitted run 7 (jobs are expanded on each host)\n"
            "submitted run 7 (jobs are expanded on each host)\n"
            "7 7\n");
  EXPECT_EQ(fleet_.last_submit().spec_yaml(), "\n\nname: b\n");
  EXPECT_EQ(fleet_.last_submit().source_name(), path);
}

TEST_F(MultiDocumentSubmitTest, ARefusedDocumentSaysWhereAndStops) {
  fleet_.SetStatus(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "m.yaml:1: bad"));
  const std::string path = Write("name: a\n---\nname: b\n");
  EXPECT_EQ(commands_->Submit(path), kExitUsage);
  EXPECT_THAT(err_.str(), HasSubstr("the run spec at line 1 was not submitted\n"));
  EXPECT_EQ(out_.str(), "");
}

}  // namespace
}  // namespace tlbfleet::cli
