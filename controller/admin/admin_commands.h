#pragma once
// `tlbfleet-controller token create|list|revoke`, `audit` and `backup`: local
// administration on the database file (whoever can write the file owns the controller
// anyway). They work while the controller runs: SQLite's WAL lets both write.
//
// Exit codes: 0 success, 1 a failure of the database, 2 bad input (the message names it).

#include <cstdint>
#include <ostream>
#include <string>

namespace tlbfleet::admin {

struct TokenCreateOptions {
  std::string db;
  std::string role;  // viewer | operator | admin | agent
  std::string name;
  double expires_days = 0;  // 0 = never
};

// Prints what was created, then the token alone on the last line of `out`: the only time
// it is ever shown.
int TokenCreateCommand(const TokenCreateOptions& options, std::ostream& out, std::ostream& err);
int TokenListCommand(const std::string& db, const std::string& format, std::ostream& out,
                     std::ostream& err);
int TokenRevokeCommand(const std::string& db, const std::string& name, std::ostream& out,
                       std::ostream& err);
// `tlbfleet-controller backup --db FILE --out FILE`: an online copy (store/backup.h).
int BackupCommand(const std::string& db, const std::string& out_path, std::ostream& out,
                  std::ostream& err);
int AuditCommand(const std::string& db, uint32_t limit, const std::string& format,
                 std::ostream& out, std::ostream& err);

}  // namespace tlbfleet::admin
