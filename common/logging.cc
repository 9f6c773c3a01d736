#include "common/logging.h"

#include <string>

#include "spdlog/sinks/stdout_sinks.h"
#include "spdlog/spdlog.h"

namespace tlbfleet {

void InitLogging(std::string_view program, std::string_view level) {
  auto logger = spdlog::stderr_logger_mt(std::string(program));
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %L %n: %v", spdlog::pattern_time_type::utc);
  spdlog::level::level_enum parsed = spdlog::level::from_str(std::string(level));
  if (parsed == spdlog::level::off && level != "off") parsed = spdlog::level::info;
  logger->set_level(parsed);
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
}

}  // namespace tlbfleet
