#include "catalogue/workloads/netperf.h"

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/address.h"

namespace tlbfleet::catalogue::netperf {
namespace {

// `server`: "" (loopback), "peer", or an IP literal in canonical spelling.
absl::StatusOr<std::string> CanonicalServer(std::string_view value) {
  if (value.empty() || value == kPeer) return std::string(value);
  absl::StatusOr<std::string> address = ::tlbfleet::CanonicalAddress(value);
  if (address.ok()) return address;
  return absl::InvalidArgumentError(
      absl::StrCat("must be \"\" (loopback), \"peer\" (another agent's netserver, chosen by the "
                   "controller) or an IPv4 or IPv6 address, got \"",
                   std::string(value), "\""));
}

// `server: peer` is resolved by the controller (ParamSpec::resolves_to_peer).
ParamSpec ResolvedToPeer(ParamSpec spec) {
  spec.resolves_to_peer = PeerResolution{kPeer, "port"};
  return spec;
}

class Netperf : public WorkloadSchema {
 public:
  std::string_view Name() const override { return "netperf"; }
  std::string_view Description() const override {
    return "netperf TCP_STREAM, UDP_STREAM, TCP_RR, UDP_RR against a server on loopback "
           "started by the workload, or a running netserver (another agent's, with server: peer)";
  }
  const std::vector<ParamSpec>& Schema() const override { return schema_; }
  const std::vector<MetricSpec>& Metrics() const override { return metrics_; }
  // Stream tests report only mbit_per_sec, rr tests only trans_per_sec.
  std::string_view PrimaryMetric() const override { return kMbit.name; }
  const std::vector<ClassicFlag>& ClassicFlags() const override { return flags_; }

  absl::Status CheckCombination(const Params& params) const override {
    const std::string& server = params.Str("server");
    const int64_t port = params.Int("port");
    if (server == kPeer && port != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("port: the controller sets it (to the peer's netserver) for server: peer; "
                       "leave it 0, got ",
                       port));
    }
    if (port == 0 && !server.empty() && server != kPeer && !::tlbfleet::IsLoopbackAddress(server)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "server: ", server,
          " is not a loopback address, and port 0 starts a server of the workload's own, "
          "which listens on loopback only; give the remote netserver's control port in "
          "`port`, or use server: peer"));
    }
    return absl::OkStatus();
  }

  int64_t TimeoutSeconds(const Params& params) const override {
    return 2 * params.Int("seconds") + 30;
  }

  // mmtests 0.15's names (IPv4), and today's: netperf-ipv{4,6}-{udp,tcp}[-rr] and
  // netperf-unix (drivers/driver-netperf-*.sh).
  std::vector<std::string> MmtestsNames() const override {
    return {"netperf-udp",      "netperf-tcp",      "netperf-udp-rr",      "netperf-tcp-rr",
            "netperf-ipv4-udp", "netperf-ipv4-tcp", "netperf-ipv4-udp-rr", "netperf-ipv4-tcp-rr",
            "netperf-ipv6-udp", "netperf-ipv6-tcp", "netperf-ipv6-udp-rr", "netperf-ipv6-tcp-rr",
            "netperf-unix"};
  }
  void FromMmtests(const std::string& mmtest, MmtestsConfig& c, MmtestsSpec* s) const override {
    s->benchmark = "netperf";
    if (mmtest == "netperf-unix") {
      s->refused =
          "it is netperf's STREAM_STREAM over AF_UNIX sockets, and tlbfleet's netperf has only "
          "TCP and UDP tests (tcp_stream, udp_stream, tcp_rr, udp_rr)";
      return;
    }
    const bool rr = absl::EndsWith(mmtest, "-rr");
    const bool v6 = absl::StartsWith(mmtest, "netperf-ipv6-");
    const std::string proto = absl::StrContains(mmtest, "-udp") ? "udp" : "tcp";
    s->params.emplace_back("test", absl::StrCat(proto, rr ? "_rr" : "_stream"));
    std::vector<std::string> remote = c.List("REMOTE_SERVER_HOST");
    if (!remote.empty()) {
      // mmtests' server pair: the netserver runs on a second machine. Ours is another agent's,
      // chosen and reserved by the controller.
      s->params.emplace_back("server", "peer");
      c.Warn("REMOTE_SERVER_HOST", absl::StrCat("the controller picks another agent's netserver "
                                                "(server: peer) instead of ",
                                                remote[0]));
      c.Warn("REMOTE_SERVER_USER", "the peer is reached through its agent, not over ssh");
    } else if (v6) {
      // mmtests' netserver listens on ::1 for the IPv6 tests, 127.0.0.1 (our default) otherwise.
      s->params.emplace_back("server", "\"::1\"");
    }
    if (std::optional<int64_t> v = c.Int("NETPERF_DURATION")) {
      s->params.emplace_back("seconds", absl::StrCat(*v));
    }
    if (rr) {
      // mmtests passes -m/-M only to stream tests: an rr test keeps netperf's 1-byte request
      // and response, and the size list only labels its results.
      s->params.emplace_back("message_size", "1");
      std::vector<std::string> sizes = c.List("NETPERF_BUFFER_SIZES");
      if (sizes.size() > 1 || (sizes.size() == 1 && sizes[0] != "1")) {
        c.Warn("NETPERF_BUFFER_SIZES",
               "an rr test runs 1-byte requests and responses whatever the size (mmtests "
               "repeats it once per size, only labelled by it); run once");
      }
    } else {
      std::vector<std::string> sizes = c.List("NETPERF_BUFFER_SIZES");
      if (!sizes.empty()) {
        s->sweep = absl::StrCat("{message_size: [", absl::StrJoin(sizes, ", "), "]}");
      }
    }
    for (const char* var :
         {"NETPERF_CONFIDENCE_MIN", "NETPERF_CONFIDENCE_MAX", "NETPERF_CONFIDENCE_LEVEL"}) {
      c.Warn(var,
             "netperf's own confidence repetitions (-i/-I) are not run; tlbfleet repeats "
             "iterations and computes intervals itself");
    }
    s->iterations = c.Int("NETPERF_ITERATIONS");
  }

 private:
  const std::vector<ParamSpec> schema_ = {
      EnumParam("test", "tcp_stream", {"tcp_stream", "udp_stream", "tcp_rr", "udp_rr"},
                "netperf test"),
      IntParam("message_size", "16384", 1, 1 << 20,
               "bytes per send (stream) or per request and per response (rr); UDP: at most "
               "65507"),
      IntParam("seconds", "10", 1, 86400, "test length"),
      ResolvedToPeer(
          StringParam("server", "", CanonicalServer,
                      "\"\" = 127.0.0.1; \"peer\" = another agent's netserver, chosen by the "
                      "controller; or an IP address: with port 0 a loopback address where the "
                      "workload starts its own server, else where a netserver listens")),
      IntParam("port", "0", 0, 65535,
               "control port of a running netserver at `server`; 0 = the workload starts its "
               "own server (loopback only)"),
  };
  const std::vector<MetricSpec> metrics_ = {kMbit, kTrans};
  // netperf's global -l, -H, -p, -t and its test-specific -m (given after "--" to netperf).
  const std::vector<ClassicFlag> flags_ = {
      {"-l", "seconds", "", "test length in seconds"},
      {"-H", "server", "",
       "server address (an IP address; without -p, a loopback one where the workload starts "
       "its own server)"},
      {"-p", "port", "", "control port of a running netserver (netperf's -p portnum)"},
      {"-t", "test", "", "test name, lower case: tcp_stream, udp_stream, tcp_rr, udp_rr"},
      {"-m", "message_size", "", "message size in bytes"},
  };
};

}  // namespace

std::unique_ptr<WorkloadSchema> NewSchema() { return std::make_unique<Netperf>(); }

}  // namespace tlbfleet::catalogue::netperf
