// How kube-apiserver words a request body it cannot read as the kind the URL
// names. Clients and test suites match these words (kubectl's own command
// tests grep "the object provided is unrecognized (must be of type Namespace)"
// after `kubectl create --raw`, which sends YAML labelled application/json).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace vkube::apiserver {

// The first syntax error Go's encoding/json reports for `data` (its
// checkValid scan, e.g. "invalid character 'a' looking for beginning of
// value", "unexpected end of JSON input"); nullopt when the text is valid
// JSON as Go reads it.
std::optional<std::string> go_json_syntax_error(std::string_view data);

// apiserver's summarizeData(body, 30): "<empty>", the text itself when it
// starts with '{', else hex; longer bodies are cut at 30 bytes plus " ...".
std::string summarize_body(std::string_view data, size_t max_length = 30);

// kube's transformDecodeError for a body whose apiVersion/kind cannot be
// read: "the object provided is unrecognized (must be of type <kind>):
// couldn't get version/kind; json parse error: <go error> (<summary>)".
// nullopt when `body` is syntactically valid JSON (the caller's own message
// then stands).
std::optional<std::string> unrecognized_body_message(std::string_view kind, std::string_view body);

}  // namespace vkube::apiserver
