// CronJob schedules as kube-apiserver parses them (robfig/cron v3's standard
// parser: five fields or an @descriptor).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace vkube::apiserver::builtin {

// nullopt when `schedule` parses; else the parser's error message, e.g.
// "expected exactly 5 fields, found 3: [* * *]".
std::optional<std::string> cron_schedule_error(std::string_view schedule);

}  // namespace vkube::apiserver::builtin
