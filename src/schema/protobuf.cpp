// Protobuf <-> JSON for the registry's messages. Decoding follows what Go's
// encoding/json prints for the object gogo-protobuf decoded: zero scalars of
// non-pointer fields are dropped (omitempty), empty lists and maps are
// dropped, message fields present on the wire are kept (non-pointer structs
// and non-nil pointers), and the special messages (Quantity, Time, ...) take
// their JSON forms.
#include "vkube/schema/protobuf.h"

#include <cmath>
#include <cstdio>
#include <ctime>
#include <optional>

#include "vkube/common/base64.h"
#include "wire.h"

namespace vkube::schema {

// decode_object at a nesting depth (RawExtensions may embed envelopes).
Result<json> decode_object_at(std::string_view body, int depth);

namespace {

constexpr int kMaxDepth = 100;

// RFC 3339 in UTC of a Timestamp's seconds and nanoseconds as metav1 reads
// them: MicroTime as time.Unix(secs, nanos) (nanos outside [0, 1e9) carry
// into the seconds), Time as time.Unix(secs, 0), for its JSON has no
// fraction; nullopt for a year Go's JSON encoding refuses (outside 0-9999).
std::optional<std::string> format_time(int64_t secs, int64_t nanos, bool micro) {
  if (!micro) nanos = 0;
  constexpr int64_t kMinSecs = -62167219200;                            // 0000-01-01T00:00:00Z
  constexpr int64_t kMaxSecs = 253402300799;                            // 9999-12-31T23:59:59Z
  if (secs < kMinSecs - 3 || secs > kMaxSecs + 3) return std::nullopt;  // nanos carry <= 3 s
  constexpr int64_t kSecond = 1000000000;
  int64_t carry = nanos / kSecond;
  nanos %= kSecond;
  if (nanos < 0) nanos += kSecond, --carry;
  secs += carry;
  if (secs < kMinSecs || secs > kMaxSecs) return std::nullopt;
  std::time_t tt = static_cast<std::time_t>(secs);
  std::tm tm{};
  if (gmtime_r(&tt, &tm) == nullptr) return std::nullopt;
  char base[40];
  std::snprintf(base, sizeof base, "%04d-%02d-%02dT%02d:%02d:%02d", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
  if (!micro) return std::string(base) + "Z";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s.%06dZ", base, static_cast<int>(nanos / 1000));
  return std::string(buf);
}

struct Decoder {
  std::string error;

  bool fail(std::string msg) {
    if (error.empty()) error = std::move(msg);
    return false;
  }

  // A scalar of `type` from one wire field. nullopt on a wire-type mismatch.
  std::optional<json> scalar(Type type, const wire::Tag& t) {
    switch (type) {
      case Type::kString:
        if (t.type != wire::kLen) return std::nullopt;
        return json(std::string(t.bytes));
      case Type::kBytes:
        if (t.type != wire::kLen) return std::nullopt;
        return json(base64_encode(t.bytes));
      case Type::kBool:
        if (t.type != wire::kVarint) return std::nullopt;
        return json(t.varint != 0);
      case Type::kInt32:
        if (t.type != wire::kVarint) return std::nullopt;
        return json(static_cast<int64_t>(static_cast<int32_t>(t.varint)));
      case Type::kInt64:
        if (t.type != wire::kVarint) return std::nullopt;
        return json(static_cast<int64_t>(t.varint));
      case Type::kUint32:
        if (t.type != wire::kVarint && t.type != wire::kFixed32) return std::nullopt;
        return json(static_cast<uint64_t>(static_cast<uint32_t>(t.varint)));
      case Type::kUint64:
        if (t.type != wire::kVarint && t.type != wire::kFixed64) return std::nullopt;
        return json(t.varint);
      case Type::kDouble: {
        if (t.type != wire::kFixed64) return std::nullopt;
        double d;
        std::memcpy(&d, &t.varint, 8);
        return json(d);
      }
      case Type::kFloat: {
        if (t.type != wire::kFixed32) return std::nullopt;
        uint32_t bits = static_cast<uint32_t>(t.varint);
        float f;
        std::memcpy(&f, &bits, 4);
        return json(static_cast<double>(f));
      }
      case Type::kMessage: return std::nullopt;
    }
    return std::nullopt;
  }

  static bool is_zero(const json& v) {
    if (v.is_string()) return v.get_ref<const std::string&>().empty();
    if (v.is_boolean()) return !v.get<bool>();
    if (v.is_number_integer()) return v.get<int64_t>() == 0;
    if (v.is_number_unsigned()) return v.get<uint64_t>() == 0;
    if (v.is_number_float()) return v.get<double>() == 0.0;
    return v.is_null();
  }

  // Packed repeated scalars (proto3 style; accepted for robustness).
  bool packed(Type type, std::string_view bytes, json& arr, const std::string& where) {
    wire::WireType wt = type == Type::kDouble || type == Type::kUint64   ? wire::kFixed64
                        : type == Type::kFloat                          ? wire::kFixed32
                                                                         : wire::kVarint;
    size_t i = 0;
    while (i < bytes.size()) {
      wire::Tag t;
      t.number = 1;
      t.type = wt;
      if (wt == wire::kVarint) {
        uint64_t v = 0;
        int shift = 0;
        bool end = false;
        while (i < bytes.size() && shift < 64) {
          uint8_t b = static_cast<uint8_t>(bytes[i++]);
          v |= static_cast<uint64_t>(b & 0x7f) << shift;
          shift += 7;
          if (!(b & 0x80)) {
            end = true;
            break;
          }
        }
        if (!end) return fail("truncated packed field " + where);
        t.varint = v;
      } else {
        size_t n = wt == wire::kFixed64 ? 8 : 4;
        if (bytes.size() - i < n) return fail("truncated packed field " + where);
        t.varint = 0;
        std::memcpy(&t.varint, bytes.data() + i, n);
        i += n;
      }
      auto v = scalar(type, t);
      if (!v) return fail("bad packed field " + where);
      arr.push_back(std::move(*v));
    }
    return true;
  }

  // The value of a message-typed field; nullopt when it is to be left out
  // (a zero Time, Quantity or IntOrString of a non-pointer field).
  std::optional<json> message(const Message& m, std::string_view bytes, bool keep_zero, int depth) {
    if (depth > kMaxDepth) {
      fail("the object nests too deeply");
      return std::nullopt;
    }
    switch (m.json_format) {
      case JsonFormat::kObject: return object(m, bytes, depth);
      case JsonFormat::kQuantity: {
        std::string s;
        if (!read_fields(bytes, [&](const wire::Tag& t) {
              if (t.number == 1 && t.type == wire::kLen) s = t.bytes;
            }))
          return std::nullopt;
        if (s.empty() && !keep_zero) return std::nullopt;
        return json(s);
      }
      case JsonFormat::kIntOrString: {
        uint64_t type = 0;
        int64_t iv = 0;
        std::string sv;
        if (!read_fields(bytes, [&](const wire::Tag& t) {
              if (t.number == 1 && t.type == wire::kVarint) type = t.varint;
              if (t.number == 2 && t.type == wire::kVarint) iv = static_cast<int32_t>(t.varint);
              if (t.number == 3 && t.type == wire::kLen) sv = t.bytes;
            }))
          return std::nullopt;
        if (type == 1) return json(sv);
        if (iv == 0 && !keep_zero) return std::nullopt;
        return json(iv);
      }
      case JsonFormat::kTime:
      case JsonFormat::kMicroTime: {
        int64_t secs = 0, nanos = 0;
        if (!read_fields(bytes, [&](const wire::Tag& t) {
              if (t.number == 1 && t.type == wire::kVarint) secs = static_cast<int64_t>(t.varint);
              if (t.number == 2 && t.type == wire::kVarint) nanos = static_cast<int32_t>(t.varint);
            }))
          return std::nullopt;
        if (secs == 0 && nanos == 0) return std::nullopt;  // Go's zero time prints as null
        auto text = format_time(secs, nanos, m.json_format == JsonFormat::kMicroTime);
        if (!text) {
          fail("a time is outside the years 0 to 9999");
          return std::nullopt;
        }
        return json(std::move(*text));
      }
      case JsonFormat::kDuration: {
        int64_t d = 0;
        if (!read_fields(bytes, [&](const wire::Tag& t) {
              if (t.number == 1 && t.type == wire::kVarint) d = static_cast<int64_t>(t.varint);
            }))
          return std::nullopt;
        return json(format_duration(d));
      }
      case JsonFormat::kRawExtension:
      case JsonFormat::kFieldsV1:
      case JsonFormat::kJson: {
        std::string_view raw;
        if (!read_fields(bytes, [&](const wire::Tag& t) {
              if (t.number == 1 && t.type == wire::kLen) raw = t.bytes;
            }))
          return std::nullopt;
        if (raw.empty()) return std::nullopt;
        if (raw.starts_with(kProtobufMagic)) {
          auto obj = decode_object_at(raw, depth + 1);  // nesting counts across envelopes
          if (!obj.is_ok()) {
            fail(obj.status().message());
            return std::nullopt;
          }
          return std::move(*obj);
        }
        json v = json::parse(raw, nullptr, false);
        if (v.is_discarded()) {
          fail("embedded " + m.name + " is not valid JSON");
          return std::nullopt;
        }
        return v;
      }
      case JsonFormat::kStringList: {
        json arr = json::array();
        if (!read_fields(bytes, [&](const wire::Tag& t) {
              if (t.number == 1 && t.type == wire::kLen) arr.push_back(std::string(t.bytes));
            }))
          return std::nullopt;
        return arr;
      }
      case JsonFormat::kSchemaOrArray:
      case JsonFormat::kSchemaOrBool:
      case JsonFormat::kSchemaOrStringArray: return either(m, bytes, depth);
    }
    return std::nullopt;
  }

  // JSONSchemaPropsOr{Array,Bool,StringArray}: the schema when set, else the
  // other alternative.
  std::optional<json> either(const Message& m, std::string_view bytes, int depth) {
    std::optional<json> schema;
    json other;
    bool has_bool = false;
    for (const Field& f : m.fields) {
      if (f.type == Type::kBool) has_bool = true;
      if (f.repeated) other = json::array();
    }
    if (has_bool) other = false;
    if (!read_fields(bytes, [&](const wire::Tag& t) {
          const Field* f = m.field_number(static_cast<int>(t.number));
          if (f == nullptr) return;
          if (f->is_message() && !f->repeated && t.type == wire::kLen) {
            schema = message(*f->message, t.bytes, true, depth + 1);
          } else if (f->is_message() && f->repeated && t.type == wire::kLen) {
            auto v = message(*f->message, t.bytes, true, depth + 1);
            if (v) other.push_back(std::move(*v));
          } else if (auto v = scalar(f->type, t)) {
            if (f->repeated) other.push_back(std::move(*v));
            else other = std::move(*v);
          }
        }))
      return std::nullopt;
    if (schema) return schema;
    return other;
  }

  template <typename F>
  bool read_fields(std::string_view bytes, F&& on_field) {
    wire::Reader r(bytes);
    wire::Tag t;
    while (r.next(t)) on_field(t);
    if (!r.ok()) return fail("the protobuf message is truncated or malformed");
    return error.empty();
  }

  std::optional<json> map_entry(const Field& f, std::string_view bytes, std::string& key, int depth) {
    std::optional<json> value;
    bool ok = read_fields(bytes, [&](const wire::Tag& t) {
      if (t.number == 1 && t.type == wire::kLen) key = t.bytes;
      if (t.number == 2) {
        if (f.map_value == Type::kMessage) {
          if (t.type == wire::kLen) value = message(*f.message, t.bytes, true, depth + 1);
        } else {
          value = scalar(f.map_value, t);
        }
      }
    });
    if (!ok) return std::nullopt;
    if (!value) {
      // An entry without a value carries the zero value.
      if (f.map_value == Type::kMessage)
        value = f.message->json_format == JsonFormat::kQuantity ? json("0") : json::object();
      else if (f.map_value == Type::kBytes || f.map_value == Type::kString)
        value = json("");
      else if (f.map_value == Type::kBool)
        value = false;
      else
        value = 0;
    }
    return value;
  }

  std::optional<json> object(const Message& m, std::string_view bytes, int depth) {
    json obj = json::object();
    bool ok = read_fields(bytes, [&](const wire::Tag& t) {
      if (!error.empty()) return;
      const Field* f = m.field_number(static_cast<int>(t.number));
      if (f == nullptr) return;  // a field this version does not know: ignored, as Go does
      const std::string where = m.name + "." + f->json_name;
      if (f->is_map) {
        if (t.type != wire::kLen) {
          fail("field " + where + " has the wrong wire type");
          return;
        }
        std::string key;
        auto v = map_entry(*f, t.bytes, key, depth);
        if (v) obj[f->json_name][key] = std::move(*v);
        return;
      }
      if (f->type == Type::kMessage) {
        if (t.type != wire::kLen) {
          fail("field " + where + " has the wrong wire type");
          return;
        }
        auto v = message(*f->message, t.bytes, f->nullable || f->repeated, depth + 1);
        if (!v) return;
        if (f->inline_ && v->is_object() && !f->repeated) {
          for (auto it = v->begin(); it != v->end(); ++it) obj[it.key()] = std::move(it.value());
          return;
        }
        if (f->repeated) obj[f->json_name].push_back(std::move(*v));
        else obj[f->json_name] = std::move(*v);
        return;
      }
      if (f->repeated && t.type == wire::kLen && f->type != Type::kString && f->type != Type::kBytes) {
        json& arr = obj[f->json_name];
        if (arr.is_null()) arr = json::array();
        packed(f->type, t.bytes, arr, where);
        return;
      }
      auto v = scalar(f->type, t);
      if (!v) {
        fail("field " + where + " has the wrong wire type");
        return;
      }
      if (f->repeated) {
        obj[f->json_name].push_back(std::move(*v));
      } else if (f->nullable || !is_zero(*v)) {
        obj[f->json_name] = std::move(*v);
      } else {
        obj.erase(f->json_name);  // a later zero overrides an earlier value
      }
    });
    if (!ok) return std::nullopt;
    return obj;
  }
};

// --- encoding ---------------------------------------------------------------

bool parse_rfc3339(const std::string& s, int64_t& secs, int32_t& nanos) {
  int y, mo, d, h, mi, se;
  if (std::sscanf(s.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d", &y, &mo, &d, &h, &mi, &se) != 6) return false;
  size_t i = 19;
  nanos = 0;
  if (i < s.size() && s[i] == '.') {
    ++i;
    int digits = 0;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
      if (digits < 9) nanos = nanos * 10 + (s[i] - '0'), ++digits;
      ++i;
    }
    while (digits++ < 9) nanos *= 10;
  }
  int offset = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) {
    int oh = 0, om = 0;
    if (std::sscanf(s.c_str() + i + 1, "%2d:%2d", &oh, &om) != 2) return false;
    offset = (oh * 60 + om) * 60 * (s[i] == '+' ? 1 : -1);
  }
  std::tm tm{};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = se;
  secs = static_cast<int64_t>(timegm(&tm)) - offset;
  return true;
}

void encode_into(const Message& m, const json& v, std::string& out);

void encode_scalar(Type type, uint32_t number, const json& v, std::string& out) {
  switch (type) {
    case Type::kString:
      if (v.is_string()) wire::put_len(out, number, v.get_ref<const std::string&>());
      return;
    case Type::kBytes:
      if (v.is_string()) {
        auto b = base64_decode(v.get_ref<const std::string&>());
        if (b) wire::put_len(out, number, *b);
      }
      return;
    case Type::kBool:
      if (v.is_boolean()) {
        wire::put_tag(out, number, wire::kVarint);
        wire::put_varint(out, v.get<bool>() ? 1 : 0);
      }
      return;
    case Type::kInt32:
    case Type::kInt64:
    case Type::kUint32:
    case Type::kUint64:
      if (v.is_number()) {
        wire::put_tag(out, number, wire::kVarint);
        int64_t n = v.is_number_float() ? static_cast<int64_t>(v.get<double>()) : v.get<int64_t>();
        if (type == Type::kInt32) n = static_cast<int32_t>(n);  // sign-extended as Go does
        wire::put_varint(out, static_cast<uint64_t>(n));
      }
      return;
    case Type::kDouble:
      if (v.is_number()) {
        double d = v.get<double>();
        uint64_t bits;
        std::memcpy(&bits, &d, 8);
        wire::put_fixed64(out, number, bits);
      }
      return;
    case Type::kFloat:
      if (v.is_number()) {
        float f = static_cast<float>(v.get<double>());
        uint32_t bits;
        std::memcpy(&bits, &f, 4);
        wire::put_fixed32(out, number, bits);
      }
      return;
    case Type::kMessage: return;
  }
}

void encode_value(const Field& f, Type type, uint32_t number, const json& v, std::string& out) {
  if (type == Type::kMessage) {
    std::string sub;
    encode_into(*f.message, v, sub);
    wire::put_len(out, number, sub);
  } else {
    encode_scalar(type, number, v, out);
  }
}

void encode_special(const Message& m, const json& v, std::string& out) {
  switch (m.json_format) {
    case JsonFormat::kQuantity:
      if (v.is_string()) wire::put_len(out, 1, v.get_ref<const std::string&>());
      else if (v.is_number()) wire::put_len(out, 1, v.dump());
      return;
    case JsonFormat::kIntOrString:
      if (v.is_string()) {
        wire::put_tag(out, 1, wire::kVarint);
        wire::put_varint(out, 1);
        wire::put_tag(out, 2, wire::kVarint);
        wire::put_varint(out, 0);
        wire::put_len(out, 3, v.get_ref<const std::string&>());
      } else if (v.is_number()) {
        wire::put_tag(out, 1, wire::kVarint);
        wire::put_varint(out, 0);
        wire::put_tag(out, 2, wire::kVarint);
        wire::put_varint(out, static_cast<uint64_t>(static_cast<int64_t>(static_cast<int32_t>(v.get<int64_t>()))));
        wire::put_len(out, 3, "");
      }
      return;
    case JsonFormat::kTime:
    case JsonFormat::kMicroTime: {
      int64_t secs = 0;
      int32_t nanos = 0;
      if (!v.is_string() || !parse_rfc3339(v.get_ref<const std::string&>(), secs, nanos)) return;
      wire::put_tag(out, 1, wire::kVarint);
      wire::put_varint(out, static_cast<uint64_t>(secs));
      wire::put_tag(out, 2, wire::kVarint);
      wire::put_varint(out, static_cast<uint64_t>(static_cast<int64_t>(nanos)));
      return;
    }
    case JsonFormat::kDuration: {
      int64_t d = 0;
      if (v.is_string() && parse_duration(v.get_ref<const std::string&>(), d)) {
        wire::put_tag(out, 1, wire::kVarint);
        wire::put_varint(out, static_cast<uint64_t>(d));
      }
      return;
    }
    case JsonFormat::kRawExtension:
    case JsonFormat::kFieldsV1:
    case JsonFormat::kJson: wire::put_len(out, 1, v.dump()); return;
    case JsonFormat::kStringList:
      if (v.is_array())
        for (const auto& s : v)
          if (s.is_string()) wire::put_len(out, 1, s.get_ref<const std::string&>());
      return;
    case JsonFormat::kSchemaOrArray:
    case JsonFormat::kSchemaOrBool:
    case JsonFormat::kSchemaOrStringArray:
      for (const Field& f : m.fields) {
        if (v.is_object() && f.is_message() && !f.repeated) {
          std::string sub;
          encode_into(*f.message, v, sub);
          wire::put_len(out, static_cast<uint32_t>(f.number), sub);
        } else if (v.is_array() && f.repeated) {
          for (const auto& e : v) encode_value(f, f.type, static_cast<uint32_t>(f.number), e, out);
        } else if (v.is_boolean() && f.type == Type::kBool) {
          encode_scalar(Type::kBool, static_cast<uint32_t>(f.number), v, out);
        }
      }
      return;
    case JsonFormat::kObject: return;
  }
}

void encode_into(const Message& m, const json& v, std::string& out) {
  if (m.json_format != JsonFormat::kObject) {
    encode_special(m, v, out);
    return;
  }
  if (!v.is_object()) return;
  for (const Field& f : m.fields) {
    const uint32_t number = static_cast<uint32_t>(f.number);
    if (f.inline_ && f.is_message() && !f.repeated) {
      std::string sub;
      encode_into(*f.message, v, sub);  // the inlined fields live in this object
      wire::put_len(out, number, sub);
      continue;
    }
    auto it = v.find(f.json_name);
    if (it == v.end() || it->is_null()) continue;
    if (f.is_map) {
      if (!it->is_object()) continue;
      for (auto e = it->begin(); e != it->end(); ++e) {  // keys in sorted order, as gogo writes them
        std::string entry;
        wire::put_len(entry, 1, e.key());
        encode_value(f, f.map_value, 2, e.value(), entry);
        wire::put_len(out, number, entry);
      }
    } else if (f.repeated) {
      if (!it->is_array()) continue;
      for (const auto& e : *it) encode_value(f, f.type, number, e, out);
    } else {
      encode_value(f, f.type, number, *it, out);
    }
  }
}

std::pair<std::string, std::string> split_api_version(const std::string& av) {
  auto slash = av.find('/');
  if (slash == std::string::npos) return {"", av};
  return {av.substr(0, slash), av.substr(slash + 1)};
}

}  // namespace

Result<Envelope> parse_envelope(std::string_view body) {
  if (!body.starts_with(kProtobufMagic))
    return Status::bad_request("the protobuf body does not start with the Kubernetes magic \"k8s\\x00\"");
  Envelope e;
  wire::Reader r(body.substr(kProtobufMagic.size()));
  wire::Tag t;
  bool has_raw = false;
  while (r.next(t)) {
    if (t.type != wire::kLen) continue;
    switch (t.number) {
      case 1: {
        wire::Reader tm(t.bytes);
        wire::Tag f;
        while (tm.next(f)) {
          if (f.type != wire::kLen) continue;
          if (f.number == 1) e.api_version = f.bytes;
          if (f.number == 2) e.kind = f.bytes;
        }
        if (!tm.ok()) return Status::bad_request("the protobuf body's type metadata is malformed");
        break;
      }
      case 2: e.raw = t.bytes, has_raw = true; break;
      case 3: e.content_encoding = t.bytes; break;
      case 4: e.content_type = t.bytes; break;
      default: break;
    }
  }
  if (!r.ok()) return Status::bad_request("the protobuf body is truncated or malformed");
  if (e.kind.empty()) return Status::bad_request("the protobuf body does not name its kind");
  if (!has_raw) e.raw.clear();
  if (!e.content_encoding.empty())
    return Status::bad_request("unsupported protobuf content encoding \"" + e.content_encoding + "\"");
  return e;
}

std::string write_envelope(std::string_view api_version, std::string_view kind, std::string_view raw) {
  std::string type_meta;
  wire::put_len(type_meta, 1, api_version);
  wire::put_len(type_meta, 2, kind);
  std::string out(kProtobufMagic);
  wire::put_len(out, 1, type_meta);
  wire::put_len(out, 2, raw);
  wire::put_len(out, 3, "");
  wire::put_len(out, 4, "");
  return out;
}

Result<json> decode(const Message& m, std::string_view bytes) {
  Decoder d;
  auto v = d.message(m, bytes, true, 0);
  if (!d.error.empty()) return Status::bad_request(d.error);
  if (!v) return json::object();
  return std::move(*v);
}

std::string encode(const Message& m, const json& value) {
  std::string out;
  encode_into(m, value, out);
  return out;
}

Result<json> decode_object_at(std::string_view body, int depth) {
  if (depth > kMaxDepth) return Status::bad_request("the object nests too deeply");
  auto env = parse_envelope(body);
  if (!env.is_ok()) return env.status();
  auto [group, version] = split_api_version(env->api_version);
  const Message* m = Registry::get().find_kind(group, version, env->kind);
  if (m == nullptr)
    return Status::bad_request("no kind \"" + env->kind + "\" is registered for version \"" +
                               env->api_version + "\"");
  Decoder d;
  auto v = d.message(*m, env->raw, true, depth);
  if (!d.error.empty()) return Status::bad_request(d.error);
  Result<json> obj = v ? std::move(*v) : json::object();
  if (!obj.is_ok()) return obj.status();
  if (!obj->is_object()) return Status::bad_request("the protobuf body is not an object");
  if (!env->api_version.empty()) (*obj)["apiVersion"] = env->api_version;
  (*obj)["kind"] = env->kind;
  return obj;
}

Result<json> decode_object(std::string_view body) { return decode_object_at(body, 0); }

Result<std::string> encode_object(const json& obj) {
  std::string api_version = obj.value("apiVersion", "");
  std::string kind = obj.value("kind", "");
  auto [group, version] = split_api_version(api_version);
  const Message* m = Registry::get().find_kind(group, version, kind);
  if (m == nullptr) return Status::not_found("no protobuf message for " + api_version + " " + kind);
  return write_envelope(api_version, kind, encode(*m, obj));
}

// --- durations, as Go prints and parses them ---------------------------------

std::string format_duration(int64_t nanos) {
  if (nanos == 0) return "0s";
  std::string sign = nanos < 0 ? "-" : "";
  uint64_t u = nanos < 0 ? static_cast<uint64_t>(-(nanos + 1)) + 1 : static_cast<uint64_t>(nanos);
  auto frac = [](uint64_t v, int digits) {  // v / 10^digits with trailing zeros trimmed
    uint64_t p = 1;
    for (int i = 0; i < digits; ++i) p *= 10;
    std::string s = std::to_string(v / p);
    uint64_t rest = v % p;
    if (rest != 0) {
      std::string f = std::to_string(rest);
      f.insert(0, static_cast<size_t>(digits) - f.size(), '0');
      while (!f.empty() && f.back() == '0') f.pop_back();
      s += "." + f;
    }
    return s;
  };
  if (u < 1000) return sign + std::to_string(u) + "ns";
  if (u < 1000000) return sign + frac(u, 3) + "µs";
  if (u < 1000000000) return sign + frac(u, 6) + "ms";
  uint64_t secs_part = u % 60000000000ULL;
  uint64_t mins = u / 60000000000ULL;
  std::string out = frac(secs_part, 9) + "s";
  if (mins > 0) {
    uint64_t hours = mins / 60;
    out = std::to_string(mins % 60) + "m" + out;
    if (hours > 0) out = std::to_string(hours) + "h" + out;
  }
  return sign + out;
}

namespace {

constexpr uint64_t kDurationMax = uint64_t{1}
                                  << 63;  // |INT64_MIN|, for "-2562047h47m16.854775808s"

// Go's leadingInt: the digits at the front of `s` as a number; false past 2^63.
bool leading_int(std::string_view& s, uint64_t* out, bool* any) {
  uint64_t x = 0;
  size_t i = 0;
  for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) {
    if (x > kDurationMax / 10) return false;
    x = x * 10 + static_cast<uint64_t>(s[i] - '0');
    if (x > kDurationMax) return false;
  }
  *any = i > 0;
  *out = x;
  s.remove_prefix(i);
  return true;
}

// Go's leadingFraction: the digits of a fraction, and 10^(digits kept); the
// digits past what 63 bits hold only lose precision.
void leading_fraction(std::string_view& s, uint64_t* out, double* scale, bool* any) {
  uint64_t x = 0;
  double sc = 1;
  bool overflow = false;
  size_t i = 0;
  for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) {
    if (overflow) continue;
    if (x > (kDurationMax - 1) / 10) {
      overflow = true;
      continue;
    }
    uint64_t y = x * 10 + static_cast<uint64_t>(s[i] - '0');
    if (y > kDurationMax) {
      overflow = true;
      continue;
    }
    x = y;
    sc *= 10;
  }
  *any = i > 0;
  *out = x;
  *scale = sc;
  s.remove_prefix(i);
}

}  // namespace

bool parse_duration(std::string_view s, int64_t& nanos) {
  // As Go's time.ParseDuration: [-+]?([0-9]*(\.[0-9]*)?[a-z]+)+ ("0" needs no
  // unit); a value past the int64 range is an error, not a wrapped number.
  bool neg = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) neg = s[0] == '-', s.remove_prefix(1);
  if (s == "0") {
    nanos = 0;
    return true;
  }
  if (s.empty()) return false;
  uint64_t total = 0;
  while (!s.empty()) {
    if (!(s[0] == '.' || (s[0] >= '0' && s[0] <= '9'))) return false;
    uint64_t v = 0, f = 0;
    double scale = 1;
    bool pre = false, post = false;
    if (!leading_int(s, &v, &pre)) return false;
    if (!s.empty() && s[0] == '.') {
      s.remove_prefix(1);
      leading_fraction(s, &f, &scale, &post);
    }
    if (!pre && !post) return false;  // "." alone
    size_t i = 0;
    while (i < s.size() && s[i] != '.' && !(s[i] >= '0' && s[i] <= '9')) ++i;
    std::string_view unit = s.substr(0, i);
    s.remove_prefix(i);
    uint64_t mult;
    if (unit == "ns")
      mult = 1;
    else if (unit == "us" || unit == "µs" || unit == "μs")
      mult = 1000;
    else if (unit == "ms")
      mult = 1000000;
    else if (unit == "s")
      mult = 1000000000;
    else if (unit == "m")
      mult = 60 * uint64_t{1000000000};
    else if (unit == "h")
      mult = 3600 * uint64_t{1000000000};
    else
      return false;  // missing or unknown unit
    if (v > kDurationMax / mult) return false;
    v *= mult;
    if (f > 0) {
      v += static_cast<uint64_t>(static_cast<double>(f) * (static_cast<double>(mult) / scale));
      if (v > kDurationMax) return false;
    }
    total += v;
    if (total > kDurationMax) return false;
  }
  if (neg) {
    nanos = static_cast<int64_t>(0 - total);  // two's complement: 2^63 is INT64_MIN
    return true;
  }
  if (total > kDurationMax - 1) return false;
  nanos = static_cast<int64_t>(total);
  return true;
}

}  // namespace vkube::schema
