#include "flags.h"

#include <charconv>
#include <sstream>

namespace vkube::cli {

FlagSet::FlagSet(std::string command, std::string summary, std::string usage_args)
    : command_(std::move(command)), summary_(std::move(summary)), usage_args_(std::move(usage_args)) {}

std::string& FlagSet::add_string(const std::string& name, std::string def, std::string help) {
  strings_.push_back(std::make_unique<std::string>(def));
  flags_[name] = Flag{Flag::Kind::kString, std::move(help), def, strings_.back().get()};
  return *strings_.back();
}

bool& FlagSet::add_bool(const std::string& name, bool def, std::string help) {
  bools_.push_back(std::make_unique<bool>(def));
  Flag f{Flag::Kind::kBool, std::move(help), def ? "true" : "false"};
  f.b = bools_.back().get();
  flags_[name] = f;
  return *bools_.back();
}

int64_t& FlagSet::add_int(const std::string& name, int64_t def, std::string help) {
  ints_.push_back(std::make_unique<int64_t>(def));
  Flag f{Flag::Kind::kInt, std::move(help), std::to_string(def)};
  f.i = ints_.back().get();
  flags_[name] = f;
  return *ints_.back();
}

Status FlagSet::assign(Flag& f, const std::string& name, const std::string& value) {
  f.set = true;
  switch (f.kind) {
    case Flag::Kind::kString: *f.s = value; return Status::ok();
    case Flag::Kind::kBool:
      if (value == "true" || value == "1" || value == "t" || value == "True" || value == "TRUE") *f.b = true;
      else if (value == "false" || value == "0" || value == "f" || value == "False" || value == "FALSE") *f.b = false;
      else return Status::bad_request("--" + name + ": '" + value + "' is not a boolean");
      return Status::ok();
    case Flag::Kind::kInt: {
      auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), *f.i);
      if (ec != std::errc() || p != value.data() + value.size())
        return Status::bad_request("--" + name + ": '" + value + "' is not an integer");
      return Status::ok();
    }
  }
  return Status::ok();
}

Status FlagSet::parse(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-h" || a == "--help") {
      help_ = true;
      continue;
    }
    if (a == "--") {
      positional_.insert(positional_.end(), args.begin() + static_cast<long>(i) + 1, args.end());
      break;
    }
    if (a.size() < 2 || a[0] != '-') {
      positional_.push_back(a);
      continue;
    }
    std::string body = a.substr(a[1] == '-' ? 2 : 1);
    std::string name = body, value;
    bool has_value = false;
    if (auto eq = body.find('='); eq != std::string::npos) {
      name = body.substr(0, eq);
      value = body.substr(eq + 1);
      has_value = true;
    }
    auto it = flags_.find(name);
    if (it == flags_.end())
      return Status::bad_request("unknown flag --" + name + " for 'vkube " + command_ +
                                 "' (see vkube " + command_ + " --help)");
    if (!has_value) {
      if (it->second.kind == Flag::Kind::kBool) {
        value = "true";
      } else if (i + 1 < args.size()) {
        value = args[++i];
      } else {
        return Status::bad_request("flag --" + name + " needs a value");
      }
    }
    VKUBE_RETURN_IF_ERROR(assign(it->second, name, value));
  }
  return Status::ok();
}

bool FlagSet::was_set(const std::string& name) const {
  auto it = flags_.find(name);
  return it != flags_.end() && it->second.set;
}

std::string FlagSet::usage() const {
  std::ostringstream out;
  out << summary_ << "\n\nUsage:\n  vkube " << command_ << " [flags]";
  if (!usage_args_.empty()) out << " " << usage_args_;
  out << "\n\nFlags:\n";
  for (const auto& [name, f] : flags_) {
    std::string left = "  --" + name;
    if (f.kind != Flag::Kind::kBool) left += f.kind == Flag::Kind::kInt ? " int" : " string";
    out << left;
    out << std::string(left.size() < 30 ? 30 - left.size() : 1, ' ') << f.help;
    if (!f.def.empty() && f.def != "false") out << " (default " << f.def << ")";
    out << "\n";
  }
  out << "  -h, --help                  help for " << command_ << "\n";
  return out.str();
}

}  // namespace vkube::cli
