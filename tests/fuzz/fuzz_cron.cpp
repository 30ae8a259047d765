// CronJob schedules (spec.schedule, with a CRON_TZ=/TZ= prefix) and time
// zones (spec.timeZone) as the API server validates them and the controller
// runs them: parse, the validation message, and the next activations, which
// must move forward in time.
#include <chrono>
#include <string>

#include "cron.h"
#include "fuzz_util.h"

namespace builtin = vkube::apiserver::builtin;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto [schedule, zone_name] = vkube::fuzz::split2(vkube::fuzz::as_text(data, size));
  std::optional<std::string> invalid = builtin::cron_schedule_error(schedule);
  // spec.timeZone: a zone of the tz database picked by the second input's
  // first byte (TimeZone::find caches every name it is asked, so the fuzzer
  // does not feed it names of its own), and the second input itself when it
  // is a name find() must refuse without reading a file.
  static const char* kZones[] = {"",
                                 "UTC",
                                 "America/New_York",
                                 "Europe/London",
                                 "Australia/Lord_Howe",
                                 "Asia/Kolkata",
                                 "Pacific/Chatham"};
  const builtin::TimeZone* zone = nullptr;
  if (!zone_name.empty()) {
    zone = builtin::TimeZone::find(kZones[static_cast<uint8_t>(zone_name[0]) % 7]);
    if (zone_name.find("..") != std::string_view::npos || zone_name[0] == '/')
      FUZZ_CHECK(builtin::TimeZone::find(zone_name) == nullptr);
  }
  std::string error;
  auto parsed = builtin::parse_cron_schedule(schedule, zone, &error);
  if (!parsed) {
    FUZZ_CHECK(!error.empty());
    return 0;
  }
  using namespace std::chrono;
  system_clock::time_point t = system_clock::from_time_t(1700000000);
  for (int i = 0; i < 4; ++i) {
    auto next = builtin::cron_next(*parsed, t);
    if (!next) break;
    FUZZ_CHECK(*next > t);
    if (parsed->zone != nullptr) (void)builtin::format_rfc3339_in(*next, *parsed->zone);
    t = *next;
  }
  (void)invalid;
  return 0;
}
