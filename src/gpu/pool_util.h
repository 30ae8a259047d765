// What the pool readers (flags, YAML, trace) share: parsing the sharing
// mode, placing a MIG layout, and checking a finished spec.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "vkube/common/status.h"
#include "vkube/gpu/node_spec.h"

namespace vkube::gpu {

// "exclusive", "fraction" or "time-slicing".
Result<Sharing> parse_sharing(std::string_view text);

// Splits "3g.40gb,2g.20gb" (spaces allowed) into its profiles.
std::vector<std::string> split_list(std::string_view text);

// Puts `layout` on each GPU of `gpus` (indices into spec.gpus). kInvalid for
// an index out of range or given twice, or a layout the model cannot hold.
Status set_mig(NodeSpec& spec, const std::vector<int>& gpus,
               const std::vector<std::string>& layout);

// kInvalid for a spec no node could have: a bad name, no CPU or memory,
// a GPU count out of range, replicas below 1, bad extra labels.
Status check_spec(const NodeSpec& spec);

// kInvalid naming the repeated node name, when two specs share one.
Status check_unique(const std::vector<NodeSpec>& specs);

}  // namespace vkube::gpu
