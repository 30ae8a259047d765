// Network string formats of CRD schemas (kube-openapi strfmt): hostname, ipv4, ipv6, cidr,
// mac, email and uri, written after the Go parsers kube uses (net.ParseIP, net.ParseMAC,
// mail.ParseAddress, url.ParseRequestURI) rather than as regexes.
#include <algorithm>
#include <cctype>
#include <regex>

#include "structural_internal.h"

namespace vkube::apiserver::crd::detail {
namespace {

// Dotted IPv4; `sloppy` accepts leading zeros as Go before 1.17 (netutils.ParseIPSloppy) did.
bool parse_ipv4(std::string_view s, bool sloppy) {
  int fields = 0;
  for (std::size_t start = 0; fields < 4; ++fields) {
    std::size_t dot = s.find('.', start);
    std::string_view f = s.substr(start, dot == std::string_view::npos ? s.npos : dot - start);
    if (f.empty() || f.size() > 3 || !all_of(f, is_digit) || digits(f) > 255) return false;
    if (!sloppy && f.size() > 1 && f[0] == '0') return false;
    if (dot == std::string_view::npos) return fields == 3;
    start = dot + 1;
  }
  return false;
}

// net.ParseIP's IPv6 form: hex groups, one "::", an optional dotted IPv4 tail, no zone.
bool parse_ipv6(std::string_view s, bool sloppy) {
  int groups = 0;
  bool ellipsis = false;
  if (s.substr(0, 2) == "::") {
    ellipsis = true;
    s.remove_prefix(2);
  }
  while (!s.empty()) {
    std::size_t n = 0;
    while (n < s.size() && n < 5 && is_hex(s[n])) ++n;
    if (n < s.size() && s[n] == '.') {
      if (!parse_ipv4(s, sloppy)) return false;
      groups += 2;
      s = {};
      break;
    }
    if (n == 0 || n > 4) return false;
    ++groups;
    s.remove_prefix(n);
    if (s.empty()) break;
    if (s[0] != ':' || s.size() == 1) return false;
    s.remove_prefix(1);
    if (s[0] == ':') {
      if (ellipsis) return false;
      ellipsis = true;
      s.remove_prefix(1);
    }
  }
  return ellipsis ? groups < 8 : groups == 8;
}

bool parse_ip(std::string_view s, bool sloppy) {
  return s.find(':') != std::string_view::npos ? parse_ipv6(s, sloppy) : parse_ipv4(s, sloppy);
}

bool valid_escapes(std::string_view s) {
  for (std::size_t i = s.find('%'); i != s.npos; i = s.find('%', i + 1)) {
    if (i + 2 >= s.size() + 0 || !is_hex(s[i + 1]) || !is_hex(s[i + 2])) return false;
  }
  return true;
}

bool valid_host(std::string_view host) {
  std::size_t at = host.rfind('@');
  if (at != host.npos) host.remove_prefix(at + 1);
  std::string_view port;
  if (!host.empty() && host[0] == '[') {
    std::size_t close = host.find(']');
    if (close == host.npos) return false;
    port = host.substr(close + 1);
    if (!port.empty() && port[0] != ':') return false;
    host = host.substr(1, close - 1);
  } else if (std::size_t colon = host.rfind(':'); colon != host.npos) {
    port = host.substr(colon);
    host = host.substr(0, colon);
  }
  if (!port.empty() && !all_of(port.substr(1), is_digit)) return false;
  static constexpr std::string_view kBad = " /?#@{}|\\^`\"<>";
  return host.find_first_of(kBad) == host.npos && valid_escapes(host);
}

}  // namespace

// strfmt.IsHostname. Its regex allows Unicode letters and symbols (\p{L}, \p{S}); every
// non-ASCII character is taken for one here.
bool is_hostname(std::string_view s) {
  std::string ascii;
  for (std::size_t i = 0; i < s.size(); ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80)
      ascii += static_cast<char>(c);
    else if ((c & 0xC0) != 0x80)
      ascii += 'a';
  }
  static const std::string kL = "[a-zA-Z0-9$+<=>^`|~]";
  static const std::regex kHostname("^(" + kL + "((-?" + kL + "{0,62})?)|(" + kL + "(([-" +
                                    kL.substr(1, kL.size() - 2) + "]{0,61}" + kL +
                                    ")?)(\\.)){1,}([a-zA-Z]){2,63})$");
  if (s.size() > 255 || !std::regex_search(ascii, kHostname)) return false;
  for (std::size_t start = 0;;) {
    std::size_t dot = s.find('.', start);
    if ((dot == std::string_view::npos ? s.size() : dot) - start > 63) return false;
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

bool is_ipv4(std::string_view s) {
  return parse_ip(s, true) && s.find('.') != s.npos;
}
bool is_ipv6(std::string_view s) {
  return parse_ip(s, false) && s.find(':') != s.npos;
}

bool is_cidr(std::string_view s) {
  std::size_t slash = s.find('/');
  if (slash == std::string_view::npos || !parse_ip(s.substr(0, slash), true)) return false;
  std::string_view bits = s.substr(slash + 1);
  if (bits.empty() || bits.size() > 3 || !all_of(bits, is_digit)) return false;
  return digits(bits) <= (s.substr(0, slash).find(':') != s.npos ? 128 : 32);
}

// net.ParseMAC: 6, 8 or 20 octets as xx:xx.., xx-xx.. or xxxx.xxxx...
bool is_mac(std::string_view s) {
  bool dotted = s.size() > 4 && s[4] == '.';
  std::size_t group = dotted ? 4 : 2;
  char sep = dotted ? '.' : s.size() > 2 ? s[2] : ':';
  if ((sep != ':' && sep != '-' && sep != '.') || (s.size() + 1) % (group + 1) != 0) return false;
  std::size_t n = (s.size() + 1) / (group + 1);
  std::size_t octets = n * group / 2;
  if (octets != 6 && octets != 8 && octets != 20) return false;
  for (std::size_t i = 0; i < n; ++i) {
    std::string_view g = s.substr(i * (group + 1), group);
    if (!all_of(g, is_hex) || (i + 1 < n && s[i * (group + 1) + group] != sep)) return false;
  }
  return true;
}

// mail.ParseAddress, approximately: "addr" or "Display Name <addr>" with a dot-atom or quoted
// local part and a dot-atom or literal domain (UTF-8 allowed as Go allows it).
bool is_email(std::string_view s) {
  static const std::string kAtext = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~\\x80-\\xff-]+";
  static const std::string kAddr = "(" + kAtext + "(\\." + kAtext + ")*|\"[^\"\\\\]*\")@(" +
                                   kAtext + "(\\." + kAtext + ")*|\\[[^\\[\\]\\\\]*\\])";
  static const std::regex kEmail("^(" + kAddr + "|([^<>\"]*|\"[^\"]*\")\\s*<" + kAddr + ">)$");
  // std::regex recurses per character, so a long value would exhaust the stack; no address
  // is longer than this (RFC 5321 allows 254 characters in a path).
  if (s.size() > 1024) return false;
  std::string text(s);
  return std::regex_search(text, kEmail);
}

// url.ParseRequestURI: an absolute URI (scheme:...) or an absolute path, no control bytes.
bool is_uri(std::string_view s) {
  if (s.empty()) return false;
  if (std::any_of(s.begin(), s.end(),
                  [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7F; })) {
    return false;
  }
  if (s == "*") return true;
  std::string_view rest = s;
  bool scheme = false;
  if (std::isalpha(static_cast<unsigned char>(s[0]))) {
    std::size_t i =
        s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+-.");
    if (i != s.npos && s[i] == ':') {
      scheme = true;
      rest = s.substr(i + 1);
    }
  } else if (s[0] == ':') {
    return false;  // "missing protocol scheme"
  }
  rest = rest.substr(0, rest.find('?'));
  if (rest.empty() || rest[0] != '/') return scheme;
  if (scheme && rest.substr(0, 2) == "//") {
    std::string_view authority = rest.substr(2);
    std::size_t slash = authority.find('/');
    if (!valid_host(authority.substr(0, slash))) return false;
    rest = slash == authority.npos ? std::string_view() : authority.substr(slash);
  }
  return valid_escapes(rest);
}

}  // namespace vkube::apiserver::crd::detail
