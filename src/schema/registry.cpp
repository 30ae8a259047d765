// Indexes the embedded FileDescriptorSet (built by protoc from
// src/schema/proto) into schema::Message / schema::Field. The vkube options
// are read from the options' unknown fields, so no generated code for
// options.proto is needed.
#include <mutex>
#include <stdexcept>

#include "vkube/schema/schema.h"
#include "wire.h"

extern "C" {
extern const char vkube_schema_descriptors[];
extern const char vkube_schema_descriptors_end[];
}

namespace vkube::schema {

namespace {

// Option field numbers (src/schema/proto/vkube/options.proto).
constexpr uint32_t kNullable = 51001, kJsonName = 51002, kPatchStrategy = 51003,
                   kPatchMergeKey = 51004, kListType = 51005, kListMapKeys = 51006,
                   kMapType = 51007, kRequired = 51008, kFormat = 51009, kInline = 51010;
constexpr uint32_t kJsonFormat = 51101, kKind = 51102;
constexpr uint32_t kGroup = 51201, kVersion = 51202;
constexpr uint32_t kMapEntry = 7;  // google.protobuf.MessageOptions.map_entry

// An options message (FileOptions, MessageOptions, FieldOptions) as read
// from the wire: the fields we care about by number. Most carry none or one
// or two, so a flat list; the strings point into the descriptor set, which
// is static.
struct Options {
  struct Entry {
    uint32_t number;
    bool is_string;
    uint64_t varint;
    std::string_view bytes;
  };
  std::vector<Entry> entries;

  std::string str(uint32_t n) const {
    for (const Entry& e : entries)
      if (e.number == n && e.is_string) return std::string(e.bytes);
    return std::string();
  }
  std::vector<std::string> strs(uint32_t n) const {
    std::vector<std::string> out;
    for (const Entry& e : entries)
      if (e.number == n && e.is_string) out.emplace_back(e.bytes);
    return out;
  }
  bool flag(uint32_t n) const {
    // The last occurrence wins, as in protobuf.
    bool set = false;
    for (const Entry& e : entries)
      if (e.number == n && !e.is_string) set = e.varint != 0;
    return set;
  }
};

// google.protobuf.FieldDescriptorProto, DescriptorProto, FileDescriptorProto:
// only what the registry uses.
struct FieldProto {
  std::string_view name, type_name;
  uint32_t number = 0;
  uint64_t label = 1, type = 0;
  Options options;
};
struct MessageProto {
  std::string_view name;
  std::vector<FieldProto> fields;
  std::vector<MessageProto> nested;
  Options options;
};
struct FileProto {
  std::string package;
  std::vector<MessageProto> messages;
  Options options;
};

[[noreturn]] void corrupt(const char* what) {
  throw std::runtime_error(std::string("schema: malformed descriptor set (") + what + ")");
}

Options parse_options(std::string_view b) {
  Options o;
  wire::Reader r(b);
  wire::Tag t;
  while (r.next(t)) {
    if (t.type == wire::kLen) o.entries.push_back({t.number, true, 0, t.bytes});
    else if (t.type == wire::kVarint) o.entries.push_back({t.number, false, t.varint, {}});
  }
  if (!r.ok()) corrupt("options");
  return o;
}

FieldProto parse_field(std::string_view b) {
  FieldProto f;
  wire::Reader r(b);
  wire::Tag t;
  while (r.next(t)) {
    switch (t.number) {
      case 1: f.name = t.bytes; break;
      case 3: f.number = static_cast<uint32_t>(t.varint); break;
      case 4: f.label = t.varint; break;
      case 5: f.type = t.varint; break;
      case 6: f.type_name = t.bytes; break;
      case 8: f.options = parse_options(t.bytes); break;
      default: break;
    }
  }
  if (!r.ok()) corrupt("field");
  return f;
}

MessageProto parse_message(std::string_view b) {
  MessageProto m;
  wire::Reader r(b);
  wire::Tag t;
  while (r.next(t)) {
    switch (t.number) {
      case 1: m.name = t.bytes; break;
      case 2: m.fields.push_back(parse_field(t.bytes)); break;
      case 3: m.nested.push_back(parse_message(t.bytes)); break;
      case 7: m.options = parse_options(t.bytes); break;
      default: break;
    }
  }
  if (!r.ok()) corrupt("message");
  return m;
}

FileProto parse_file(std::string_view b) {
  FileProto f;
  wire::Reader r(b);
  wire::Tag t;
  while (r.next(t)) {
    switch (t.number) {
      case 2: f.package = t.bytes; break;
      case 4: f.messages.push_back(parse_message(t.bytes)); break;
      case 8: f.options = parse_options(t.bytes); break;
      default: break;
    }
  }
  if (!r.ok()) corrupt("file");
  return f;
}

JsonFormat parse_format(const std::string& s, const std::string& message) {
  static const std::map<std::string, JsonFormat, std::less<>> formats = {
      {"", JsonFormat::kObject},
      {"quantity", JsonFormat::kQuantity},
      {"int_or_string", JsonFormat::kIntOrString},
      {"time", JsonFormat::kTime},
      {"micro_time", JsonFormat::kMicroTime},
      {"duration", JsonFormat::kDuration},
      {"raw_extension", JsonFormat::kRawExtension},
      {"fields_v1", JsonFormat::kFieldsV1},
      {"json", JsonFormat::kJson},
      {"string_list", JsonFormat::kStringList},
      {"schema_or_array", JsonFormat::kSchemaOrArray},
      {"schema_or_bool", JsonFormat::kSchemaOrBool},
      {"schema_or_string_array", JsonFormat::kSchemaOrStringArray},
  };
  auto it = formats.find(s);
  if (it == formats.end())
    throw std::runtime_error("message " + message + ": unknown json_format \"" + s + "\"");
  return it->second;
}

// Where a descriptor error is: "<message>.<field>", made only for the error.
struct Where {
  const std::string& message;
  std::string_view field;
  std::string str() const { return message + "." + std::string(field); }
};

// google.protobuf.FieldDescriptorProto.Type -> Type.
Type scalar_type(uint64_t t, const Where& where) {
  switch (t) {
    case 9: return Type::kString;
    case 12: return Type::kBytes;
    case 8: return Type::kBool;
    case 5: return Type::kInt32;
    case 3: return Type::kInt64;
    case 13: return Type::kUint32;
    case 4: return Type::kUint64;
    case 1: return Type::kDouble;
    case 2: return Type::kFloat;
    case 11: return Type::kMessage;
    case 14: return Type::kInt32;  // enums travel as varints
    default:
      throw std::runtime_error(where.str() + ": unsupported field type " + std::to_string(t));
  }
}

struct Pending {
  const MessageProto* proto;
  Message* message;
};

void collect(const MessageProto& d, const std::string& scope, const FileProto& file,
             std::map<std::string, Message, std::less<>>& out, std::vector<Pending>& pending,
             std::map<std::string, const MessageProto*, std::less<>>& map_entries) {
  std::string full = scope.empty() ? std::string(d.name) : scope + "." + std::string(d.name);
  if (d.options.flag(kMapEntry)) {
    map_entries[full] = &d;
    return;
  }
  Message& m = out[full];
  m.full_name = full;
  m.name = d.name;
  m.package = file.package;
  m.group = file.options.str(kGroup);
  m.version = file.options.str(kVersion);
  m.json_format = parse_format(d.options.str(kJsonFormat), full);
  m.kind = d.options.str(kKind);
  pending.push_back({&d, &m});
  for (const auto& nested : d.nested) collect(nested, full, file, out, pending, map_entries);
}

}  // namespace

std::string Message::openapi_name() const {
  // "k8s.io.api.core.v1" -> "io.k8s.api.core.v1"; Go module paths use '-'
  // where proto packages must use '_' (apiextensions-apiserver).
  std::string pkg = package;
  if (pkg.starts_with("k8s.io.")) pkg = "io.k8s." + pkg.substr(7);
  for (auto& c : pkg)
    if (c == '_') c = '-';
  return pkg + "." + name;
}

void Registry::load(std::string_view descriptor_set) {
  std::vector<FileProto> files;
  {
    wire::Reader r(descriptor_set);
    wire::Tag t;
    while (r.next(t))
      if (t.number == 1 && t.type == wire::kLen) files.push_back(parse_file(t.bytes));
    if (!r.ok()) corrupt("file set");
  }
  std::vector<Pending> pending;
  std::map<std::string, const MessageProto*, std::less<>> map_entries;
  for (const auto& file : files) {
    if (file.package == "google.protobuf" || file.package == "vkube") continue;
    for (const auto& d : file.messages) collect(d, file.package, file, messages_, pending, map_entries);
  }
  auto resolve = [&](std::string_view type_name, const Where& where) -> const Message* {
    std::string_view n = type_name.starts_with('.') ? type_name.substr(1) : type_name;
    auto it = messages_.find(n);
    if (it == messages_.end())
      throw std::runtime_error(where.str() + ": unknown type " + std::string(type_name));
    return &it->second;
  };
  for (auto& [d, m] : pending) {
    m->fields.reserve(d->fields.size());
    for (const auto& fp : d->fields) {
      const Where where{m->full_name, fp.name};
      Field f;
      f.name = fp.name;
      f.json_name = fp.options.str(kJsonName);
      if (f.json_name.empty()) f.json_name = fp.name;
      f.number = static_cast<int>(fp.number);
      f.repeated = fp.label == 3;
      f.nullable = fp.options.flag(kNullable);
      f.required = fp.options.flag(kRequired);
      f.patch_strategy = fp.options.str(kPatchStrategy);
      f.patch_merge_key = fp.options.str(kPatchMergeKey);
      f.list_type = fp.options.str(kListType);
      f.list_map_keys = fp.options.strs(kListMapKeys);
      f.map_type = fp.options.str(kMapType);
      f.format = fp.options.str(kFormat);
      f.inline_ = fp.options.flag(kInline);
      f.type = scalar_type(fp.type, where);
      if (f.type == Type::kMessage) {
        std::string_view n = fp.type_name.substr(fp.type_name.starts_with('.') ? 1 : 0);
        auto entry = map_entries.find(n);
        if (entry != map_entries.end()) {
          f.is_map = true;
          f.repeated = false;
          const MessageProto& e = *entry->second;
          if (e.fields.size() != 2 || scalar_type(e.fields[0].type, where) != Type::kString)
            throw std::runtime_error(where.str() + ": map keys must be strings");
          f.map_value = scalar_type(e.fields[1].type, where);
          if (f.map_value == Type::kMessage) f.message = resolve(e.fields[1].type_name, where);
        } else {
          f.message = resolve(fp.type_name, where);
        }
      }
      m->fields.push_back(std::move(f));
    }
    for (const auto& f : m->fields) {
      m->by_number[f.number] = &f;
      if (f.inline_ && f.is_message() && !f.repeated) m->inlined.push_back(&f);
      else m->by_json[f.json_name] = &f;
    }
  }
  for (const auto& [name, m] : messages_) {
    if (m.kind.empty()) continue;
    kinds_.push_back(&m);
    by_gvk_[m.group + "/" + m.version + "/" + m.kind] = &m;
    auto list = messages_.find(m.package + "." + m.kind + "List");
    if (list != messages_.end())
      by_gvk_[m.group + "/" + m.version + "/" + m.kind + "List"] = &list->second;
  }
}

const Registry& Registry::get() {
  static Registry* registry = [] {
    auto* r = new Registry();
    r->load(std::string_view(vkube_schema_descriptors,
                             static_cast<size_t>(vkube_schema_descriptors_end - vkube_schema_descriptors)));
    return r;
  }();
  return *registry;
}

const Message* Registry::find(std::string_view full_name) const {
  auto it = messages_.find(full_name);
  return it == messages_.end() ? nullptr : &it->second;
}

const Message* Registry::find_kind(std::string_view group, std::string_view version,
                                   std::string_view kind) const {
  std::string key;
  key.append(group).append("/").append(version).append("/").append(kind);
  auto it = by_gvk_.find(key);
  if (it != by_gvk_.end()) return it->second;
  // Options and status objects of meta/v1 travel under every group-version.
  return find(std::string("k8s.io.apimachinery.pkg.apis.meta.v1.") + std::string(kind));
}

}  // namespace vkube::schema
