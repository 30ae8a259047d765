// The type registry: every built-in kind described once, as the protobuf
// messages under src/schema/proto (the Kubernetes wire contract plus the
// vkube/options.proto annotations), compiled by protoc into a descriptor set
// that is embedded in the binary and indexed here on first use.
//
// Everything that needs to know the shape of a built-in type derives it from
// this one description: protobuf decoding and encoding (protobuf.h), OpenAPI
// schemas, strict field validation and strategic-merge patch.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace vkube::schema {

// The scalar kinds a field can have (the proto types Kubernetes uses).
enum class Type { kString, kBytes, kBool, kInt32, kInt64, kUint32, kUint64, kDouble, kFloat, kMessage };

// How a message is written in JSON (options.proto json_format).
enum class JsonFormat {
  kObject,  // a plain JSON object with one key per field
  kQuantity,
  kIntOrString,
  kTime,
  kMicroTime,
  kDuration,
  kRawExtension,
  kFieldsV1,
  kJson,
  kStringList,
  kSchemaOrArray,
  kSchemaOrBool,
  kSchemaOrStringArray,
};

struct Message;

struct Field {
  std::string name;       // proto field name
  std::string json_name;  // JSON key
  int number = 0;
  Type type = Type::kString;
  bool repeated = false;
  bool nullable = false;  // a Go pointer: zero values on the wire are kept
  bool required = false;
  const Message* message = nullptr;  // kMessage: the field's message type
  // map<K, V>: is_map, with the value's type in map_value / message.
  bool is_map = false;
  Type map_value = Type::kString;
  std::string patch_strategy;  // "merge", "retainKeys", "merge,retainKeys", ...
  std::string patch_merge_key;
  std::string list_type;  // atomic | set | map
  std::vector<std::string> list_map_keys;
  std::string map_type;  // atomic
  std::string format;    // OpenAPI format override
  // Embedded with `json:",inline"`: a nested message on the wire whose
  // fields are the parent's in JSON.
  bool inline_ = false;

  // The field's value type is the message (not a map or a scalar).
  bool is_message() const { return type == Type::kMessage && !is_map; }
};

struct Message {
  std::string full_name;  // "k8s.io.api.core.v1.Pod"
  std::string name;       // "Pod"
  std::string package;    // "k8s.io.api.core.v1"
  JsonFormat json_format = JsonFormat::kObject;
  std::string kind;  // a served kind (options.proto kind), or ""
  std::string group, version;  // of the file it was declared in
  std::vector<Field> fields;   // in declaration order
  std::map<std::string, const Field*, std::less<>> by_json;
  std::map<int, const Field*> by_number;
  std::vector<const Field*> inlined;  // the inline fields, whose keys are ours in JSON

  // The field with this JSON key, looking through inlined messages.
  const Field* field(std::string_view json_name) const {
    auto it = by_json.find(json_name);
    if (it != by_json.end()) return it->second;
    for (const Field* f : inlined)
      if (const Field* inner = f->message->field(json_name)) return inner;
    return nullptr;
  }
  const Field* field_number(int n) const {
    auto it = by_number.find(n);
    return it == by_number.end() ? nullptr : it->second;
  }
  // The OpenAPI component name: "io.k8s.api.core.v1.Pod".
  std::string openapi_name() const;
};

class Registry {
 public:
  // The registry of the embedded descriptor set, built on first use
  // (thread-safe; a few milliseconds, so the server builds it lazily).
  static const Registry& get();

  // The message of a served kind: ("apps", "v1", "Deployment"). Also
  // finds "<Kind>List" and the meta/v1 option kinds (DeleteOptions, ...)
  // in any group-version.
  const Message* find_kind(std::string_view group, std::string_view version,
                           std::string_view kind) const;
  const Message* find(std::string_view full_name) const;
  // All messages marked as served kinds.
  const std::vector<const Message*>& kinds() const { return kinds_; }
  const std::map<std::string, Message, std::less<>>& messages() const { return messages_; }

  Registry() = default;
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // Builds a registry from a serialized FileDescriptorSet (tests use it
  // with their own descriptors). Throws std::runtime_error when invalid.
  void load(std::string_view descriptor_set);

 private:
  std::map<std::string, Message, std::less<>> messages_;
  std::map<std::string, const Message*, std::less<>> by_gvk_;  // "group/version/Kind"
  std::vector<const Message*> kinds_;
};

}  // namespace vkube::schema
