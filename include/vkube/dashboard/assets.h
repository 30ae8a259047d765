// The GPU-pool dashboard's files (web/dashboard/: index.html, its script and
// style), built into the binary so that `vkube host` and `vkube dashboard`
// serve the page with nothing else installed and nothing fetched from a CDN.
#pragma once

#include <string_view>
#include <vector>

namespace vkube::dashboard {

struct Asset {
  std::string_view name;          // "index.html", "dashboard.js": a file name, no folders
  std::string_view content_type;  // "text/html; charset=utf-8", from the name's extension
  std::string_view bytes;         // the file as built; static storage
};

// Every embedded file, sorted by name. Thread-safe (static data).
const std::vector<Asset>& assets();
// The file `name` ("index.html"), or null when none has that name.
const Asset* find_asset(std::string_view name);

}  // namespace vkube::dashboard
