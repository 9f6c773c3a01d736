#include "agent/runner/assignment_check.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "agent/kernel/monitor.h"
#include "agent/runner/paths.h"
#include "agent/workloads/workload.h"
#include "common/address.h"

namespace tlbfleet::agent {
namespace {

absl::Status FieldError(absl::string_view field, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", message));
}

}  // namespace

std::string Shown(absl::string_view value) {
  std::string out = "\"";
  for (char c : value.substr(0, 40)) {
    out += (c >= 0x20 && c < 0x7f) ? std::string(1, c)
                                   : absl::StrFormat("\\x%02x", static_cast<uint8_t>(c));
  }
  if (value.size() > 40) absl::StrAppend(&out, "...");
  return out + "\"";
}

namespace {

// Ids and names: what run specs allow for names, plus ':' (none needs more).
absl::Status CheckName(absl::string_view field, absl::string_view value, bool required) {
  if (value.empty()) return required ? FieldError(field, "empty") : absl::OkStatus();
  if (value.size() > kMaxNameLength) {
    return FieldError(field, absl::StrCat("longer than ", kMaxNameLength, " characters"));
  }
  for (char c : value) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-' || c == ':';
    if (!ok) {
      return FieldError(field, absl::StrCat(Shown(value),
                                            " may only hold letters, digits and "
                                            "'.', '_', '-', ':'"));
    }
  }
  return absl::OkStatus();
}

// Values: printable ASCII without anything a shell (or a careless parser) gives meaning to.
// No workload parameter needs any of these.
absl::Status CheckValue(absl::string_view field, absl::string_view value) {
  if (value.size() > kMaxValueLength) {
    return FieldError(field, absl::StrCat("longer than ", kMaxValueLength, " characters"));
  }
  static constexpr absl::string_view kShell = "|&;<>()$`\\\"'*?[]{}#~!^";
  for (char c : value) {
    if (c < 0x20 || c >= 0x7f) {
      return FieldError(field, absl::StrCat(Shown(value), " holds a control or non-ASCII byte"));
    }
    if (kShell.find(c) != absl::string_view::npos) {
      return FieldError(field, absl::StrCat(Shown(value), " holds the shell metacharacter '",
                                            std::string(1, c), "'"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckCeiling(absl::string_view value) {
  if (value.empty() || value == "default") return absl::OkStatus();
  int64_t pages = 0;
  if (value.size() > 10 || !absl::SimpleAtoi(value, &pages) || pages < 0 || pages > 2147483647 ||
      value.find_first_not_of("0123456789") != absl::string_view::npos) {
    return FieldError("ceiling", absl::StrCat(Shown(value),
                                              " is not \"default\" or a page count in "
                                              "[0, 2147483647]"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Network> Network::Parse(absl::string_view text) {
  absl::string_view address = text;
  int prefix = -1;
  if (size_t slash = text.find('/'); slash != absl::string_view::npos) {
    address = text.substr(0, slash);
    if (!absl::SimpleAtoi(text.substr(slash + 1), &prefix) || prefix < 0) {
      return absl::InvalidArgumentError(absl::StrCat("\"", text, "\": bad prefix length"));
    }
  }
  Network n;
  const std::string a(address);
  if (::inet_pton(AF_INET, a.c_str(), n.bytes_) == 1) {
    n.family_ = AF_INET;
    if (prefix > 32) return absl::InvalidArgumentError(absl::StrCat("\"", text, "\": prefix > 32"));
    n.prefix_ = prefix < 0 ? 32 : prefix;
  } else if (::inet_pton(AF_INET6, a.c_str(), n.bytes_) == 1) {
    n.family_ = AF_INET6;
    if (prefix > 128) {
      return absl::InvalidArgumentError(absl::StrCat("\"", text, "\": prefix > 128"));
    }
    n.prefix_ = prefix < 0 ? 128 : prefix;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", text, "\" is not an IP address or ADDRESS/PREFIX network"));
  }
  return n;
}

bool Network::Contains(absl::string_view address) const {
  unsigned char other[16] = {};
  const std::string a(address);
  const int family = a.find(':') == std::string::npos ? AF_INET : AF_INET6;
  if (family != family_ || ::inet_pton(family, a.c_str(), other) != 1) return false;
  for (int bit = 0; bit < prefix_; ++bit) {
    const int mask = 0x80 >> (bit % 8);
    if ((bytes_[bit / 8] & mask) != (other[bit / 8] & mask)) return false;
  }
  return true;
}

std::string Network::ToString() const {
  char text[INET6_ADDRSTRLEN] = "?";
  ::inet_ntop(family_, bytes_, text, sizeof text);
  return absl::StrCat(text, "/", prefix_);
}

std::vector<Network> DefaultPeerNetworks() {
  std::vector<Network> out = {*Network::Parse("127.0.0.0/8"), *Network::Parse("::1/128")};
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return out;
  for (ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || i->ifa_netmask == nullptr) continue;
    const int family = i->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    const void* addr =
        family == AF_INET
            ? static_cast<const void*>(&reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr)
            : &reinterpret_cast<const sockaddr_in6*>(i->ifa_addr)->sin6_addr;
    const unsigned char* mask =
        family == AF_INET ? reinterpret_cast<const unsigned char*>(
                                &reinterpret_cast<const sockaddr_in*>(i->ifa_netmask)->sin_addr)
                          : reinterpret_cast<const unsigned char*>(
                                &reinterpret_cast<const sockaddr_in6*>(i->ifa_netmask)->sin6_addr);
    int prefix = 0;
    for (int b = 0; b < (family == AF_INET ? 4 : 16); ++b) prefix += __builtin_popcount(mask[b]);
    char text[INET6_ADDRSTRLEN];
    if (::inet_ntop(family, addr, text, sizeof text) == nullptr) continue;
    if (absl::StatusOr<Network> n = Network::Parse(absl::StrCat(text, "/", prefix)); n.ok()) {
      out.push_back(*n);
    }
  }
  ::freeifaddrs(list);
  return out;
}

absl::Status CheckAssignment(const v1::JobAssignment& a, const AssignmentPolicy& policy) {
  // Sizes first: nothing below walks a huge message.
  if (a.ByteSizeLong() > kMaxAssignmentBytes) {
    return FieldError("assignment",
                      absl::StrCat(a.ByteSizeLong(), " bytes, more than ", kMaxAssignmentBytes));
  }
  if (a.params_size() > kMaxParams) {
    return FieldError("params", absl::StrCat(a.params_size(), " entries, more than ", kMaxParams));
  }
  if (a.monitors_size() > kMaxMonitors) {
    return FieldError("monitors",
                      absl::StrCat(a.monitors_size(), " entries, more than ", kMaxMonitors));
  }
  if (!paths::ValidLeaseId(a.lease_id())) {
    return FieldError("lease_id", absl::StrCat(Shown(a.lease_id()), " is not a usable lease id"));
  }
  if (a.job_id() <= 0) return FieldError("job_id", absl::StrCat(a.job_id(), " is not positive"));
  for (const auto& [field, value, required] :
       std::vector<std::tuple<absl::string_view, absl::string_view, bool>>{
           {"run_id", a.run_id(), true},
           {"benchmark", a.benchmark(), true},
           {"arm", a.arm(), true},
           {"param_name", a.param_name(), false},
           {"peer_host", a.peer_host(), false}}) {
    if (absl::Status s = CheckName(field, value, required); !s.ok()) return s;
  }
  if (absl::Status s = CheckValue("param_value", a.param_value()); !s.ok()) return s;
  if (absl::Status s = CheckCeiling(a.ceiling()); !s.ok()) return s;
  if (a.timeout_seconds() == 0 || a.timeout_seconds() > kMaxTimeoutSeconds) {
    return FieldError("timeout_seconds", absl::StrCat(a.timeout_seconds(), " is not in [1, ",
                                                      kMaxTimeoutSeconds, "]"));
  }
  if (a.iteration() == 0 || a.iteration() > kMaxIteration) {
    return FieldError("iteration",
                      absl::StrCat(a.iteration(), " is not in [1, ", kMaxIteration, "]"));
  }
  if (a.boot_index() > kMaxBootIndex) {
    return FieldError("boot_index", absl::StrCat(a.boot_index(), " is above ", kMaxBootIndex));
  }
  for (const auto& [key, value] : a.params()) {
    if (absl::Status s = CheckName("params", key, true); !s.ok()) return s;
    if (absl::Status s = CheckValue(absl::StrCat("params.", key), value); !s.ok()) return s;
  }
  const std::vector<std::string> monitors = MonitorNames();
  for (const std::string& m : a.monitors()) {
    if (std::find(monitors.begin(), monitors.end(), m) == monitors.end()) {
      return FieldError("monitors", absl::StrCat(Shown(m), " is not one of this agent's (",
                                                 absl::StrJoin(monitors, ", "), ")"));
    }
  }
  // The workload: from the catalogue, with parameters its schema accepts.
  if (std::find(policy.workloads.begin(), policy.workloads.end(), a.benchmark()) ==
      policy.workloads.end()) {
    return FieldError("benchmark",
                      absl::StrCat("'", a.benchmark(), "' is not in this agent's catalogue (",
                                   absl::StrJoin(policy.workloads, ", "), ")"));
  }
  const workloads::Workload* workload = workloads::Registry::Get().Find(a.benchmark());
  if (workload == nullptr) {
    return FieldError("benchmark", absl::StrCat("'", a.benchmark(), "' has no implementation"));
  }
  std::map<std::string, std::string> given(a.params().begin(), a.params().end());
  absl::StatusOr<workloads::Params> params = workloads::ResolveParams(*workload, given);
  if (!params.ok()) return FieldError("params", params.status().message());
  // A parameter resolved to a peer may only point where the operator allows.
  for (const workloads::ParamSpec& spec : workload->Schema()) {
    if (!spec.resolves_to_peer.has_value()) continue;
    const std::string& target = params->Str(spec.name);
    absl::StatusOr<std::string> address = CanonicalAddress(target);
    if (!address.ok()) continue;  // the placeholder, unresolved: the workload says so
    const bool allowed = std::any_of(policy.peer_networks.begin(), policy.peer_networks.end(),
                                     [&](const Network& n) { return n.Contains(*address); });
    if (!allowed) {
      std::vector<std::string> nets;
      for (const Network& n : policy.peer_networks) nets.push_back(n.ToString());
      return FieldError(absl::StrCat("params.", spec.name),
                        absl::StrCat(*address,
                                     " is outside the networks this agent may test "
                                     "against (",
                                     absl::StrJoin(nets, ", "), "; see --peer-network)"));
    }
  }
  return absl::OkStatus();
}

}  // namespace tlbfleet::agent
