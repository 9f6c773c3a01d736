// TLS on both listeners and mutual TLS for agents, with certificates made by the openssl
// command for each test; and the start refused (exit 2, nothing listening, no database made)
// for TLS files that are missing or do not match, a bare listener beyond loopback, and an
// address in use.

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>

#include "tests/integration/harness.h"
#include "tests/integration/http_client.h"

namespace tlbfleet::testing {
namespace {

using namespace std::chrono_literals;

class TlsIntegrationTest : public ::testing::Test {
 protected:
  std::string P(const std::string& name) const { return dir_.path() + "/" + name; }

  void Openssl(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"/usr/bin/openssl"};
    argv.insert(argv.end(), args.begin(), args.end());
    std::string out;
    ASSERT_EQ(RunCommand(argv, &out, true), 0) << out;
  }
  // A CA `name`.pem/.key.
  void MakeCa(const std::string& name) {
    Openssl({"req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
             "-keyout", P(name + ".key"), "-out", P(name + ".pem"), "-days", "2", "-subj",
             "/CN=" + name});
  }
  // A certificate `name`.pem/.key signed by `ca`, with extensions `ext`.
  void MakeCert(const std::string& name, const std::string& ca, const std::string& ext) {
    std::ofstream(P(name + ".ext")) << ext << "\n";
    Openssl({"req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
             "-keyout", P(name + ".key"), "-out", P(name + ".csr"), "-subj", "/CN=" + name});
    Openssl({"x509", "-req", "-in", P(name + ".csr"), "-CA", P(ca + ".pem"), "-CAkey",
             P(ca + ".key"), "-CAcreateserial", "-out", P(name + ".pem"), "-days", "2", "-extfile",
             P(name + ".ext")});
  }
  void MakeAll() {
    MakeCa("ca");
    MakeCa("rogue-ca");
    MakeCert("controller", "ca", "subjectAltName=IP:127.0.0.1,DNS:localhost");
    MakeCert("agent", "ca", "extendedKeyUsage=clientAuth");
    MakeCert("rogue-agent", "rogue-ca", "extendedKeyUsage=clientAuth");
  }
  std::vector<std::string> TlsArgs() {
    return {"--tls-cert",        P("controller.pem"), "--tls-key",
            P("controller.key"), "--tls-client-ca",   P("ca.pem")};
  }
  std::string Token(const std::string& role, const std::string& name) {
    std::string out;
    EXPECT_EQ(RunCommand({BinPath("tlbfleet-controller"), "token", "create", "--db", P("fleet.db"),
                          "--role", role, "--name", name},
                         &out),
              0);
    out.pop_back();
    std::string token = out.substr(out.rfind('\n') + 1);
    std::ofstream(P(name + ".token")) << token << "\n";
    std::filesystem::permissions(P(name + ".token"), std::filesystem::perms::owner_read);
    return token;
  }
  // Runs the controller with `args` to its end; returns its exit code and output.
  int StartFails(const std::vector<std::string>& args, std::string* out) {
    std::vector<std::string> argv = {BinPath("tlbfleet-controller"), "--db", P("refused.db")};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv, out, true);
  }

  TempDir dir_;
};

TEST_F(TlsIntegrationTest, BothListenersSpeakTlsAndAgentsNeedAClientCertificate) {
  MakeAll();
  const std::string viewer = Token("viewer", "viewer");
  Token("agent", "agent");
  ControllerProcess controller(dir_.path(), TlsArgs());
  ASSERT_GT(controller.http_port(), 0) << controller.process().Log();
  const int http = controller.http_port();

  HttpResult health = HttpsCall(http, P("ca.pem"), "GET", "/healthz");
  EXPECT_EQ(health.status, 200) << health.body;
  HttpResult runs =
      HttpsCall(http, P("ca.pem"), "GET", "/api/v1/runs", {{"Authorization", "Bearer " + viewer}});
  EXPECT_EQ(runs.status, 200) << runs.body;
  // Plain HTTP gets nothing; a client that does not trust our CA refuses the server.
  EXPECT_EQ(HttpCall(http, "GET", "/healthz").status, 0);
  EXPECT_EQ(HttpsCall(http, P("rogue-ca.pem"), "GET", "/healthz").status, 0);
  // Session cookies are Secure under TLS.
  HttpResult login =
      HttpsCall(http, P("ca.pem"), "POST", "/api/v1/login", {{"Content-Type", "application/json"}},
                R"({"token": ")" + viewer + R"("})");
  ASSERT_EQ(login.status, 200) << login.body;
  EXPECT_NE(login.Header("set-cookie").find("; Secure"), std::string::npos);

  // The CLI over TLS; without the CA it cannot connect.
  const std::vector<std::string> cli = {BinPath("tlbfleet"), "--controller", controller.address(),
                                        "--token-file", P("viewer.token")};
  std::string out;
  std::vector<std::string> with_ca = cli;
  with_ca.insert(with_ca.end(), {"--tls-ca", P("ca.pem"), "hosts"});
  EXPECT_EQ(RunCommand(with_ca, &out, true), 0) << out;
  std::vector<std::string> without = cli;
  without.insert(without.end(), {"--timeout-connect", "2", "hosts"});
  EXPECT_NE(RunCommand(without, &out, true), 0) << out;

  auto agent = [&](const std::string& name, const std::vector<std::string>& tls) {
    std::vector<std::string> argv = {BinPath("tlbfleet-agent"),
                                     "--controller",
                                     controller.address(),
                                     "--state-dir",
                                     P("state-" + name),
                                     "--token-file",
                                     P("agent.token"),
                                     "--tls-ca",
                                     P("ca.pem"),
                                     "--max-backoff-seconds",
                                     "1"};
    argv.insert(argv.end(), tls.begin(), tls.end());
    return std::make_unique<Process>(argv, P(name + ".log"));
  };
  // A certificate from another CA fails the handshake; no certificate fails the stream.
  auto rogue =
      agent("rogue", {"--tls-cert", P("rogue-agent.pem"), "--tls-key", P("rogue-agent.key")});
  auto bare = agent("bare", {});
  ASSERT_TRUE(WaitFor(
      [&] {
        return controller.process().Log().find("needs a client certificate") != std::string::npos;
      },
      30s))
      << controller.process().Log();
  ASSERT_TRUE(
      WaitFor([&] { return rogue->Log().find("cannot connect") != std::string::npos; }, 30s))
      << rogue->Log();
  auto good = agent("good", {"--tls-cert", P("agent.pem"), "--tls-key", P("agent.key")});

  grpc::SslCredentialsOptions ssl;
  std::ifstream ca_in(P("ca.pem"));
  ssl.pem_root_certs.assign(std::istreambuf_iterator<char>(ca_in), {});
  auto stub = v1::FleetService::NewStub(
      grpc::CreateChannel(controller.address(), grpc::SslCredentials(ssl)));
  auto hosts = [&] {
    grpc::ClientContext ctx;
    ctx.AddMetadata("authorization", "Bearer " + viewer);
    ctx.set_deadline(std::chrono::system_clock::now() + 5s);
    v1::ListHostsResponse response;
    if (!stub->ListHosts(&ctx, v1::ListHostsRequest(), &response).ok()) return -1;
    return response.hosts_size();
  };
  ASSERT_TRUE(WaitFor([&] { return hosts() == 1; }, 30s))
      << controller.process().Log() << good->Log();
  EXPECT_EQ(QueryInt(controller.db_path(), "SELECT COUNT(*) FROM hosts"), 1);
}

TEST_F(TlsIntegrationTest, ConfigurationMistakesStopTheStartWithExit2) {
  MakeAll();
  struct Case {
    std::vector<std::string> args;
    std::string says;
  } cases[] = {
      {{"--tls-cert", P("missing.pem"), "--tls-key", P("controller.key")}, "--tls-cert"},
      {{"--tls-cert", P("controller.pem"), "--tls-key", P("agent.key")}, "does not match"},
      {{"--tls-cert", P("controller.pem")}, "--tls-key: needed with --tls-cert"},
      {{"--tls-cert", P("controller.pem"), "--tls-key", P("controller.key"), "--tls-client-ca",
        P("controller.ext")},
       "--tls-client-ca"},
      {{"--tls-client-ca", P("ca.pem")}, "--tls-client-ca: needs --tls-cert"},
      {{"--grpc-listen", "0.0.0.0:0", "--http-listen", "127.0.0.1:0"}, "--insecure-no-tls"},
      {{"--http-listen", "127.0.0.1:99999"}, "--http-listen"},
      {{"--session-hours", "0"}, "--session-hours"},
  };
  for (const Case& c : cases) {
    std::string out;
    EXPECT_EQ(StartFails(c.args, &out), 2) << out;
    EXPECT_NE(out.find(c.says), std::string::npos) << out;
  }
  // Nothing was started: not even the database file was made.
  EXPECT_FALSE(std::filesystem::exists(P("refused.db")));

  // An address in use: the second controller stops at once, leaving nothing listening.
  ControllerProcess first(dir_.path());
  ASSERT_GT(first.http_port(), 0);
  std::string out;
  EXPECT_EQ(StartFails({"--grpc-listen", "127.0.0.1:0", "--http-listen",
                        "127.0.0.1:" + std::to_string(first.http_port())},
                       &out),
            2);
  EXPECT_NE(out.find("--http-listen"), std::string::npos) << out;
  EXPECT_NE(out.find("in use"), std::string::npos) << out;
}

}  // namespace
}  // namespace tlbfleet::testing
