// Fuzzes the controller's handling of what agents send (controller/core/controller.h:
// Register, OnMessage, Unregister), with a run submitted so that leases, samples and
// completions meet real rows. The store is a fresh SQLite file per input (on /dev/shm), its
// writes on the calling thread; the clock is the fuzzer's.
//
// Input: records of [kind: 1 byte][length: 2 bytes, little-endian][length bytes]:
//   kind % 4 == 0  a new stream: Unregister the last one, Register a tlbfleet.v1.Hello
//   kind % 4 == 1  a tlbfleet.v1.AgentMessage on the current stream
//   kind % 4 == 2  the clock moves on by length x 100 ms, then a tick (lease expiry, dispatch)
//   kind % 4 == 3  the stream closes (Unregister)
// Bytes that do not parse as the message are skipped. Seeds: make_seeds.cc.
// Checks: no crash or sanitizer report; afterwards the run can still be read, and no agent
// holds two leases (the store's own view).

#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "common/clock.h"
#include "controller/core/controller_impl.h"
#include "controller/core/fake_channel_for_test.h"
#include "controller/store/store.h"

namespace {

constexpr char kRun[] =
    "name: fuzz\nbenchmark: ebizzy\niterations: 2\narms: [{name: a}, {name: b}]\n";

class Session {
 public:
  Session() {
    path_ = "/dev/shm/tlbfleet-fuzz-" + std::to_string(::getpid()) + ".db";
    Remove();
    store_ = *tlbfleet::store::Store::Open(path_, {.writer_thread = false});
    tlbfleet::core::ControllerOptions options;
    options.lease_ms = 10'000;
    options.heartbeat_ms = 2'500;
    options.reconnect_grace_ms = 30'000;
    controller_ = std::make_unique<tlbfleet::core::ControllerImpl>(*store_, options, clock_);
    controller_->RecoverForTest();
    run_id_ = controller_->runs().Submit(kRun, "fuzz.yaml")->run_id();
  }
  ~Session() {
    Close();
    controller_.reset();
    store_.reset();
    Remove();
  }

  void Hello(const uint8_t* data, size_t size) {
    tlbfleet::v1::Hello hello;
    if (!hello.ParseFromArray(data, static_cast<int>(size))) return;
    Close();
    channel_ = std::make_unique<tlbfleet::core::FakeChannel>();
    registered_ = controller_->agents().Register(channel_.get(), hello).ok();
  }
  void Message(const uint8_t* data, size_t size) {
    tlbfleet::v1::AgentMessage message;
    if (!registered_ || !message.ParseFromArray(data, static_cast<int>(size))) return;
    controller_->agents().OnMessage(channel_.get(), message);
  }
  void Tick(size_t steps) {
    clock_.Advance(absl::Milliseconds(static_cast<int64_t>(steps) * 100));
    controller_->Tick();
  }
  void Close() {
    if (registered_) controller_->agents().Unregister(channel_.get());
    registered_ = false;
  }
  void Check() {
    Close();
    controller_->Tick();
    if (!controller_->runs().GetRun(run_id_).ok()) std::abort();
    sqlite3* db = nullptr;
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_open_v2(path_.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK ||
        sqlite3_prepare_v2(db,
                           "SELECT COUNT(*) FROM (SELECT agent_id FROM jobs WHERE"
                           " state = 'leased' GROUP BY agent_id HAVING COUNT(*) > 1)",
                           -1, &stmt, nullptr) != SQLITE_OK ||
        sqlite3_step(stmt) != SQLITE_ROW || sqlite3_column_int64(stmt, 0) != 0) {
      std::abort();
    }
    sqlite3_finalize(stmt);
    sqlite3_close(db);
  }

 private:
  void Remove() {
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path_ + suffix);
  }
  std::string path_;
  tlbfleet::FakeClock clock_{absl::FromUnixMillis(1'000'000)};
  std::unique_ptr<tlbfleet::store::Store> store_;
  std::unique_ptr<tlbfleet::core::ControllerImpl> controller_;
  std::unique_ptr<tlbfleet::core::FakeChannel> channel_;
  bool registered_ = false;
  std::string run_id_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Session session;
  size_t at = 0;
  int records = 0;
  while (at + 3 <= size && records++ < 64) {
    const uint8_t kind = data[at];
    const size_t length = std::min<size_t>(data[at + 1] | (data[at + 2] << 8), size - at - 3);
    const uint8_t* body = data + at + 3;
    switch (kind % 4) {
      case 0:
        session.Hello(body, length);
        break;
      case 1:
        session.Message(body, length);
        break;
      case 2:
        session.Tick(length);
        break;
      case 3:
        session.Close();
        break;
    }
    at += 3 + (kind % 4 == 2 ? 0 : length);
  }
  session.Check();
  return 0;
}
