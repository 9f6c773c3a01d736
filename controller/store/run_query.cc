// Store::QueryRuns lives here, apart from store.cc and runs.cc, with the SQL it runs.

#include "controller/store/run_query.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "controller/store/runs.h"
#include "controller/store/slots.h"
#include "controller/store/store.h"

namespace tlbfleet::store {

namespace {

std::string RunStateText(v1::RunState state) {
  switch (state) {
    case v1::RUN_STATE_QUEUED:
      return "queued";
    case v1::RUN_STATE_RUNNING:
      return "running";
    case v1::RUN_STATE_SUCCEEDED:
      return "succeeded";
    case v1::RUN_STATE_FAILED:
      return "failed";
    case v1::RUN_STATE_CANCELLED:
      return "cancelled";
    default:
      return "";
  }
}

}  // namespace

absl::StatusOr<RunIdQuery> BuildRunIdQuery(const v1::ListRunsRequest& request) {
  RunIdQuery q;
  if (request.limit() > kMaxRunPageSize) {
    return absl::InvalidArgumentError(
        absl::StrCat("limit: at most ", kMaxRunPageSize, " runs per page, got ", request.limit()));
  }
  q.limit = request.limit() == 0 ? kDefaultRunPageSize : request.limit();
  std::vector<std::string> where;
  // Built in place (an int64_t or a std::string): moving a whole variant made GCC 12 warn
  // -Wmaybe-uninitialized about the string alternative.
  auto bind = [&](auto value) {
    q.binds.emplace_back(std::in_place_type<decltype(value)>, std::move(value));
    return absl::StrCat("?", q.binds.size());
  };
  if (!request.page_token().empty()) {
    int64_t before = 0;
    if (!absl::SimpleAtoi(request.page_token(), &before) || before <= 0) {
      return absl::InvalidArgumentError(
          "page_token: not a next_page_token of this list (pass it back unchanged)");
    }
    where.push_back(absl::StrCat("id < ", bind(before)));
  }
  if (!request.benchmark().empty()) {
    where.push_back(absl::StrCat("benchmark = ", bind(request.benchmark())));
  }
  if (request.states_size() > 0) {
    std::vector<std::string> states;
    for (int i = 0; i < request.states_size(); ++i) {
      std::string text = RunStateText(request.states(i));
      if (text.empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat("states[", i,
                         "]: not a run state (RUN_STATE_QUEUED, RUN_STATE_RUNNING, "
                         "RUN_STATE_SUCCEEDED, RUN_STATE_FAILED, "
                         "RUN_STATE_CANCELLED)"));
      }
      states.push_back(bind(text));
    }
    where.push_back(absl::StrCat("state IN (", absl::StrJoin(states, ", "), ")"));
  }
  if (!request.name().empty()) {
    where.push_back(absl::StrCat("instr(lower(name), lower(", bind(request.name()), ")) > 0"));
  }
  if (request.created_after_unix() < 0) {
    return absl::InvalidArgumentError("created_after_unix: must not be negative");
  }
  if (request.created_before_unix() < 0) {
    return absl::InvalidArgumentError("created_before_unix: must not be negative");
  }
  if (request.created_after_unix() > 0 && request.created_before_unix() > 0 &&
      request.created_before_unix() <= request.created_after_unix()) {
    return absl::InvalidArgumentError("created_before_unix: must be later than created_after_unix");
  }
  if (request.created_after_unix() > 0) {
    where.push_back(absl::StrCat("created_ms >= ", bind(request.created_after_unix() * 1000)));
  }
  if (request.created_before_unix() > 0) {
    where.push_back(absl::StrCat("created_ms < ", bind(request.created_before_unix() * 1000)));
  }
  if (!request.host().empty()) {
    // A host is known by agent id or hostname; jobs remember the agent that last held them.
    std::string h = bind(request.host());
    where.push_back(
        absl::StrCat("id IN (SELECT run_id FROM jobs WHERE agent_id IN (SELECT agent_id FROM hosts"
                     " WHERE agent_id = ",
                     h, " OR hostname = ", h, "))"));
  }
  q.sql = absl::StrCat("SELECT id FROM runs",
                       where.empty() ? "" : absl::StrCat(" WHERE ", absl::StrJoin(where, " AND ")),
                       " ORDER BY id DESC LIMIT ", bind(static_cast<int64_t>(q.limit) + 1));
  return q;
}

absl::StatusOr<v1::ListRunsResponse> Store::QueryRuns(const v1::ListRunsRequest& request) {
  TLB_ASSIGN_OR_RETURN(RunIdQuery query, BuildRunIdQuery(request));
  // One read transaction: the page and its runs come from the same snapshot.
  return readers_.Read([&query](Database& db) -> absl::StatusOr<v1::ListRunsResponse> {
    TLB_ASSIGN_OR_RETURN(Statement stmt, db.Prepare(query.sql));
    for (size_t i = 0; i < query.binds.size(); ++i) {
      const int index = static_cast<int>(i + 1);
      if (const int64_t* n = std::get_if<int64_t>(&query.binds[i])) {
        stmt.Bind(index, *n);
      } else {
        stmt.Bind(index, std::get<std::string>(query.binds[i]));
      }
    }
    std::vector<int64_t> ids;
    for (;;) {
      TLB_ASSIGN_OR_RETURN(bool row, stmt.Step());
      if (!row) break;
      ids.push_back(stmt.Int(0));
    }
    v1::ListRunsResponse response;
    if (ids.size() > query.limit) {
      ids.resize(query.limit);
      response.set_next_page_token(absl::StrCat(ids.back()));
    }
    for (int64_t id : ids) {
      TLB_ASSIGN_OR_RETURN(v1::Run run, runs::Load(db, id));
      TLB_RETURN_IF_ERROR(slots::LoadAbandoned(db, id, &run));
      *response.add_runs() = std::move(run);
    }
    return response;
  });
}

}  // namespace tlbfleet::store
