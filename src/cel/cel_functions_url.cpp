// kube's CEL URL library: url("https://example.com:80/path?query=val"), isURL(), and on a URL
// getScheme(), getHost(), getHostname(), getPort(), getEscapedPath() and getQuery(). A URL is
// accepted as Go's url.ParseRequestURI accepts one (absolute, or an absolute path) and split as
// url.Parse splits it; kube's error wording.
#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "cel_internal.h"

namespace vkube::cel::detail {
namespace {

struct Parts {
  std::string scheme, host, path, query;
  bool opaque = false;  // "mailto:x": no authority, no path
};

bool scheme_char(char c, bool first) {
  const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  if (first) return alpha;
  return alpha || (c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.';
}

// The parts of `s`, or why Go refuses it ("parse \"x\": invalid URI for request").
std::optional<Parts> parse(std::string_view s, std::string* why) {
  const std::string quoted = "parse \"" + std::string(s) + "\": ";
  for (char c : s)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      *why = quoted + "net/url: invalid control character in URL";
      return std::nullopt;
    }
  if (s.empty()) {
    *why = quoted + "empty url";
    return std::nullopt;
  }
  Parts p;
  std::string_view rest = s;
  if (rest.front() != '/') {
    std::size_t colon = rest.find(':');
    bool ok = colon != std::string_view::npos && colon > 0;
    for (std::size_t i = 0; ok && i < colon; ++i) ok = scheme_char(rest[i], i == 0);
    if (!ok) {
      *why = quoted + "invalid URI for request";
      return std::nullopt;
    }
    p.scheme = std::string(rest.substr(0, colon));
    rest.remove_prefix(colon + 1);
  }
  if (std::size_t hash = rest.find('#'); hash != std::string_view::npos)
    rest = rest.substr(0, hash);
  if (std::size_t q = rest.find('?'); q != std::string_view::npos) {
    p.query = std::string(rest.substr(q + 1));
    rest = rest.substr(0, q);
  }
  if (rest.substr(0, 2) == "//") {
    rest.remove_prefix(2);
    std::size_t slash = rest.find('/');
    std::string_view authority = rest.substr(0, slash);
    p.path = slash == std::string_view::npos ? "" : std::string(rest.substr(slash));
    if (std::size_t at = authority.rfind('@'); at != std::string_view::npos)
      authority.remove_prefix(at + 1);
    p.host = std::string(authority);
    // A port is digits after the last ':' (outside an IPv6 literal's brackets).
    std::size_t close = authority.rfind(']');
    std::size_t colon = authority.rfind(':');
    if (colon != std::string_view::npos && (close == std::string_view::npos || colon > close)) {
      for (char c : authority.substr(colon + 1))
        if (c < '0' || c > '9') {
          *why =
              quoted + "invalid port \"" + std::string(authority.substr(colon)) + "\" after host";
          return std::nullopt;
        }
    }
  } else if (!p.scheme.empty() && (rest.empty() || rest.front() != '/')) {
    p.opaque = true;  // "mailto:x"
  } else {
    p.path = std::string(rest);
  }
  return p;
}

std::string hostname(const std::string& host) {
  std::size_t close = host.rfind(']');
  if (!host.empty() && host.front() == '[' && close != std::string::npos)
    return host.substr(1, close - 1);
  std::size_t colon = host.rfind(':');
  return colon == std::string::npos ? host : host.substr(0, colon);
}

std::string port(const std::string& host) {
  std::size_t close = host.rfind(']');
  std::size_t colon = host.rfind(':');
  if (colon == std::string::npos || (close != std::string::npos && colon < close)) return "";
  return host.substr(colon + 1);
}

// The path with what Go's EscapedPath escapes (spaces, quotes, non-ASCII, ...) percent-encoded.
std::string escaped_path(const std::string& path) {
  static const std::string_view kKeep = "-._~!$&'()*+,;=:@/%";
  std::string out;
  char buf[4];
  for (unsigned char c : path) {
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (alnum || kKeep.find(static_cast<char>(c)) != std::string_view::npos) {
      out += static_cast<char>(c);
    } else {
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      out += buf;
    }
  }
  return out;
}

int hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Query unescaping ('+' is a space); nullopt for a bad escape (Go drops that pair).
std::optional<std::string> unescape(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out += ' ';
    } else if (s[i] == '%') {
      if (i + 2 >= s.size() || hex(s[i + 1]) < 0 || hex(s[i + 2]) < 0) return std::nullopt;
      out += static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

// url.Values of the query: each key's values in order; malformed pairs left out, as Go does.
Value query_map(const std::string& query) {
  std::vector<std::pair<std::string, std::vector<std::string>>> values;
  std::size_t start = 0;
  while (start <= query.size()) {
    std::size_t amp = query.find('&', start);
    std::string_view pair = std::string_view(query).substr(
        start, amp == std::string::npos ? std::string::npos : amp - start);
    start = amp == std::string::npos ? query.size() + 1 : amp + 1;
    if (pair.empty() || pair.find(';') != std::string_view::npos) continue;
    std::size_t eq = pair.find('=');
    auto key = unescape(pair.substr(0, eq));
    auto value = eq == std::string_view::npos ? std::optional<std::string>("")
                                              : unescape(pair.substr(eq + 1));
    if (!key || !value) continue;
    auto it =
        std::find_if(values.begin(), values.end(), [&](const auto& e) { return e.first == *key; });
    if (it == values.end())
      values.push_back({*key, {*value}});
    else
      it->second.push_back(*value);
  }
  ValueMap entries;
  for (auto& [k, vs] : values) {
    ValueList list;
    for (auto& v : vs) list.push_back(make_string(std::move(v)));
    entries.emplace_back(make_string(k), make_list(std::move(list)));
  }
  return make_map(std::move(entries));
}

}  // namespace

Value url_function(Fn fn, const std::vector<Value>& a) {
  std::string why;
  if (fn == Fn::kUrl || fn == Fn::kIsUrl) {
    if (a[0].kind != Kind::kString) return no_overload();
    auto p = parse(a[0].str(), &why);
    if (fn == Fn::kIsUrl) return make_bool(p.has_value());
    if (!p) return make_error("URL parse error during conversion from string: " + why);
    return make_text(Kind::kUrl, std::string(a[0].str()));
  }
  if (a[0].kind != Kind::kUrl) return no_overload();
  auto p = parse(a[0].str(), &why);
  if (!p) return make_error(why);
  switch (fn) {
    case Fn::kUrlScheme:
      return make_string(p->scheme);
    case Fn::kUrlHost:
      return make_string(p->host);
    case Fn::kUrlHostname:
      return make_string(hostname(p->host));
    case Fn::kUrlPort:
      return make_string(port(p->host));
    case Fn::kUrlEscapedPath:
      return make_string(escaped_path(p->path));
    case Fn::kUrlQuery:
      return query_map(p->query);
    default:
      return no_overload();
  }
}

}  // namespace vkube::cel::detail
