#include "yaml_json.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <unordered_map>
#include <vector>

#include "vkube/schema/validation.h"

namespace vkube::apiserver::apply {

namespace {

bool one_of(std::string_view s, std::initializer_list<std::string_view> options) {
  return std::find(options.begin(), options.end(), s) != options.end();
}

// Go's strconv.ParseInt(s, 0, 64) / ParseUint for a plain scalar without '_'.
std::optional<json> parse_integer(const std::string& s) {
  size_t i = 0;
  bool negative = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) negative = s[i++] == '-';
  if (i >= s.size()) return std::nullopt;
  int base = 10;
  std::string_view digits(s.data() + i, s.size() - i);
  if (digits.size() > 1 && digits[0] == '0') {
    char p = digits[1];
    if (p == 'x' || p == 'X')
      base = 16, digits.remove_prefix(2);
    else if (p == 'o' || p == 'O')
      base = 8, digits.remove_prefix(2);
    else if (p == 'b' || p == 'B')
      base = 2, digits.remove_prefix(2);
    else
      base = 8, digits.remove_prefix(1);
  }
  if (digits.empty()) return std::nullopt;
  for (char c : digits) {
    int d = std::isdigit(static_cast<unsigned char>(c))    ? c - '0'
            : std::isxdigit(static_cast<unsigned char>(c)) ? std::tolower(c) - 'a' + 10
                                                           : 99;
    if (d >= base) return std::nullopt;
  }
  std::string text(digits);
  errno = 0;
  unsigned long long v = std::strtoull(text.c_str(), nullptr, base);
  if (errno == ERANGE) return std::nullopt;
  if (negative) {
    if (v > 9223372036854775808ull) return std::nullopt;
    return json(v == 9223372036854775808ull ? INT64_MIN : -static_cast<int64_t>(v));
  }
  if (v <= static_cast<unsigned long long>(INT64_MAX)) return json(static_cast<int64_t>(v));
  return json(static_cast<uint64_t>(v));
}

// YAML's float form [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?, matched by hand: a
// std::regex would recurse per character and a long scalar would exhaust the stack.
bool is_float(std::string_view s) {
  size_t i = 0;
  auto digits = [&] {
    size_t start = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    return i - start;
  };
  if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
  size_t whole = digits();
  size_t fraction = 0;
  if (i < s.size() && s[i] == '.') {
    ++i;
    fraction = digits();
  }
  if (whole == 0 && fraction == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
    if (digits() == 0) return false;
  }
  return i == s.size();
}

json plain_scalar(const std::string& s) {
  if (one_of(s, {"", "~", "null", "Null", "NULL"})) return nullptr;
  if (one_of(s, {"y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"}))
    return true;
  if (one_of(s, {"n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"}))
    return false;
  char c = s[0];
  if (!(std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '+' || c == '.')) return s;
  std::string plain = s;
  std::erase(plain, '_');
  if (auto i = parse_integer(plain)) return *i;
  if (is_float(plain)) {
    char* end = nullptr;
    double d = std::strtod(plain.c_str(), &end);
    if (end && *end == '\0' && std::isfinite(d)) return d;
  }
  return s;
}

// Scalars as the JSON object model: quoted and !!str-tagged ones stay strings.
json scalar_value(const std::string& tag, const std::string& value) {
  if (tag == "!" || tag == "tag:yaml.org,2002:str" || tag == "tag:yaml.org,2002:binary")
    return value;
  return plain_scalar(value);
}

// A refusal from inside the parser's callbacks, with kube's text.
struct Refused {
  std::string message;
};

// go-yaml's alias budget (decode.go, allowedAliasRatio): up to 99% of the
// nodes of a document of up to 400,000 nodes may come from aliases, falling
// to 10% at 4,000,000, and no document fails before 1,000 nodes or with
// 100 aliased nodes or fewer. kube (sigs.k8s.io/yaml) inherits it.
bool excessive_aliasing(uint64_t decoded, uint64_t aliased) {
  if (aliased <= 100 || decoded <= 1000) return false;
  constexpr double kLow = 400000, kHigh = 4000000;
  double allowed = decoded <= kLow    ? 0.99
                   : decoded >= kHigh ? 0.10
                                      : 0.99 - 0.89 * ((decoded - kLow) / (kHigh - kLow));
  return static_cast<double>(aliased) / static_cast<double>(decoded) > allowed;
}

// Builds the JSON value from the parser's events, without recursion. An
// alias is a copy of its anchor's finished value, and what every copy adds
// (nodes, bytes of scalars, depth) is checked before it is made: expansion
// is what turns a few hundred bytes into gigabytes.
class Builder final : public YAML::EventHandler {
 public:
  json take() { return std::move(result_); }

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnAnchor(const YAML::Mark&, const std::string& name) override { anchor_name_ = name; }
  void OnNull(const YAML::Mark&, YAML::anchor_t anchor) override {
    count_node();
    finish(Item{nullptr, "", 1, 0, 0}, anchor);
  }
  void OnScalar(const YAML::Mark&, const std::string& tag, YAML::anchor_t anchor,
                const std::string& value) override {
    count_node();
    bytes_ += value.size();
    finish(Item{scalar_value(tag, value), value, 1, value.size(), 0}, anchor);
  }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    count_node();
    auto it = anchors_.find(anchor);
    if (it == anchors_.end()) {  // its node is still open (the parser knows the anchor)
      throw Refused{"yaml: anchor '" + open_names_[anchor] + "' value contains itself"};
    }
    const Item& target = it->second;
    decoded_ += target.nodes;
    aliased_ += target.nodes;
    bytes_ += target.bytes;
    alias_bytes_ += target.bytes;
    if (excessive_aliasing(decoded_, aliased_) || aliased_ > kMaxAliasNodes ||
        alias_bytes_ > kMaxAliasBytes)
      throw Refused{"yaml: document contains excessive aliasing"};
    check_depth(mark, stack_.size() + target.depth);
    finish(Item(target), 0);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    open(mark, json::array(), anchor);
  }
  void OnSequenceEnd() override { close(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    open(mark, json::object(), anchor);
  }
  void OnMapEnd() override { close(); }

 private:
  // A finished value, and what it cost to build (for the copies of it).
  struct Item {
    json value;
    std::string key;  // its text as a mapping key: a scalar's, else ""
    uint64_t nodes = 0;
    uint64_t bytes = 0;
    size_t depth = 0;
  };
  struct Frame {
    json value;
    YAML::anchor_t anchor;
    uint64_t first_node;             // decoded_ before it
    uint64_t first_byte;             // bytes_ before it
    size_t depth = 1;                // of the deepest value in it, itself counted
    std::optional<std::string> key;  // a mapping's key waiting for its value
  };

  void count_node() {
    ++decoded_;
    if (excessive_aliasing(decoded_, aliased_))
      throw Refused{"yaml: document contains excessive aliasing"};
  }

  void check_depth(const YAML::Mark& mark, size_t depth) {
    if (depth > kMaxDepth)
      throw YAML::Exception(
          mark, "the document nests more than " + std::to_string(kMaxDepth) + " levels deep");
  }

  void open(const YAML::Mark& mark, json value, YAML::anchor_t anchor) {
    count_node();
    check_depth(mark, stack_.size() + 1);
    if (anchor != 0) open_names_[anchor] = anchor_name_;
    stack_.push_back(Frame{std::move(value), anchor, decoded_ - 1, bytes_, 1, std::nullopt});
  }

  void close() {
    Frame f = std::move(stack_.back());
    stack_.pop_back();
    Item item{std::move(f.value), "", decoded_ - f.first_node, bytes_ - f.first_byte, f.depth};
    finish(std::move(item), f.anchor);
  }

  void finish(Item item, YAML::anchor_t anchor) {
    if (anchor != 0) anchors_[anchor] = item;
    if (stack_.empty()) {
      result_ = std::move(item.value);
      return;
    }
    Frame& parent = stack_.back();
    parent.depth = std::max(parent.depth, item.depth + 1);
    if (parent.value.is_array()) {
      parent.value.push_back(std::move(item.value));
    } else if (!parent.key) {
      parent.key = std::move(item.key);
    } else {
      parent.value[*parent.key] = std::move(item.value);
      parent.key.reset();
    }
  }

  // Nesting kube's JSON decoding and every walker over request bodies take.
  static constexpr size_t kMaxDepth = 1000;
  // What aliases may add in all, beyond go-yaml's ratio (which lets a
  // document of a million plain nodes add a million more): the nodes its
  // comments promise, and scalar bytes a little over the body limit (3 MiB).
  static constexpr uint64_t kMaxAliasNodes = 400000;
  static constexpr uint64_t kMaxAliasBytes = 4u << 20;

  std::vector<Frame> stack_;
  std::unordered_map<YAML::anchor_t, Item> anchors_;            // finished anchored values
  std::unordered_map<YAML::anchor_t, std::string> open_names_;  // for the error message
  std::string anchor_name_;                                     // the last anchor the parser named
  json result_;
  uint64_t decoded_ = 0;      // nodes built, copies through aliases included
  uint64_t aliased_ = 0;      // of those, nodes built by aliases
  uint64_t bytes_ = 0;        // scalar bytes built, copies through aliases included
  uint64_t alias_bytes_ = 0;  // of those, bytes copied by aliases
};

// What go-yaml's reader says of bytes that are not UTF-8, or not YAML's
// printable characters (it checks both as it reads); nullopt for valid text. A scalar holding
// such bytes would reach JSON, which cannot be serialised.
std::optional<std::string> utf8_error(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    const size_t width = c < 0x80             ? 1
                         : (c & 0xE0) == 0xC0 ? 2
                         : (c & 0xF0) == 0xE0 ? 3
                         : (c & 0xF8) == 0xF0 ? 4
                                              : 0;
    if (width == 0) return "invalid leading UTF-8 octet";
    if (i + width > text.size()) return "incomplete UTF-8 octet sequence";
    uint32_t cp = width == 1 ? c : c & (0x7F >> width);
    for (size_t k = 1; k < width; ++k) {
      const auto t = static_cast<unsigned char>(text[i + k]);
      if ((t & 0xC0) != 0x80) return "invalid trailing UTF-8 octet";
      cp = (cp << 6) | (t & 0x3F);
    }
    if ((width == 2 && cp < 0x80) || (width == 3 && cp < 0x800) || (width == 4 && cp < 0x10000))
      return "invalid length of a UTF-8 sequence";
    if ((cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) return "invalid Unicode character";
    // YAML's printable set (go-yaml checks it as it reads): a NUL or another
    // control byte is refused, not handed to the parser.
    const bool printable = cp == 0x09 || cp == 0x0A || cp == 0x0D || (cp >= 0x20 && cp <= 0x7E) ||
                           cp == 0x85 || (cp >= 0xA0 && cp <= 0xD7FF) ||
                           (cp >= 0xE000 && cp <= 0xFFFD) || cp >= 0x10000;
    if (!printable && !(cp == 0xFEFF && i == 0)) return "control characters are not allowed";
    i += width;
  }
  return std::nullopt;
}

}  // namespace

Result<json> yaml_to_json(std::string_view text, std::vector<std::string>* duplicates) {
  constexpr std::string_view kPrefix = "error decoding YAML: error converting YAML to JSON: ";
  // Before the JSON fast path too: nlohmann's lexer stops at a NUL, so
  // "{}\0junk" would read as {}.
  if (auto bad = utf8_error(text))
    return Status::bad_request(std::string(kPrefix) + "yaml: " + *bad);
  auto first = text.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && text[first] == '{') {
    json j = schema::parse_json(text, duplicates);
    if (!j.is_discarded()) return j;
    if (duplicates != nullptr) duplicates->clear();
  }
  try {
    std::istringstream in{std::string(text)};
    YAML::Parser parser(in);
    Builder builder;
    parser.HandleNextDocument(builder);
    return builder.take();
  } catch (const Refused& r) {
    return Status::bad_request(std::string(kPrefix) + r.message);
  } catch (const YAML::Exception& e) {
    return Status::bad_request(std::string(kPrefix) + "yaml: line " +
                               std::to_string(e.mark.line + 1) + ": " + e.msg);
  } catch (const std::exception& e) {
    return Status::bad_request(std::string(kPrefix) + e.what());
  }
}

}  // namespace vkube::apiserver::apply
