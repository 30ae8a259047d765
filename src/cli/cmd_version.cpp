#include <cstdio>

#include "command.h"
#include "version.h"

namespace vkube::cli {

int run_version(const Args& args) {
  FlagSet flags("version", "Print the vkube version and the Kubernetes API version it serves.");
  auto log_flags = add_log_flags(flags);
  bool& short_form = flags.add_bool("short", false, "print only the version number");
  if (int rc = parse_or_exit(flags, log_flags, args); rc >= 0) return rc;
  if (short_form) {
    std::printf("%s\n", kVersion);
  } else {
    std::printf("vkube %s (git %s, built with %s)\n", kVersion, kGitCommit, kCompiler);
  }
  return 0;
}

}  // namespace vkube::cli
