// The table the build writes (embed_assets.cmake): the dashboard's files as
// they were in web/dashboard/ when the binary was built.
#pragma once

namespace vkube::dashboard::detail {

struct EmbeddedFile {
  const char* name;  // "index.html"; null ends the table
  const char* begin;
  const char* end;
};

extern const EmbeddedFile kEmbeddedFiles[];

}  // namespace vkube::dashboard::detail
