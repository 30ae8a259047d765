#include "names.h"

#include "vkube/dns/message.h"

namespace vkube::dns {

namespace {

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

}  // namespace

void append_label_text(std::string_view bytes, std::string* out) {
  for (char ch : bytes) {
    auto c = static_cast<unsigned char>(ch);
    if (c == '.' || c == '\\') {
      out->push_back('\\');
      out->push_back(ch);
    } else if (c <= ' ' || c >= 0x7f) {
      out->push_back('\\');
      out->push_back(static_cast<char>('0' + c / 100));
      out->push_back(static_cast<char>('0' + c / 10 % 10));
      out->push_back(static_cast<char>('0' + c % 10));
    } else {
      out->push_back(ch);
    }
  }
}

Result<std::vector<std::string>> split_name(std::string_view text) {
  std::vector<std::string> labels;
  if (text.empty() || text == ".") return labels;
  std::string label;
  size_t wire = 1;  // the root's zero byte
  auto finish = [&]() -> Status {
    if (label.empty()) return Status::invalid("empty label in name \"" + std::string(text) + "\"");
    if (label.size() > kMaxLabel)
      return Status::invalid("label longer than 63 bytes in \"" + std::string(text) + "\"");
    wire += label.size() + 1;
    labels.push_back(std::move(label));
    label.clear();
    return Status::ok();
  };
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '.') {
      VKUBE_RETURN_IF_ERROR(finish());
      // A trailing dot ends the name.
      if (i + 1 == text.size()) break;
      continue;
    }
    if (c != '\\') {
      label.push_back(c);
      continue;
    }
    if (i + 1 >= text.size()) return Status::invalid("name ends in an escape");
    if (is_digit(text[i + 1])) {
      if (i + 3 >= text.size() || !is_digit(text[i + 2]) || !is_digit(text[i + 3]))
        return Status::invalid("bad \\DDD escape");
      int v = (text[i + 1] - '0') * 100 + (text[i + 2] - '0') * 10 + (text[i + 3] - '0');
      if (v > 255) return Status::invalid("\\DDD escape over 255");
      label.push_back(static_cast<char>(v));
      i += 3;
    } else {
      label.push_back(text[i + 1]);
      i += 1;
    }
  }
  if (!label.empty()) VKUBE_RETURN_IF_ERROR(finish());
  if (wire > kMaxName) return Status::invalid("name longer than 255 bytes");
  return labels;
}

std::string lower(std::string_view name) {
  std::string out(name);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

std::string canonical(std::string_view name) {
  if (!name.empty() && name.back() == '.' && !(name.size() >= 2 && name[name.size() - 2] == '\\'))
    name.remove_suffix(1);
  return lower(name);
}

}  // namespace vkube::dns
