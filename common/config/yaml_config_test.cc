// --config FILE in YAML: keys are long flags, the command line wins, values are checked like
// flags, and unknown keys or shapes are errors naming the file and the key.

#include "common/config/yaml_config.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace tlbfleet {
namespace {

class YamlConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = (std::filesystem::temp_directory_path() /
             ("tlbfleet-config-" + std::to_string(::getpid()) + "-" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".yaml"))
                .string();
    app_.add_option("--listen", listen_)->required();
    app_.add_option("--lease-seconds", lease_)->check(CLI::Range(1.0, 100.0));
    app_.add_option("--label", labels_);
    app_.add_flag("--insecure", insecure_);
    AddYamlConfig(app_, "YAML config file");
  }
  void TearDown() override { std::filesystem::remove(path_); }
  // Parses `args` (after the program name) with `yaml` as --config; "" or the error.
  std::string Parse(const std::string& yaml, std::vector<std::string> args) {
    std::ofstream(path_) << yaml;
    args.insert(args.begin(), {"prog", "--config", path_});
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    try {
      app_.parse(static_cast<int>(argv.size()), argv.data());
    } catch (const CLI::ParseError& e) {
      return e.what();
    }
    return "";
  }

  std::string path_;
  CLI::App app_{"test"};
  std::string listen_;
  double lease_ = 30;
  std::vector<std::string> labels_;
  bool insecure_ = false;
};

TEST_F(YamlConfigTest, KeysSetFlagsAndTheCommandLineWins) {
  EXPECT_EQ(Parse("listen: 127.0.0.1:7070\nlease-seconds: 12\nlabel: [a=1, b=2]\ninsecure: true\n",
                  {"--lease-seconds", "40"}),
            "");
  EXPECT_EQ(listen_, "127.0.0.1:7070");  // a required flag may come from the file
  EXPECT_EQ(lease_, 40);                 // the command line wins
  EXPECT_EQ(labels_, (std::vector<std::string>{"a=1", "b=2"}));
  EXPECT_TRUE(insecure_);
}

TEST_F(YamlConfigTest, UnknownKeyIsNamedWithTheFile) {
  std::string error = Parse("listen: x\nlease_seconds: 12\n", {});
  EXPECT_NE(error.find(path_ + ": unknown key 'lease_seconds'"), std::string::npos) << error;
  EXPECT_NE(error.find("lease-seconds"), std::string::npos) << error;  // lists the right ones
}

TEST_F(YamlConfigTest, ValuesAreCheckedLikeFlags) {
  std::string error = Parse("listen: x\nlease-seconds: 0\n", {});
  EXPECT_NE(error.find("--lease-seconds"), std::string::npos) << error;
}

TEST_F(YamlConfigTest, BadShapesAreNamed) {
  EXPECT_NE(Parse("listen: {host: x}\n", {}).find("key 'listen': want a value or a list"),
            std::string::npos);
  EXPECT_NE(Parse("listen:\n", {}).find("key 'listen' has no value"), std::string::npos);
  EXPECT_NE(Parse("- listen\n", {}).find("want a map"), std::string::npos);
  EXPECT_NE(Parse("listen: [x\n", {}).find("not valid YAML"), std::string::npos);
}

TEST_F(YamlConfigTest, AMissingFileIsAnError) {
  std::vector<std::string> args = {"prog", "--config", path_ + ".missing", "--listen", "x"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  EXPECT_THROW(app_.parse(static_cast<int>(argv.size()), argv.data()), CLI::ParseError);
}

}  // namespace
}  // namespace tlbfleet
