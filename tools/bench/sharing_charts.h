// bench_sharing's charts (self-contained SVG, no scripts) and the small
// helpers the report and the charts share. Private to the sharing library.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "sharing_model.h"

namespace vkube::bench::sharing {

// Team k's colour, the same in every chart (a colour-blind-safe palette).
const char* team_colour(size_t k);

// v[k], or 0 where the vector is short (a run that recorded fewer teams).
double at_or_zero(const std::vector<double>& v, size_t k);

// The sample's capacity from /metrics, or the plan's when it was not read.
int64_t sample_capacity(const Sample& s, const Plan& plan);

// Per-team allocated GPUs stacked over replay time, with the capacity and
// total demand lines and the deserved shares (dashed, stacked in the same
// order, so team k's band lies under its line when each team holds its own).
std::string allocation_svg(const Plan& plan, const RunResult& run, const Summary& summary);

// Grouped bars per configuration: mean allocation, allocation while demand
// exceeds supply, and each team's p95 wait.
std::string comparison_svg(const Plan& plan, const std::vector<Summary>& summaries);

}  // namespace vkube::bench::sharing
