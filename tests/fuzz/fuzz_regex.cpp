// The RE2-syntax regex engine behind CEL's matches()/find()/findAll() and the
// `pattern` keyword of CRD schemas, where tenants supply both the pattern and
// the text. Input: "<pattern>\0<text>". Compilation answers a program or Go's
// error; matching is consistent (search agrees with find, matches lie inside
// the text) and findAll-style stepping always advances.
#include <memory>
#include <string>

#include "fuzz_util.h"
#include "vkube/cel/re2_regex.h"

using vkube::cel::Regex;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto [pattern, text] = vkube::fuzz::split2(vkube::fuzz::as_text(data, size));
  std::string error;
  std::shared_ptr<const Regex> re = Regex::compile(pattern, &error);
  if (re == nullptr) {
    FUZZ_CHECK(error.starts_with("error parsing regexp: "));
    return 0;
  }
  FUZZ_CHECK(error.empty());
  size_t begin = 0, end = 0, scanned = 0;
  bool found = re->find(text, 0, &begin, &end, &scanned);
  FUZZ_CHECK(found == re->search(text));
  if (found) FUZZ_CHECK(begin <= end && end <= text.size());
  // findAll: from each match's end, stepping one code point past an empty
  // match, as CEL's findAll does.
  size_t from = 0;
  for (int n = 0; n < 64 && from <= text.size(); ++n) {
    if (!re->find(text, from, &begin, &end)) break;
    FUZZ_CHECK(begin >= from && begin <= end && end <= text.size());
    if (end > begin) {
      from = end;
    } else {
      if (end >= text.size()) break;
      size_t next = end;
      (void)vkube::cel::decode_utf8(text, &next);
      FUZZ_CHECK(next > end);
      from = next;
    }
  }
  return 0;
}
