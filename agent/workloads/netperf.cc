// The netperf workload: its parameters to a netperf::Options, one test (netperf_client.h),
// and netperf's own output layout for tlbfleet-bench.
#include "catalogue/workloads/netperf.h"

#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agent/workloads/netperf_client.h"
#include "agent/workloads/workload.h"
#include "agent/workloads/workload_util.h"

namespace tlbfleet::workloads {
namespace {

using catalogue::netperf::kMbit;
using catalogue::netperf::kPeer;
using catalogue::netperf::kTrans;

class Netperf : public Workload {
 public:
  Netperf() : Workload("netperf") {}

  absl::StatusOr<std::vector<Measurement>> Run(const Params& params) const override {
    netperf::Options o;
    const std::string& test = params.Str("test");
    o.test = test == "udp_stream" ? netperf::TestKind::kUdpStream
             : test == "tcp_rr"   ? netperf::TestKind::kTcpRr
             : test == "udp_rr"   ? netperf::TestKind::kUdpRr
                                  : netperf::TestKind::kTcpStream;
    o.message_size = static_cast<size_t>(params.Int("message_size"));
    o.seconds = static_cast<double>(params.Int("seconds"));
    const std::string& server = params.Str("server");
    if (server == kPeer) {
      // Only the controller knows the peers; a job that got here unresolved cannot guess.
      return absl::FailedPreconditionError(
          "server: \"peer\" is replaced by the controller with another agent's netserver "
          "before the job runs, but reached the workload unresolved; outside the controller "
          "give server: <address> and port: <control port>");
    }
    o.server = server.empty() ? "127.0.0.1" : server;
    o.port = static_cast<uint16_t>(params.Int("port"));
    absl::StatusOr<netperf::Result> r = netperf::RunOnce(o);
    if (!r.ok()) return r.status();
    if (test == "tcp_rr" || test == "udp_rr") {
      return std::vector<Measurement>{Measure(kTrans, netperf::TransPerSec(*r))};
    }
    return std::vector<Measurement>{Measure(kMbit, netperf::MbitPerSec(*r))};
  }

  std::string ClassicOutput(const Params& params,
                            const std::vector<Measurement>& result) const override {
    // netperf's layout, without the socket buffer columns; the last field of the last line
    // is the result, as scripts that parse netperf expect.
    const std::string& test = params.Str("test");
    const bool rr = test == "tcp_rr" || test == "udp_rr";
    const std::string& server = params.Str("server");
    const std::string peer = server.empty() ? "127.0.0.1" : server;
    const bool v6 = peer.find(':') != std::string::npos;
    const int64_t port = params.Int("port");
    std::string upper;
    for (char c : test.substr(0, 3)) upper.push_back(static_cast<char>(c - 'a' + 'A'));
    const int64_t size = params.Int("message_size");
    char row[128];
    std::string out =
        absl::StrCat("MIGRATED ", upper, rr ? " REQUEST/RESPONSE TEST" : " STREAM TEST", " from ",
                     v6 ? "::" : "0.0.0.0", " () port 0 ", v6 ? "AF_INET6" : "AF_INET", " to ",
                     peer, " () port ", port, " ", v6 ? "AF_INET6" : "AF_INET", "\n");
    if (rr) {
      std::snprintf(row, sizeof row, "%-8lld %-8lld %-8.2f %.2f\n", static_cast<long long>(size),
                    static_cast<long long>(size), static_cast<double>(params.Int("seconds")),
                    FindValue(result, kTrans.name));
      absl::StrAppend(&out, "Request  Resp.    Elapsed  Trans.\nSize     Size     Time     Rate\n",
                      "bytes    bytes    secs.    per sec\n\n", row);
    } else {
      std::snprintf(row, sizeof row, "%-8lld %-8.2f %.2f\n", static_cast<long long>(size),
                    static_cast<double>(params.Int("seconds")), FindValue(result, kMbit.name));
      absl::StrAppend(&out, "Message  Elapsed\nSize     Time     Throughput\n",
                      "bytes    secs.    10^6bits/sec\n\n", row);
    }
    return out;
  }
};

}  // namespace

REGISTER_WORKLOAD(Netperf);

}  // namespace tlbfleet::workloads
