#include "agent/builder/kernel_sources.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/files.h"
#include "common/yaml_fields.h"

namespace tlbfleet::agent::builder {
namespace {

using yaml_fields::FieldError;

constexpr size_t kMaxNameLength = 64;
const char* const kArchitectures[] = {"x86_64"};  // those whose image path the build knows

// The map's keys in document order; a key given twice is an error (yaml-cpp keeps both).
absl::StatusOr<std::vector<std::pair<std::string, YAML::Node>>> Entries(const YAML::Node& node,
                                                                        const std::string& path) {
  if (!node.IsMap()) return FieldError(path, "expected a map");
  std::vector<std::pair<std::string, YAML::Node>> out;
  std::set<std::string> seen;
  for (const auto& kv : node) {
    absl::StatusOr<std::string> key = yaml_fields::ScalarText(kv.first, path);
    if (!key.ok()) return key.status();
    if (!seen.insert(*key).second) return FieldError(absl::StrCat(path, ".", *key), "given twice");
    out.emplace_back(*key, kv.second);
  }
  return out;
}

absl::Status CheckName(const std::string& name, const std::string& path) {
  if (ValidBuilderName(name)) return absl::OkStatus();
  return FieldError(path, absl::StrCat("name ", yaml_fields::Quote(name), " must be 1 to ",
                                       kMaxNameLength, " of [a-z0-9_-]"));
}

absl::StatusOr<std::string> AbsolutePath(const YAML::Node& node, const std::string& path) {
  absl::StatusOr<std::string> text = yaml_fields::ScalarText(node, path);
  if (!text.ok()) return text.status();
  if (text->empty() || (*text)[0] != '/') {
    return FieldError(path,
                      absl::StrCat("must be an absolute path, got ", yaml_fields::Quote(*text)));
  }
  // Normalised, so that "/w/" and "/w" are seen to be one directory.
  std::string normal = std::filesystem::path(*text).lexically_normal().string();
  if (normal.size() > 1 && normal.back() == '/') normal.pop_back();
  return normal;
}

absl::StatusOr<KernelSource> ParseSource(const std::string& name, const YAML::Node& node,
                                         const std::string& path) {
  KernelSource source;
  source.name = name;
  source.arch = "x86_64";
  absl::StatusOr<std::vector<std::pair<std::string, YAML::Node>>> fields = Entries(node, path);
  if (!fields.ok()) return fields.status();
  for (const auto& [key, value] : *fields) {
    const std::string field = absl::StrCat(path, ".", key);
    if (key == "repository" || key == "work_dir") {
      absl::StatusOr<std::string> dir = AbsolutePath(value, field);
      if (!dir.ok()) return dir.status();
      (key == "repository" ? source.repository : source.work_dir) = *dir;
    } else if (key == "remote" || key == "arch") {
      absl::StatusOr<std::string> text = yaml_fields::ScalarText(value, field);
      if (!text.ok()) return text.status();
      (key == "remote" ? source.remote : source.arch) = *text;
    } else {
      return yaml_fields::UnknownField(field, {"repository", "remote", "work_dir", "arch"});
    }
  }
  if (source.repository.empty()) return FieldError(path + ".repository", "value is missing");
  if (source.work_dir.empty()) return FieldError(path + ".work_dir", "value is missing");
  // A remote name becomes one argv word of `git fetch`: a leading '-' would be an option.
  const bool has_remote = std::any_of(fields->begin(), fields->end(),
                                      [](const auto& kv) { return kv.first == "remote"; });
  if (has_remote && (source.remote.empty() || source.remote[0] == '-' ||
                     source.remote.find_first_of(" \t\n:") != std::string::npos)) {
    return FieldError(path + ".remote",
                      absl::StrCat("not a git remote name: ", yaml_fields::Quote(source.remote)));
  }
  if (std::find(std::begin(kArchitectures), std::end(kArchitectures), source.arch) ==
      std::end(kArchitectures)) {
    return FieldError(path + ".arch",
                      absl::StrCat(yaml_fields::Quote(source.arch), " is not supported (one of: ",
                                   absl::StrJoin(kArchitectures, ", "), ")"));
  }
  return source;
}

absl::StatusOr<BuildConfig> ParseConfig(const std::string& name, const YAML::Node& node,
                                        const std::string& path) {
  BuildConfig config;
  config.name = name;
  absl::StatusOr<std::vector<std::pair<std::string, YAML::Node>>> fields = Entries(node, path);
  if (!fields.ok()) return fields.status();
  for (const auto& [key, value] : *fields) {
    const std::string field = absl::StrCat(path, ".", key);
    if (key == "base") {
      absl::StatusOr<std::string> base = yaml_fields::ScalarText(value, field);
      if (!base.ok()) return base.status();
      config.base = *base;
      if (!config.base_is_target()) {
        absl::StatusOr<std::string> file = AbsolutePath(value, field);
        if (!file.ok()) {
          return FieldError(field, absl::StrCat("expected defconfig, tinyconfig or an absolute "
                                                "path to a .config, got ",
                                                yaml_fields::Quote(*base)));
        }
        config.base = *file;
      }
    } else if (key == "fragments") {
      absl::StatusOr<std::vector<std::string>> list = yaml_fields::ScalarList(value, field);
      if (!list.ok()) return list.status();
      for (size_t i = 0; i < list->size(); ++i) {
        absl::StatusOr<std::string> file = AbsolutePath(value[i], absl::StrCat(field, "[", i, "]"));
        if (!file.ok()) return file.status();
        config.fragments.push_back(*file);
      }
    } else {
      return yaml_fields::UnknownField(field, {"base", "fragments"});
    }
  }
  if (config.base.empty()) return FieldError(path + ".base", "value is missing");
  return config;
}

absl::Status ParseRoot(const YAML::Node& root, std::vector<KernelSource>& sources,
                       std::vector<BuildConfig>& configs) {
  if (!root.IsDefined() || root.IsNull()) {
    return absl::InvalidArgumentError("empty; expected sources: and configs:");
  }
  absl::StatusOr<std::vector<std::pair<std::string, YAML::Node>>> top = Entries(root, "(top)");
  if (!top.ok()) return top.status();
  bool has_sources = false, has_configs = false;
  for (const auto& [key, value] : *top) {
    if (key != "sources" && key != "configs") {
      return yaml_fields::UnknownField(key, {"sources", "configs"});
    }
    absl::StatusOr<std::vector<std::pair<std::string, YAML::Node>>> named = Entries(value, key);
    if (!named.ok()) return named.status();
    if (named->empty()) return FieldError(key, "must name at least one");
    for (const auto& [name, node] : *named) {
      const std::string path = absl::StrCat(key, ".", name);
      if (absl::Status s = CheckName(name, path); !s.ok()) return s;
      if (key == "sources") {
        absl::StatusOr<KernelSource> source = ParseSource(name, node, path);
        if (!source.ok()) return source.status();
        sources.push_back(*std::move(source));
      } else {
        absl::StatusOr<BuildConfig> config = ParseConfig(name, node, path);
        if (!config.ok()) return config.status();
        configs.push_back(*std::move(config));
      }
    }
    (key == "sources" ? has_sources : has_configs) = true;
  }
  if (!has_sources) return FieldError("sources", "value is missing");
  if (!has_configs) return FieldError("configs", "value is missing");
  auto by_name = [](const auto& a, const auto& b) { return a.name < b.name; };
  std::sort(sources.begin(), sources.end(), by_name);
  std::sort(configs.begin(), configs.end(), by_name);
  for (size_t i = 0; i < sources.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (sources[i].work_dir == sources[j].work_dir) {
        return FieldError(absl::StrCat("sources.", sources[i].name, ".work_dir"),
                          absl::StrCat("is also the work_dir of source ", sources[j].name,
                                       ": their build trees would be one"));
      }
    }
  }
  return absl::OkStatus();
}

template <typename T>
absl::StatusOr<const T*> FindNamed(const std::vector<T>& list, absl::string_view name,
                                   absl::string_view field, absl::string_view what) {
  for (const T& item : list) {
    if (item.name == name) return &item;
  }
  std::vector<std::string> names;
  for (const T& item : list) names.push_back(item.name);
  return FieldError(
      field, absl::StrCat("unknown ", what, " ", yaml_fields::Quote(name), " (this agent has: ",
                          names.empty() ? "none" : absl::StrJoin(names, ", "), ")"));
}

}  // namespace

bool ValidBuilderName(absl::string_view name) {
  if (name.empty() || name.size() > kMaxNameLength) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
}

absl::StatusOr<KernelSources> KernelSources::Parse(absl::string_view yaml,
                                                   absl::string_view origin) {
  KernelSources out;
  absl::Status status;
  try {  // yaml-cpp throws on malformed input; nothing escapes this function
    status = ParseRoot(YAML::Load(std::string(yaml)), out.sources_, out.configs_);
  } catch (const YAML::Exception& e) {
    if (e.mark.is_null()) return absl::InvalidArgumentError(absl::StrCat(origin, ": ", e.msg));
    return absl::InvalidArgumentError(
        absl::StrCat(origin, ":", e.mark.line + 1, ":", e.mark.column + 1, ": ", e.msg));
  }
  if (!status.ok()) return absl::InvalidArgumentError(absl::StrCat(origin, ": ", status.message()));
  return out;
}

absl::StatusOr<KernelSources> KernelSources::Load(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--kernel-sources ", path, ": ", text.status().message()));
  }
  return Parse(*text, path);
}

absl::StatusOr<const KernelSource*> KernelSources::FindSource(absl::string_view name) const {
  return FindNamed(sources_, name, "source", "kernel source");
}

absl::StatusOr<const BuildConfig*> KernelSources::FindConfig(absl::string_view name) const {
  return FindNamed(configs_, name, "config", "build config");
}

BuilderInfo KernelSources::Describe() const {
  BuilderInfo info;
  for (const KernelSource& s : sources_) info.sources.push_back({s.name, s.arch});
  for (const BuildConfig& c : configs_) info.configs.push_back(c.name);
  return info;
}

}  // namespace tlbfleet::agent::builder
