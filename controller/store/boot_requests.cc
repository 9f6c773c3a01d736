#include "controller/store/boot_requests.h"

#include "common/status_macros.h"
#include "tlbfleet/v1/agent.pb.h"

namespace tlbfleet::store::boot_requests {

absl::StatusOr<bool> Claim(Database& db, int64_t run_id, int64_t slot, int64_t boot_index,
                           const std::string& boot_id, const std::string& boot_entry,
                           bool entry_failed) {
  TLB_ASSIGN_OR_RETURN(Statement q,
                       db.Prepare("SELECT boot_index, from_boot_id, boot_entry FROM"
                                  " slot_boot_requests WHERE run_id = ?1 AND slot = ?2"));
  q.Bind(1, run_id).Bind(2, slot);
  TLB_ASSIGN_OR_RETURN(bool row, q.Step());
  if (!row || q.Int(0) != boot_index || q.Text(1) == boot_id) return false;
  if (q.Text(2) != boot_entry && !entry_failed) {
    // Back from the reboot asked for, but not on the entry: one miss.
    TLB_ASSIGN_OR_RETURN(Statement miss, db.Prepare("UPDATE slot_boot_requests SET misses ="
                                                    " misses + 1 WHERE run_id = ?1 AND slot = ?2"));
    TLB_RETURN_IF_ERROR(miss.Bind(1, run_id).Bind(2, slot).Run());
    return false;
  }
  TLB_ASSIGN_OR_RETURN(Statement drop, db.Prepare("DELETE FROM slot_boot_requests"
                                                  " WHERE run_id = ?1 AND slot = ?2"));
  TLB_RETURN_IF_ERROR(drop.Bind(1, run_id).Bind(2, slot).Run());
  return true;
}

absl::Status Record(Database& db, int64_t run_id, int64_t slot, int64_t boot_index,
                    const std::string& boot_entry, const std::string& boot_id) {
  // Asking again for the same boot into the same entry keeps the count of misses.
  TLB_ASSIGN_OR_RETURN(
      Statement q,
      db.Prepare("INSERT INTO slot_boot_requests(run_id, slot, boot_index, boot_entry,"
                 " from_boot_id) VALUES(?1, ?2, ?3, ?4, ?5) ON CONFLICT(run_id, slot) DO UPDATE"
                 " SET misses = CASE WHEN boot_index = excluded.boot_index AND boot_entry ="
                 " excluded.boot_entry THEN misses ELSE 0 END, boot_index = excluded.boot_index,"
                 " boot_entry = excluded.boot_entry, from_boot_id = excluded.from_boot_id"));
  return q.Bind(1, run_id)
      .Bind(2, slot)
      .Bind(3, boot_index)
      .Bind(4, boot_entry)
      .Bind(5, boot_id)
      .Run();
}

absl::StatusOr<int64_t> Misses(Database& db, int64_t run_id, int64_t slot) {
  TLB_ASSIGN_OR_RETURN(Statement q, db.Prepare("SELECT misses FROM slot_boot_requests"
                                               " WHERE run_id = ?1 AND slot = ?2"));
  q.Bind(1, run_id).Bind(2, slot);
  TLB_ASSIGN_OR_RETURN(bool row, q.Step());
  return row ? q.Int(0) : 0;
}

absl::StatusOr<std::string> EntryOf(Database& db, int64_t run_id, int64_t slot,
                                    int64_t boot_index) {
  TLB_ASSIGN_OR_RETURN(Statement q, db.Prepare("SELECT id, assignment FROM jobs WHERE run_id = ?1"
                                               " AND slot = ?2 AND boot_index = ?3"
                                               " ORDER BY id LIMIT 1"));
  q.Bind(1, run_id).Bind(2, slot).Bind(3, boot_index);
  TLB_ASSIGN_OR_RETURN(bool row, q.Step());
  if (!row) return std::string();
  TLB_ASSIGN_OR_RETURN(
      v1::JobAssignment a,
      ParseBlob<v1::JobAssignment>(q, 1, absl::StrCat("job ", q.Int(0), " assignment")));
  return a.boot_entry();
}

}  // namespace tlbfleet::store::boot_requests
