// metadata.managedFields: who owns which fields of an object, and how a
// write moves ownership (kube-apiserver's field manager).
//
//   Update (create, update, non-apply patch): the writer takes every field
//   it added or changed, away from the other managers; removed fields leave
//   every manager. Never a conflict.
//   Apply (apply.h): the applier owns exactly what it applied; it conflicts
//   with other owners of fields whose values it would change.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "fieldset.h"
#include "typed.h"
#include "vkube/common/status.h"

namespace vkube::apiserver::apply {

inline constexpr const char* kOperationApply = "Apply";
inline constexpr const char* kOperationUpdate = "Update";

// One metav1.ManagedFieldsEntry.
struct ManagedEntry {
  std::string manager;
  std::string operation;  // "Apply" or "Update"
  std::string api_version;
  std::string subresource;
  std::string time;  // RFC 3339, "" when absent
  FieldSet fields;

  // kube's manager identity: manager, operation and subresource, and for
  // Update operations the apiVersion.
  bool same_manager(const ManagedEntry& o) const {
    return manager == o.manager && operation == o.operation && subresource == o.subresource &&
           (operation == kOperationApply || api_version == o.api_version);
  }
  // As kube names a manager in a conflict: "kubectl" with subresource
  // "status" using apps/v1 (apiVersion for Update operations only).
  std::string describe() const;
};
using ManagedFields = std::vector<ManagedEntry>;

// Decodes a managedFields value (null or absent: none). kBadRequest for an
// entry that is not an object, an operation other than Apply and Update, a
// fieldsType other than FieldsV1, or malformed FieldsV1. An empty entry ({})
// decodes to an entry owning nothing, which encoding drops: this is how
// clients clear managedFields.
Result<ManagedFields> decode_managed_fields(const json& v);

// The managedFields list in kube's order (Apply before Update, then by time,
// manager, apiVersion, subresource), without entries that own nothing.
json encode_managed_fields(ManagedFields entries);

// Who writes, and when.
struct Writer {
  std::string manager;
  std::string api_version;  // of the object written: "apps/v1"
  std::string subresource;  // "", "status", "scale"
  std::string now;          // RFC 3339
};

// An Update by w that made the changes `c`: the fields c changed leave every
// manager and join w's Update entry (created as needed, its time set to
// w.now); removed fields leave every manager.
void record_update(ManagedFields& entries, const Comparison& c, const Writer& w);

// The managedFields of `next` after an Update by w from `old` (nullptr: a
// create). The base is the managedFields `next` carries when they decode
// and are not empty (a client replacing them on purpose; not on a
// subresource), else those of `old`. Sets or removes
// next.metadata.managedFields; keeps old's unchanged when the write changed
// no tracked field.
void track_update(const json* old, json& next, const Type& t, Scope scope, const Writer& w);

// a == b but for the top-level keys `skip` of two objects, compared in place
// (no copies of either).
bool equal_except(const json& a, const json& b, std::initializer_list<std::string_view> skip);

// kube reverts managedFields timestamps on a write that changes nothing
// else, so that it stays a no-op: when `next` equals `old` except for the
// times in managedFields, puts old's managedFields back.
void keep_times_if_unchanged(const json& old, json& next);

}  // namespace vkube::apiserver::apply
