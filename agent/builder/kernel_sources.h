#pragma once
// The kernel sources and build configs an agent may build: its own configuration, never the
// controller's. The controller only ever names a source, a revision and a config; the paths,
// remotes and config files below are the agent's, and nothing the controller sends is run.
//
// The file (a future `tlbfleet-agent --kernel-sources FILE`):
//
//   sources:
//     linux:                                            # a name: [a-z0-9_-]+
//       repository: /var/lib/tlbfleet-agent/src/linux   # a git repository on this host
//       remote: origin                                  # optional: `git fetch` may use it
//       work_dir: /var/cache/tlbfleet-agent/build/linux # build trees, one per config
//       arch: x86_64                                    # optional; x86_64 (the default) only
//   configs:
//     lab:
//       base: defconfig                # defconfig | tinyconfig | an absolute path to a .config
//       fragments: [/etc/tlbfleet/lab.config]   # optional: appended in order, then
//                                               # `make olddefconfig` (the last value wins)
//
// Every config can be built from every source. Paths must be absolute; two sources may not
// share a work_dir (their build trees, <work_dir>/<config>, would be one).

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tlbfleet::agent::builder {

struct KernelSource {
  std::string name;
  std::string repository;
  std::string remote;  // "" = never fetched
  std::string work_dir;
  std::string arch;  // "x86_64"
};

struct BuildConfig {
  std::string name;
  std::string base;  // "defconfig", "tinyconfig" or an absolute path
  std::vector<std::string> fragments;

  // Whether `base` is a make target (defconfig, tinyconfig) rather than a file to copy.
  bool base_is_target() const { return base == "defconfig" || base == "tinyconfig"; }
};

// What the agent advertises as a builder (HostInfo, once the protocol has the field): names and
// architectures only, never paths.
struct BuilderInfo {
  struct Source {
    std::string name;
    std::string arch;
  };
  std::vector<Source> sources;       // by name
  std::vector<std::string> configs;  // by name
};

class KernelSources {
 public:
  KernelSources() = default;  // no sources: not a builder

  // Parses the file's text; `origin` (the file name) starts every error:
  // INVALID_ARGUMENT "<origin>: sources.linux.work_dir: value is missing", or
  // "<origin>:<line>:<col>: ..." for malformed YAML.
  static absl::StatusOr<KernelSources> Parse(absl::string_view yaml, absl::string_view origin);
  // Reads and parses `path`; an unreadable file is INVALID_ARGUMENT "--kernel-sources PATH: ...".
  static absl::StatusOr<KernelSources> Load(const std::string& path);

  bool empty() const { return sources_.empty(); }
  const std::vector<KernelSource>& sources() const { return sources_; }
  const std::vector<BuildConfig>& configs() const { return configs_; }

  // INVALID_ARGUMENT "source: unknown kernel source \"x\" (this agent has: linux)", naming
  // the field as a request would.
  absl::StatusOr<const KernelSource*> FindSource(absl::string_view name) const;
  absl::StatusOr<const BuildConfig*> FindConfig(absl::string_view name) const;

  BuilderInfo Describe() const;

 private:
  std::vector<KernelSource> sources_;  // by name
  std::vector<BuildConfig> configs_;   // by name
};

// [a-z0-9_-]{1,64}: a source or config name, safe in a path and a URL.
bool ValidBuilderName(absl::string_view name);

}  // namespace tlbfleet::agent::builder
