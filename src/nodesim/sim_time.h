// Times as the kubelet writes them, and the durations the pod annotations
// hold.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace vkube::nodesim {

using TimePoint = std::chrono::system_clock::time_point;

// "2026-01-02T03:04:05Z" (metav1.Time).
std::string rfc3339(TimePoint t);
// "2026-01-02T03:04:05.123456Z" (metav1.MicroTime, a Lease's renewTime).
std::string rfc3339_micro(TimePoint t);
// Either form (any number of fractional digits, "Z" only); nullopt otherwise.
std::optional<TimePoint> parse_rfc3339(std::string_view s);

// A Go duration ("90s", "1m30s", "1.5s", "250ms", "2h") or plain seconds
// ("90", "0.5"). nullopt for anything else or a negative value.
std::optional<std::chrono::milliseconds> parse_duration(std::string_view s);

}  // namespace vkube::nodesim
