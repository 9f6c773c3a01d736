// The agent's monitors are the catalogue's: one list of names (catalogue/catalogue.h).
#include "agent/kernel/monitor.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "agent/kernel/sysroot.h"
#include "catalogue/catalogue.h"

namespace tlbfleet::agent {
namespace {

TEST(MonitorTest, TheAgentCanRunEveryMonitorOfTheCatalogueAndNoOther) {
  std::vector<std::string> catalogue_names;
  for (const catalogue::MonitorInfo& m : catalogue::Monitors()) catalogue_names.push_back(m.name);
  std::sort(catalogue_names.begin(), catalogue_names.end());
  std::vector<std::string> agent_names = MonitorNames();
  std::sort(agent_names.begin(), agent_names.end());
  EXPECT_EQ(agent_names, catalogue_names);
}

TEST(MonitorTest, AnUnknownMonitorNamesTheKnownOnes) {
  const Sysroot root;
  absl::StatusOr<std::unique_ptr<Monitor>> m = CreateMonitor("nope", root);
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(m.status().message().find("flush_profile"), std::string::npos);
}

}  // namespace
}  // namespace tlbfleet::agent
