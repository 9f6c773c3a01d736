#include "common/config/yaml_config.h"

#include <yaml-cpp/yaml.h>

#include <istream>
#include <memory>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tlbfleet {

namespace {

class YamlConfig final : public CLI::Config {
 public:
  // `app` outlives this formatter (the app owns it).
  explicit YamlConfig(const CLI::App* app) : app_(app) {}

  std::string to_config(const CLI::App*, bool, bool, std::string) const override { return ""; }

  std::vector<CLI::ConfigItem> from_config(std::istream& input) const override {
    const std::string file = FileName();
    YAML::Node root;
    try {
      root = YAML::Load(input);
    } catch (const YAML::Exception& e) {
      throw CLI::ConfigError(absl::StrCat(file, ": not valid YAML: ", e.what()));
    }
    std::vector<CLI::ConfigItem> items;
    if (root.IsNull()) return items;  // an empty file sets nothing
    if (!root.IsMap()) throw CLI::ConfigError(absl::StrCat(file, ": want a map of flag: value"));
    const std::set<std::string> keys = Keys();
    for (const auto& entry : root) {
      const std::string key = entry.first.as<std::string>();
      if (keys.count(key) == 0) {
        throw CLI::ConfigError(absl::StrCat(file, ": unknown key '", key,
                                            "' (keys: ", absl::StrJoin(keys, ", "), ")"));
      }
      CLI::ConfigItem item;
      item.name = key;
      const YAML::Node& value = entry.second;
      if (value.IsScalar()) {
        item.inputs.push_back(value.as<std::string>());
      } else if (value.IsSequence()) {
        for (const auto& element : value) {
          if (!element.IsScalar()) {
            throw CLI::ConfigError(absl::StrCat(file, ": key '", key, "': want a list of values"));
          }
          item.inputs.push_back(element.as<std::string>());
        }
      } else if (value.IsNull()) {
        throw CLI::ConfigError(absl::StrCat(file, ": key '", key, "' has no value"));
      } else {
        throw CLI::ConfigError(
            absl::StrCat(file, ": key '", key, "': want a value or a list, not a map"));
      }
      items.push_back(std::move(item));
    }
    return items;
  }

 private:
  std::string FileName() const {
    const CLI::Option* config = app_->get_config_ptr();
    return config != nullptr && config->count() > 0 ? config->as<std::string>() : "config file";
  }
  // Every long flag of the app but the ones a file cannot sensibly set.
  std::set<std::string> Keys() const {
    std::set<std::string> keys;
    for (const CLI::Option* option : app_->get_options()) {
      for (const std::string& name : option->get_lnames()) {
        if (name != "config" && name != "help" && name != "version") keys.insert(name);
      }
    }
    return keys;
  }

  const CLI::App* app_;
};

}  // namespace

void AddYamlConfig(CLI::App& app, const std::string& help) {
  app.set_config("--config", "", help);
  app.config_formatter(std::make_shared<YamlConfig>(&app));
}

}  // namespace tlbfleet
