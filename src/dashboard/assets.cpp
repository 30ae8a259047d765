#include "vkube/dashboard/assets.h"

#include <algorithm>

#include "embedded.h"

namespace vkube::dashboard {

namespace {

// The types embed_assets.cmake takes files of (it skips other names).
std::string_view content_type(std::string_view name) {
  struct Type {
    std::string_view extension, type;
  };
  static constexpr Type kTypes[] = {
      {".html", "text/html; charset=utf-8"},
      {".js", "text/javascript; charset=utf-8"},
      {".css", "text/css; charset=utf-8"},
      {".svg", "image/svg+xml"},
      {".png", "image/png"},
      {".ico", "image/x-icon"},
      {".json", "application/json"},
      {".txt", "text/plain; charset=utf-8"},
  };
  for (const Type& t : kTypes)
    if (name.ends_with(t.extension)) return t.type;
  return "application/octet-stream";
}

}  // namespace

const std::vector<Asset>& assets() {
  static const std::vector<Asset> kAssets = [] {
    std::vector<Asset> out;
    for (const detail::EmbeddedFile* f = detail::kEmbeddedFiles; f->name != nullptr; ++f)
      out.push_back({f->name, content_type(f->name),
                     std::string_view(f->begin, static_cast<size_t>(f->end - f->begin))});
    std::sort(out.begin(), out.end(),
              [](const Asset& a, const Asset& b) { return a.name < b.name; });
    return out;
  }();
  return kAssets;
}

const Asset* find_asset(std::string_view name) {
  const std::vector<Asset>& all = assets();
  auto it = std::lower_bound(all.begin(), all.end(), name,
                             [](const Asset& a, std::string_view n) { return a.name < n; });
  return it != all.end() && it->name == name ? &*it : nullptr;
}

}  // namespace vkube::dashboard
