// Lookup's view of one name, shared by lookup.cpp and lookup_records.cpp.
#pragma once

#include <vector>

#include "vkube/dns/lookup.h"

namespace vkube::dns {

struct Lookup::Node {
  bool exists = false;
  std::vector<Record> records;  // of every type; owner names are the name as asked
};

}  // namespace vkube::dns
