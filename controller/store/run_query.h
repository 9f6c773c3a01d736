#pragma once
// The filtered, paged run list (FleetService.ListRuns, GET /api/v1/runs) as SQL. Keyset
// paging on the run id (newest first) keeps every page as cheap as the first, and the
// filters use the indexes of migration 9.

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "tlbfleet/v1/fleet.pb.h"

namespace tlbfleet::store {

constexpr uint32_t kDefaultRunPageSize = 50;
constexpr uint32_t kMaxRunPageSize = 1000;

// One SELECT of run ids, newest first, with `limit` + 1 rows at most (the extra row says
// whether there is a next page).
struct RunIdQuery {
  std::string sql;
  std::vector<std::variant<int64_t, std::string>> binds;  // ?1, ?2, ... in order
  uint32_t limit = 0;
};

// INVALID_ARGUMENT naming the field for a bad filter or page token.
absl::StatusOr<RunIdQuery> BuildRunIdQuery(const v1::ListRunsRequest& request);

}  // namespace tlbfleet::store
