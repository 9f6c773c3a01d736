// BackupDatabase: a copy of a live store that a store opens again with its runs (the restore),
// taken while another connection keeps writing; and the refusals, naming the file.

#include "controller/store/backup.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "controller/store/store.h"

namespace tlbfleet::store {
namespace {

class BackupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("tlbfleet-backup-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Path(const std::string& name) { return (dir_ / name).string(); }
  static v1::RunSpec Spec(const std::string& name) {
    v1::RunSpec spec;
    spec.set_name(name);
    spec.set_benchmark("ebizzy");
    spec.set_iterations(1);
    spec.add_arms()->set_name("a");
    spec.mutable_hosts()->set_count(1);
    return spec;
  }
  static std::vector<scheduler::JobPlan> Plans() {
    scheduler::JobPlan p;
    p.arm = "a";
    p.iteration = 1;
    p.timeout_seconds = 30;
    return {p};
  }

  std::filesystem::path dir_;
};

TEST_F(BackupTest, TheCopyOfALiveStoreRestoresWithItsRuns) {
  std::unique_ptr<Store> live = *Store::Open(Path("fleet.db"));
  std::vector<std::string> ids;
  for (int i = 0; i < 20; ++i) {
    absl::StatusOr<std::string> id =
        live->CreateRun(Spec("run" + std::to_string(i)), "yaml", Plans(), 1000 + i);
    ASSERT_TRUE(id.ok()) << id.status();
    ids.push_back(*id);
  }
  // Another connection keeps writing while the copy is taken (the controller does).
  std::atomic<bool> stop{false};
  std::atomic<int> written{0};
  std::thread writer([&] {
    while (!stop.load()) {
      if (live->CreateRun(Spec("during"), "yaml", Plans(), 5000).ok()) ++written;
    }
  });
  absl::StatusOr<BackupInfo> info = BackupDatabase(Path("fleet.db"), Path("copy.db"));
  stop.store(true);
  writer.join();
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_GT(info->pages, 0);
  EXPECT_GT(info->bytes, 0);
  EXPECT_GT(info->schema_version, 0);
  EXPECT_FALSE(std::filesystem::exists(Path("copy.db-wal")));

  // Restore: a store opened on the copy has every run taken before it.
  std::unique_ptr<Store> restored = *Store::Open(Path("copy.db"));
  for (size_t i = 0; i < ids.size(); ++i) {
    absl::StatusOr<v1::Run> run = restored->GetRun(ids[i]);
    ASSERT_TRUE(run.ok()) << ids[i] << ": " << run.status();
    EXPECT_EQ(run->spec().name(), "run" + std::to_string(i));
  }
  // ...and works on its own: new runs go to the copy only.
  absl::StatusOr<std::string> more = restored->CreateRun(Spec("after"), "yaml", Plans(), 9000);
  ASSERT_TRUE(more.ok()) << more.status();
  EXPECT_FALSE(live->GetRun(*more).ok() && live->GetRun(*more)->spec().name() == "after");
}

TEST_F(BackupTest, RefusesAMissingSourceAnExistingDestinationAndAForeignFile) {
  absl::StatusOr<BackupInfo> missing = BackupDatabase(Path("nope.db"), Path("copy.db"));
  EXPECT_TRUE(absl::IsNotFound(missing.status())) << missing.status();
  EXPECT_NE(missing.status().message().find("nope.db"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(Path("nope.db")));  // not created by the attempt

  { std::unique_ptr<Store> store = *Store::Open(Path("fleet.db")); }
  std::ofstream(Path("taken.db")) << "precious";
  absl::StatusOr<BackupInfo> exists = BackupDatabase(Path("fleet.db"), Path("taken.db"));
  EXPECT_TRUE(absl::IsAlreadyExists(exists.status())) << exists.status();
  std::ifstream in(Path("taken.db"));
  std::string kept((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(kept, "precious");

  std::ofstream(Path("other.db")).flush();  // an empty file is an empty SQLite database
  absl::StatusOr<BackupInfo> foreign = BackupDatabase(Path("other.db"), Path("copy.db"));
  EXPECT_TRUE(absl::IsInvalidArgument(foreign.status())) << foreign.status();
  EXPECT_FALSE(std::filesystem::exists(Path("copy.db")));
  // Nothing half-written is left behind.
  for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
    EXPECT_EQ(entry.path().filename().string().find(".tmp."), std::string::npos) << entry.path();
  }
}

}  // namespace
}  // namespace tlbfleet::store
