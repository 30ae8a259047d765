// Regular expressions in RE2 syntax, as Go's regexp package accepts them, for the places kube
// runs user-supplied patterns on user-supplied text: CEL's matches()/find()/findAll() and the
// OpenAPI `pattern` keyword of CRD schemas. Backed by libre2 (Debian's libre2-dev), the library
// Go's regexp reimplements: matching takes time linear in the input and never recurses over it,
// so no pattern/input pair can hang the server or exhaust its stack (std::regex can do both).
//
// As Go: leftmost-first matching over UTF-8, (?P<name>...) and (?<name>...), Unicode case
// folding, errors worded as regexp.Compile words them ("error parsing regexp: missing closing ):
// `(`"), \C refused, groups nested at most 1000 deep. Unlike Go, Unicode classes (\p{..}, \pL)
// are refused with an error that says "not supported by vkube", as vkube always has.
//
// Implementation: src/cel/re2_regex.cpp.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace vkube::cel {

// UTF-8 as Go decodes it: the code point at byte *i (U+FFFD for an invalid byte, advancing one
// byte), advancing *i. Exported because callers stepping through text between matches (findAll
// after an empty match) must step exactly as the engine does.
char32_t decode_utf8(std::string_view s, std::size_t* i);
// Appends `c` in UTF-8 (U+FFFD for surrogates and values past U+10FFFF).
void append_utf8(std::string& out, char32_t c);

// A compiled pattern. Immutable, so one instance may be matched from many threads at once.
class Regex {
 public:
  struct Impl;
  explicit Regex(std::unique_ptr<const Impl> impl);
  ~Regex();

  // nullptr and Go's wording ("error parsing regexp: missing closing ): `(`") in `error` (may be
  // null) when invalid, or when the program would exceed RE2's memory budget ("error parsing
  // regexp: expression too large").
  static std::shared_ptr<const Regex> compile(std::string_view pattern, std::string* error);
  // compile() through a process-wide cache keyed by the pattern text: bounded (it is emptied
  // when full, so hostile streams of distinct patterns cannot grow it) and thread-safe. Failed
  // compilations are cached too, with their error.
  static std::shared_ptr<const Regex> compile_cached(std::string_view pattern, std::string* error);

  // regexp.MatchString: whether the pattern matches anywhere in `text` (stops at the first match).
  bool search(std::string_view text) const;
  // The leftmost-first match at or after byte `from`, as Go's FindStringIndex; [begin, end) are
  // byte offsets. `scanned` (optional) receives how many bytes of input the search stepped over
  // (to the match's end, or to the end of the text), for callers that charge the work to a budget.
  bool find(std::string_view text, std::size_t from, std::size_t* begin, std::size_t* end,
            std::size_t* scanned = nullptr) const;
  // Instructions in RE2's program: a measure of the work matching does per input byte.
  std::size_t program_size() const;

 private:
  std::unique_ptr<const Impl> impl_;
};

}  // namespace vkube::cel
