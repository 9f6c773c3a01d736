#include "agent/builder/kernel_sources.h"

#include <fstream>

#include "common/temp_dir_for_test.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tlbfleet::agent::builder {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kExample[] = R"(
sources:
  linux:
    repository: /var/lib/tlbfleet-agent/src/linux
    remote: origin
    work_dir: /var/cache/tlbfleet-agent/build/linux/
    arch: x86_64
  stable:
    repository: /srv/stable
    work_dir: /var/cache/tlbfleet-agent/build/stable
configs:
  lab:
    base: defconfig
    fragments: [/etc/tlbfleet/lab.config, /etc/tlbfleet/debug.config]
  tiny:
    base: tinyconfig
  mine:
    base: /etc/tlbfleet/my.config
)";

TEST(KernelSourcesTest, ParsesTheDocumentedExample) {
  absl::StatusOr<KernelSources> parsed = KernelSources::Parse(kExample, "sources.yaml");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_EQ(parsed->sources().size(), 2u);
  const KernelSource& linux_source = *parsed->FindSource("linux").value();
  EXPECT_EQ(linux_source.repository, "/var/lib/tlbfleet-agent/src/linux");
  EXPECT_EQ(linux_source.remote, "origin");
  EXPECT_EQ(linux_source.work_dir, "/var/cache/tlbfleet-agent/build/linux");  // normalised
  EXPECT_EQ(linux_source.arch, "x86_64");
  const KernelSource& stable = *parsed->FindSource("stable").value();
  EXPECT_EQ(stable.remote, "");      // never fetched
  EXPECT_EQ(stable.arch, "x86_64");  // the default

  const BuildConfig& lab = *parsed->FindConfig("lab").value();
  EXPECT_EQ(lab.base, "defconfig");
  EXPECT_TRUE(lab.base_is_target());
  EXPECT_THAT(lab.fragments, ElementsAre("/etc/tlbfleet/lab.config", "/etc/tlbfleet/debug.config"));
  const BuildConfig& mine = *parsed->FindConfig("mine").value();
  EXPECT_FALSE(mine.base_is_target());
  EXPECT_TRUE(mine.fragments.empty());

  BuilderInfo info = parsed->Describe();  // names and arches only, sorted
  ASSERT_EQ(info.sources.size(), 2u);
  EXPECT_EQ(info.sources[0].name, "linux");
  EXPECT_EQ(info.sources[0].arch, "x86_64");
  EXPECT_EQ(info.sources[1].name, "stable");
  EXPECT_THAT(info.configs, ElementsAre("lab", "mine", "tiny"));
}

TEST(KernelSourcesTest, UnknownNamesAreRefusedNamingTheField) {
  KernelSources sources = KernelSources::Parse(kExample, "s.yaml").value();
  absl::StatusOr<const KernelSource*> source = sources.FindSource("mainline");
  EXPECT_EQ(source.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(source.status().message(),
            "source: unknown kernel source \"mainline\" (this agent has: linux, stable)");
  EXPECT_THAT(sources.FindConfig("big").status().message(),
              HasSubstr("config: unknown build config \"big\" (this agent has: lab, mine, tiny)"));
  EXPECT_THAT(KernelSources().FindSource("linux").status().message(),
              HasSubstr("(this agent has: none)"));
}

struct BadCase {
  std::string yaml;
  std::string error;
};

TEST(KernelSourcesTest, MistakesNameTheField) {
  const std::string source = "sources: {linux: {repository: /r, work_dir: /w}}\n";
  const std::string config = "configs: {lab: {base: defconfig}}\n";
  const BadCase cases[] = {
      {"", "f.yaml: empty; expected sources: and configs:"},
      {"[1, 2]", "f.yaml: (top): expected a map"},
      {"sources: {linux: {repository: /r, work_dir: /w}}\n", "f.yaml: configs: value is missing"},
      {"sources: {}\nconfigs: {lab: {base: defconfig}}", "f.yaml: sources: must name at least one"},
      {"{sources: {linux: {repository: /r, work_dir: /w}}, configs: {lab: {base: defconfig}}, x: "
       "1}",
       "f.yaml: x: unknown field (expected one of: sources, configs)"},
      {"sources: {Linux: {repository: /r, work_dir: /w}}\n"
       "configs: {lab: {base: defconfig}}",
       "f.yaml: sources.Linux: name \"Linux\" must be 1 to 64 of [a-z0-9_-]"},
      {"sources: {linux: {work_dir: /w}}\n"
       "configs: {lab: {base: defconfig}}",
       "f.yaml: sources.linux.repository: value is missing"},
      {"sources: {linux: {repository: src/linux, work_dir: /w}}\n"
       "configs: {lab: {base: defconfig}}",
       "f.yaml: sources.linux.repository: must be an absolute path, got \"src/linux\""},
      {"sources: {linux: {repository: /r}}\n"
       "configs: {lab: {base: defconfig}}",
       "f.yaml: sources.linux.work_dir: value is missing"},
      {"sources: {linux: {repository: /r, work_dir: /w, remote: --upload-pack=x}}\n" + config,
       "f.yaml: sources.linux.remote: not a git remote name: \"--upload-pack=x\""},
      {"sources: {linux: {repository: /r, work_dir: /w, arch: arm64}}\n" + config,
       "f.yaml: sources.linux.arch: \"arm64\" is not supported (one of: x86_64)"},
      {"sources: {linux: {repository: /r, work_dir: /w, branch: main}}\n" + config,
       "f.yaml: sources.linux.branch: unknown field (expected one of: repository, remote, "
       "work_dir, arch)"},
      {"sources: {a: {repository: /r, work_dir: /w}, b: {repository: /s, work_dir: /w/}}\n" +
           config,
       "f.yaml: sources.b.work_dir: is also the work_dir of source a: their build trees would "
       "be one"},
      {source + "configs: {lab: {fragments: [/f]}}", "f.yaml: configs.lab.base: value is missing"},
      {source + "configs: {lab: {base: allyesconfig}}",
       "f.yaml: configs.lab.base: expected defconfig, tinyconfig or an absolute path to a "
       ".config, got \"allyesconfig\""},
      {source + "configs: {lab: {base: defconfig, fragments: [/a, b.config]}}",
       "f.yaml: configs.lab.fragments[1]: must be an absolute path, got \"b.config\""},
      {source + "configs: {lab: {base: defconfig, fragments: /a}}",
       "f.yaml: configs.lab.fragments: expected a list"},
      {source + "configs: {lab: {base: defconfig}, lab: {base: tinyconfig}}",
       "f.yaml: configs.lab: given twice"},
      {source + "configs: {lab: {base: defconfig}\n", "f.yaml:"},  // malformed: line and column
  };
  for (const BadCase& c : cases) {
    absl::StatusOr<KernelSources> parsed = KernelSources::Parse(c.yaml, "f.yaml");
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << c.yaml;
    EXPECT_THAT(parsed.status().message(), HasSubstr(c.error)) << c.yaml;
  }
}

TEST(KernelSourcesTest, LoadNamesTheFlagAndTheFile) {
  TempDir dir;
  absl::StatusOr<KernelSources> missing = KernelSources::Load(dir.File("none.yaml"));
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(missing.status().message(), HasSubstr("--kernel-sources " + dir.File("none.yaml")));

  std::ofstream(dir.File("s.yaml")) << kExample;
  absl::StatusOr<KernelSources> loaded = KernelSources::Load(dir.File("s.yaml"));
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_FALSE(loaded->empty());
}

TEST(KernelSourcesTest, Names) {
  EXPECT_TRUE(ValidBuilderName("linux-6_1"));
  EXPECT_FALSE(ValidBuilderName(""));
  EXPECT_FALSE(ValidBuilderName("Linux"));
  EXPECT_FALSE(ValidBuilderName("a.b"));
  EXPECT_FALSE(ValidBuilderName("a/b"));
  EXPECT_FALSE(ValidBuilderName(std::string(65, 'a')));
}

}  // namespace
}  // namespace tlbfleet::agent::builder
