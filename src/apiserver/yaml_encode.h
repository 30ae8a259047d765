// JSON documents as kube's YAML encoder writes them (Accept:
// application/yaml), and Go's float formatting, which its messages share.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace vkube::apiserver {

// `v` as kube's YAML encoder (sigs.k8s.io/yaml over go-yaml v2) writes it:
// keys in go-yaml's order, strings quoted where plain text would read as
// another type, 80-column folding, literal blocks for multi-line strings.
std::string json_to_yaml(const nlohmann::json& v);

// strconv.FormatFloat(f, 'g', -1, 64), as Go prints a float64 (go-yaml, %v).
std::string format_go_float(double f);

}  // namespace vkube::apiserver
