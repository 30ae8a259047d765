// Field selectors as k8s.io/apimachinery pkg/fields parses them (1.32):
// comma-separated terms split at the first "!=", "==" or "=", values
// backslash-escaped, terms sorted by their text, error messages verbatim.
#include <algorithm>
#include <string>
#include <vector>

#include "go_format.h"
#include "vkube/api/selector.h"

namespace vkube::api {
namespace {

// Splits at commas not escaped by a backslash; escapes stay in the terms.
std::vector<std::string_view> split_terms(std::string_view text) {
  std::vector<std::string_view> terms;
  if (text.empty()) return terms;
  std::size_t start = 0;
  bool escaped = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (escaped) {
      escaped = false;
    } else if (text[i] == '\\') {
      escaped = true;
    } else if (text[i] == ',') {
      terms.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  terms.push_back(text.substr(start));
  return terms;
}

struct Term {
  std::string_view field;
  std::string_view op;
  std::string_view value;  // still escaped
};

// The field has no escapes, so the first operator found splits the term;
// at one position "!=" and "==" win over "=".
std::optional<Term> split_term(std::string_view term) {
  for (std::size_t i = 0; i < term.size(); ++i) {
    std::string_view rest = term.substr(i);
    for (std::string_view op : {"!=", "==", "="}) {
      if (rest.starts_with(op)) return Term{term.substr(0, i), op, rest.substr(op.size())};
    }
  }
  return std::nullopt;
}

// fields.UnescapeValue: "\\", "\," and "\=" are the only escapes, and a bare
// ',' or '=' is an error. Go walks the value by code point, so an escaped
// multi-byte character is quoted whole and, once anything is unescaped,
// invalid UTF-8 bytes come out as U+FFFD.
Result<std::string> unescape_value(std::string_view s) {
  if (s.find_first_of("\\,=") == std::string_view::npos) return std::string(s);
  std::string out;
  out.reserve(s.size());
  bool escaped = false;
  while (!s.empty()) {
    go::Rune r = go::decode_rune(s);
    s.remove_prefix(r.width);
    if (escaped) {
      if (r.value != '\\' && r.value != ',' && r.value != '=') {
        std::string seq = "\\";
        go::append_utf8(seq, r.value);
        return Status::bad_request("invalid field selector: invalid escape sequence: " + seq);
      }
      out += static_cast<char>(r.value);
      escaped = false;
    } else if (r.value == '\\') {
      escaped = true;
    } else if (r.value == ',' || r.value == '=') {
      // Go prints the rune with %v, which is its code: 44 or 61.
      return Status::bad_request("invalid field selector: unescaped character in value: " +
                                 std::to_string(static_cast<int>(r.value)));
    } else {
      go::append_utf8(out, r.value);
    }
  }
  if (escaped) return Status::bad_request("invalid field selector: invalid escape sequence: \\");
  return out;
}

std::string escape_value(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c == '\\' || c == ',' || c == '=') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

Result<FieldSelector> FieldSelector::parse(std::string_view text) {
  std::vector<std::string_view> terms = split_terms(text);
  std::sort(terms.begin(), terms.end());
  FieldSelector selector;
  for (std::string_view term : terms) {
    if (term.empty()) continue;
    std::optional<Term> t = split_term(term);
    if (!t) {
      return Status::bad_request("invalid selector: '" + std::string(text) +
                                 "'; can't understand '" + std::string(term) + "'");
    }
    Result<std::string> value = unescape_value(t->value);
    if (!value) return value.status();
    // Kubernetes drops a term whose field and value are both empty ("=").
    if (t->field.empty() && value->empty()) continue;
    selector.reqs_.push_back({std::string(t->field), t->op != "!=", std::move(value).value()});
  }
  return selector;
}

bool FieldSelector::matches(
    const std::function<std::optional<std::string>(std::string_view)>& get) const {
  return std::all_of(reqs_.begin(), reqs_.end(), [&](const FieldRequirement& r) {
    return (get(r.field).value_or("") == r.value) == r.equals;
  });
}

std::string FieldSelector::to_string() const {
  std::string out;
  for (const FieldRequirement& r : reqs_) {
    if (!out.empty()) out += ',';
    out += r.field;
    out += r.equals ? "=" : "!=";
    out += escape_value(r.value);
  }
  return out;
}

}  // namespace vkube::api
