// Regular expressions in RE2 syntax, as Go's regexp package accepts them, for the places kube
// runs user-supplied patterns on user-supplied text: CEL's matches()/find()/findAll() and the
// OpenAPI `pattern` keyword of CRD schemas. Patterns compile to a Pike VM over code points:
// matching takes time linear in the input (times the program size, which is bounded), never
// backtracks and never recurses over the input, so no pattern/input pair can hang the server or
// exhaust its stack (std::regex can do both).
//
// Supported: literals, ., classes ([a-z], [^...], [[:alpha:]], \d \s \w and negations), anchors
// (^ $ \A \z \b \B), groups ((...), (?:...), (?P<name>...), (?<name>...)), alternation,
// repetition (* + ? {n} {n,} {n,m}, lazy forms), flags (?imsU) and \Q...\E. Not supported:
// Unicode classes (\p{..}, \pL) and Unicode case folding ((?i) folds ASCII letters only); a
// pattern using \p fails to compile with an error that says "not supported by vkube".
//
// Files: re2_regex_parse.cpp (pattern syntax to a tree, Go's error wording), re2_regex.cpp (UTF-8,
// the compiler, the VM and the compile cache); re2_regex_internal.h is private to both.
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
  // null) when invalid, or when the program would exceed its size bound ("error parsing regexp:
  // expression too large").
  static std::shared_ptr<const Regex> compile(std::string_view pattern, std::string* error);
  // compile() through a process-wide cache keyed by the pattern text: bounded (it is emptied
  // when full, so hostile streams of distinct patterns cannot grow it) and thread-safe. Failed
  // compilations are cached too, with their error.
  static std::shared_ptr<const Regex> compile_cached(std::string_view pattern, std::string* error);

  // regexp.MatchString: whether the pattern matches anywhere in `text` (stops at the first match).
  bool search(std::string_view text) const;
  // The leftmost-first match at or after byte `from`, as Go's FindStringIndex; [begin, end) are
  // byte offsets. `scanned` (optional) receives how many bytes of input the search stepped over,
  // for callers that charge the work to a budget.
  bool find(std::string_view text, std::size_t from, std::size_t* begin, std::size_t* end,
            std::size_t* scanned = nullptr) const;
  // Instructions in the program: matching costs at most this much per input code point.
  std::size_t program_size() const;

 private:
  std::unique_ptr<const Impl> impl_;
};

}  // namespace vkube::cel
