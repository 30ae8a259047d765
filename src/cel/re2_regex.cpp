// The regex engine's back end: UTF-8 decoding as Go does it, Thompson construction of a Pike VM
// program from the parsed pattern, the VM itself (all threads advance together over the input,
// one code point at a time: time linear in the input, an explicit stack instead of recursion) and
// the Regex API with its process-wide compile cache.
#include <algorithm>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "compile_cache.h"
#include "re2_regex_internal.h"

namespace vkube::cel {

char32_t decode_utf8(std::string_view s, std::size_t* i) {
  auto c = static_cast<unsigned char>(s[*i]);
  std::size_t width = c < 0x80    ? 1
                      : c >= 0xF8 ? 0
                      : c >= 0xF0 ? 4
                      : c >= 0xE0 ? 3
                      : c >= 0xC2 ? 2
                                  : 0;
  char32_t r = width == 1 ? c : width == 2 ? (c & 0x1F) : width == 3 ? (c & 0x0F) : (c & 0x07);
  bool ok = width != 0 && *i + width <= s.size();
  for (std::size_t j = 1; ok && j < width; ++j) {
    auto cc = static_cast<unsigned char>(s[*i + j]);
    ok = (cc & 0xC0) == 0x80;
    r = (r << 6) | (cc & 0x3F);
  }
  ok = ok && !(width == 3 && (r < 0x800 || (r >= 0xD800 && r <= 0xDFFF))) &&
       !(width == 4 && (r < 0x10000 || r > 0x10FFFF));
  *i += ok ? width : 1;
  return ok ? r : 0xFFFD;
}

void append_utf8(std::string& out, char32_t c) {
  if (c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) c = 0xFFFD;
  if (c < 0x80) {
    out.push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (c >> 6)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (c >> 12)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (c >> 18)));
    out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

namespace re2_detail {
namespace {

// Thompson construction of the Pike VM program.
class RegexCompiler {
 public:
  explicit RegexCompiler(std::vector<RegexInst>* prog) : prog_(prog) {}

  bool emit(const RegexNode& n) {
    if (prog_->size() > kMaxRegexProgram) return false;
    switch (n.kind) {
      case RegexNode::Kind::kEmpty:
        return true;
      case RegexNode::Kind::kChar:
        push({RegexOp::kChar, n.c});
        return true;
      case RegexNode::Kind::kClass:
        push({RegexOp::kClass, 0, n.cls});
        return true;
      case RegexNode::Kind::kAny:
        push({RegexOp::kAny});
        return true;
      case RegexNode::Kind::kAnyNotNL:
        push({RegexOp::kAnyNotNL});
        return true;
      case RegexNode::Kind::kAssert: {
        RegexInst inst{RegexOp::kAssert};
        inst.assert_kind = n.assert_kind;
        push(inst);
        return true;
      }
      case RegexNode::Kind::kConcat:
        for (const auto& s : n.subs) {
          if (!emit(s)) return false;
        }
        return true;
      case RegexNode::Kind::kAlt:
        return emit_alt(n);
      case RegexNode::Kind::kRepeat:
        return emit_repeat(n);
    }
    return false;
  }

 private:
  int push(RegexInst inst) {
    prog_->push_back(inst);
    return static_cast<int>(prog_->size()) - 1;
  }
  int pc() const { return static_cast<int>(prog_->size()); }

  bool emit_alt(const RegexNode& n) {
    std::vector<int> jumps;
    for (std::size_t k = 0; k + 1 < n.subs.size(); ++k) {
      int split = push({RegexOp::kSplit, 0, 0, 0});
      (*prog_)[split].x = pc();
      if (!emit(n.subs[k])) return false;
      jumps.push_back(push({RegexOp::kJmp}));
      (*prog_)[split].y = pc();
    }
    if (!emit(n.subs.back())) return false;
    for (int j : jumps) (*prog_)[j].x = pc();
    return true;
  }

  // Split whose preferred branch is the body when greedy.
  int split_here(bool greedy) {
    int split = push({RegexOp::kSplit});
    if (greedy)
      (*prog_)[split].x = split + 1;
    else
      (*prog_)[split].y = split + 1;
    return split;
  }
  void patch_exit(int split, bool greedy) {
    if (greedy)
      (*prog_)[split].y = pc();
    else
      (*prog_)[split].x = pc();
  }

  bool emit_repeat(const RegexNode& n) {
    const RegexNode& body = n.subs[0];
    for (int k = 0; k < n.min; ++k) {
      if (!emit(body)) return false;
    }
    if (n.max < 0) {
      int split = split_here(n.greedy);
      if (!emit(body)) return false;
      push({RegexOp::kJmp, 0, split});
      patch_exit(split, n.greedy);
      return true;
    }
    std::vector<int> splits;
    for (int k = n.min; k < n.max; ++k) {
      splits.push_back(split_here(n.greedy));
      if (!emit(body)) return false;
    }
    for (int s : splits) patch_exit(s, n.greedy);
    return true;
  }

  std::vector<RegexInst>* prog_;
};

// The Pike VM: all threads advance together over the input, one code point at a time.
class RegexVm {
 public:
  RegexVm(const Regex::Impl& re, std::string_view text)
      : re_(re), text_(text), mark_(re.prog.size(), 0) {}

  // Leftmost-first match at or after `from`; `first_only` stops at any match (for search()).
  bool run(std::size_t from, bool first_only, std::size_t* begin, std::size_t* end) {
    std::vector<Thread> clist, nlist;
    bool matched = false;
    std::size_t pos = from;
    char32_t prev = char_before(from);
    for (;;) {
      std::size_t len = 0;
      char32_t cur = char_at(pos, &len);
      if (!matched) add(clist, 0, pos, prev, cur);
      if (clist.empty()) break;
      ++gen_;
      std::size_t next = pos + len;
      char32_t after = cur == kNoChar ? kNoChar : char_at(next, nullptr);
      for (const Thread& t : clist) {
        const RegexInst& inst = re_.prog[t.pc];
        if (inst.op == RegexOp::kMatch) {
          matched = true;
          *begin = t.start;
          *end = pos;
          if (first_only) {
            stopped_at_ = pos;
            return true;
          }
          break;  // lower-priority threads lose
        }
        if (cur != kNoChar && consumes(inst, cur)) add(nlist, t.pc + 1, t.start, cur, after);
      }
      if (cur == kNoChar) break;
      std::swap(clist, nlist);
      nlist.clear();
      prev = cur;
      pos = next;
    }
    stopped_at_ = pos;
    return matched;
  }

  // The input position where the last run stopped.
  std::size_t stopped_at() const { return stopped_at_; }

 private:
  struct Thread {
    int pc;
    std::size_t start;
  };

  char32_t char_at(std::size_t pos, std::size_t* len) const {
    if (pos >= text_.size()) {
      if (len != nullptr) *len = 0;
      return kNoChar;
    }
    std::size_t i = pos;
    char32_t c = decode_utf8(text_, &i);
    if (len != nullptr) *len = i - pos;
    return c;
  }

  char32_t char_before(std::size_t pos) const {
    if (pos == 0) return kNoChar;
    std::size_t start = pos - 1;
    while (start > 0 && pos - start < 4 &&
           (static_cast<unsigned char>(text_[start]) & 0xC0) == 0x80)
      --start;
    std::size_t i = start;
    char32_t c = decode_utf8(text_, &i);
    return i == pos ? c : 0xFFFD;
  }

  bool consumes(const RegexInst& inst, char32_t c) const {
    switch (inst.op) {
      case RegexOp::kChar:
        return inst.c == c;
      case RegexOp::kClass:
        return re_.classes[inst.x].contains(c);
      case RegexOp::kAny:
        return true;
      case RegexOp::kAnyNotNL:
        return c != '\n';
      default:
        return false;
    }
  }

  static bool holds(RegexAssert a, char32_t prev, char32_t cur) {
    switch (a) {
      case RegexAssert::kBeginLine:
        return prev == kNoChar || prev == '\n';
      case RegexAssert::kEndLine:
        return cur == kNoChar || cur == '\n';
      case RegexAssert::kBeginText:
        return prev == kNoChar;
      case RegexAssert::kEndText:
        return cur == kNoChar;
      case RegexAssert::kWordBoundary:
      case RegexAssert::kNotWordBoundary: {
        bool boundary =
            (prev != kNoChar && is_word_char(prev)) != (cur != kNoChar && is_word_char(cur));
        return boundary == (a == RegexAssert::kWordBoundary);
      }
    }
    return false;
  }

  // Adds the thread at `pc` and everything reachable without consuming input, in priority order.
  void add(std::vector<Thread>& list, int pc, std::size_t start, char32_t prev, char32_t cur) {
    stack_.clear();
    stack_.push_back(pc);
    while (!stack_.empty()) {
      int p = stack_.back();
      stack_.pop_back();
      if (mark_[p] == gen_) continue;
      mark_[p] = gen_;
      const RegexInst& inst = re_.prog[p];
      switch (inst.op) {
        case RegexOp::kJmp:
          stack_.push_back(inst.x);
          break;
        case RegexOp::kSplit:
          stack_.push_back(inst.y);
          stack_.push_back(inst.x);
          break;
        case RegexOp::kAssert:
          if (holds(inst.assert_kind, prev, cur)) stack_.push_back(p + 1);
          break;
        default:
          list.push_back({p, start});
      }
    }
  }

  const Regex::Impl& re_;
  std::string_view text_;
  std::vector<uint32_t> mark_;
  uint32_t gen_ = 1;
  std::vector<int> stack_;
  std::size_t stopped_at_ = 0;
};

}  // namespace
}  // namespace re2_detail

using re2_detail::kMaxRegexProgram;
using re2_detail::RegexOp;
using re2_detail::RegexVm;

Regex::Regex(std::unique_ptr<const Impl> impl) : impl_(std::move(impl)) {}
Regex::~Regex() = default;

std::shared_ptr<const Regex> Regex::compile(std::string_view pattern, std::string* error) {
  std::string scratch;
  if (error == nullptr) error = &scratch;
  auto impl = std::make_unique<Impl>();
  re2_detail::RegexNode root;
  if (!re2_detail::parse_regex(pattern, &root, &impl->classes, error)) return nullptr;
  if (!re2_detail::RegexCompiler(&impl->prog).emit(root) || impl->prog.size() > kMaxRegexProgram) {
    *error = "error parsing regexp: expression too large";
    return nullptr;
  }
  impl->prog.push_back({RegexOp::kMatch});
  return std::make_shared<const Regex>(std::move(impl));
}

std::shared_ptr<const Regex> Regex::compile_cached(std::string_view pattern, std::string* error) {
  static CompileCache<Regex> cache(1024);
  return cache.get(pattern, error,
                   [](std::string_view p, std::string* err) { return compile(p, err); });
}

bool Regex::find(std::string_view text, std::size_t from, std::size_t* begin, std::size_t* end,
                 std::size_t* scanned) const {
  RegexVm vm(*impl_, text);
  bool found = vm.run(from, false, begin, end);
  if (scanned != nullptr) *scanned = vm.stopped_at() - from;
  return found;
}

bool Regex::search(std::string_view text) const {
  std::size_t b = 0, e = 0;
  return RegexVm(*impl_, text).run(0, true, &b, &e);
}

std::size_t Regex::program_size() const {
  return impl_->prog.size();
}

}  // namespace vkube::cel
