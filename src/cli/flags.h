// A small command-line parser shared by the vkube subcommands.
//
//   FlagSet f("backup", "Copy a store ...");
//   auto& dir = f.add_string("data-dir", "", "store directory");
//   if (auto st = f.parse(args); !st.is_ok()) ...
//
// Accepts --name=value, --name value, and --flag / --flag=false for booleans.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "vkube/common/status.h"

namespace vkube::cli {

class FlagSet {
 public:
  FlagSet(std::string command, std::string summary, std::string usage_args = "");

  std::string& add_string(const std::string& name, std::string def, std::string help);
  bool& add_bool(const std::string& name, bool def, std::string help);
  int64_t& add_int(const std::string& name, int64_t def, std::string help);

  // Parses args (without the program and command names). kBadRequest with a
  // message naming the flag on unknown flags or bad values. Sets help() when
  // -h/--help is given. Non-flag arguments go to positional().
  Status parse(const std::vector<std::string>& args);
  bool help() const { return help_; }
  const std::vector<std::string>& positional() const { return positional_; }
  bool was_set(const std::string& name) const;
  std::string usage() const;

 private:
  struct Flag {
    enum class Kind { kString, kBool, kInt } kind;
    std::string help;
    std::string def;
    std::string* s = nullptr;
    bool* b = nullptr;
    int64_t* i = nullptr;
    bool set = false;
  };
  Status assign(Flag& f, const std::string& name, const std::string& value);

  std::string command_, summary_, usage_args_;
  std::map<std::string, Flag> flags_;
  std::vector<std::unique_ptr<std::string>> strings_;
  std::vector<std::unique_ptr<bool>> bools_;
  std::vector<std::unique_ptr<int64_t>> ints_;
  std::vector<std::string> positional_;
  bool help_ = false;
};

}  // namespace vkube::cli
