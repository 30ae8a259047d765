// kube-apiserver's static token file (--token-auth-file), read as Go's
// encoding/csv reads it: comma-separated, double-quoted fields with ""
// escapes, leading spaces of a field ignored, at least three fields a line.
#include <fstream>
#include <sstream>

#include "vkube/apiserver/apiserver.h"
#include "vkube/common/log.h"

namespace vkube::apiserver {

namespace {

// One CSV record; nullopt on an unterminated quoted field.
std::optional<std::vector<std::string>> csv_fields(std::string_view line) {
  std::vector<std::string> fields;
  size_t i = 0;
  while (true) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    std::string field;
    if (i < line.size() && line[i] == '"') {
      ++i;
      bool closed = false;
      while (i < line.size()) {
        if (line[i] == '"') {
          if (i + 1 < line.size() && line[i + 1] == '"') {
            field += '"';
            i += 2;
            continue;
          }
          ++i;
          closed = true;
          break;
        }
        field += line[i++];
      }
      if (!closed) return std::nullopt;
      // Anything between the closing quote and the comma belongs to it.
      while (i < line.size() && line[i] != ',') field += line[i++];
    } else {
      while (i < line.size() && line[i] != ',') field += line[i++];
    }
    fields.push_back(std::move(field));
    if (i >= line.size()) break;
    ++i;  // the comma
  }
  return fields;
}

std::vector<std::string> split_groups(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string g; std::getline(in, g, ',');) {
    size_t b = g.find_first_not_of(" \t");
    size_t e = g.find_last_not_of(" \t");
    if (b != std::string::npos) out.push_back(g.substr(b, e - b + 1));
  }
  return out;
}

}  // namespace

Result<std::map<std::string, UserInfo>> parse_token_file(std::string_view text,
                                                         const std::string& path) {
  std::map<std::string, UserInfo> tokens;
  if (text.starts_with("\xEF\xBB\xBF")) text.remove_prefix(3);  // a UTF-8 byte order mark
  size_t line_no = 0;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    const std::string where = "token file '" + path + "' line " + std::to_string(line_no);
    auto fields = csv_fields(line);
    if (!fields) return Status::invalid(where + ": unterminated quoted field");
    if (fields->size() < 3)
      return Status::invalid(where +
                             ": must have at least 3 columns (token, user name, user uid), found " +
                             std::to_string(fields->size()));
    const std::string& token = (*fields)[0];
    if (token.empty()) return Status::invalid(where + ": empty token");
    if ((*fields)[1].empty()) return Status::invalid(where + ": empty user name");
    UserInfo user{(*fields)[1], {}, (*fields)[2]};
    if (fields->size() > 3) user.groups = split_groups((*fields)[3]);
    if (tokens.contains(token))
      VKUBE_LOG(warn, "duplicate token in token file, the later line wins", {"file", path},
                {"line", line_no});
    tokens[token] = std::move(user);
  }
  return tokens;
}

Result<std::map<std::string, UserInfo>> load_token_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::unavailable("cannot read token file '" + path + "'");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_token_file(text.str(), path);
}

}  // namespace vkube::apiserver
