// Objects walked by their schema, as server-side apply sees them: which
// values are structs (fields tracked one by one), granular maps (labels:
// each key tracked), associative lists (elements by key), sets (elements by
// value) and leaves (scalars and atomic values, owned as a whole).
//
// A kind without a description (custom resources) is untyped: every object
// is a granular map and every list atomic; its metadata is still ObjectMeta.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "fieldset.h"
#include "vkube/common/status.h"
#include "vkube/schema/schema.h"

namespace vkube::apiserver::apply {

enum class Shape { kLeaf, kStruct, kMap, kAssocList, kSetList, kUntyped };

struct Type {
  Shape shape = Shape::kUntyped;
  // kStruct: the struct; kMap and the lists: their elements' message, or
  // nullptr for scalar elements.
  const schema::Message* message = nullptr;
  // kMap and the lists: the field declaring them.
  const schema::Field* field = nullptr;
};

// The type of whole objects of message `m` (nullptr: untyped).
Type object_type(const schema::Message* m);

// Which top-level fields a write tracks: all of them, all but status (the
// main resource of a kind with a status subresource, whose status only
// /status writes), only status (the status subresource), or all but spec
// and metadata.labels (the status subresource of a kind whose status writes
// keep other metadata changes: kube's Deployment status strategy resets those).
enum class Scope { kAll, kNoStatus, kStatusOnly, kNoSpec };

// The fields an applied configuration sets (structured-merge-diff's
// ToFieldSet): leaves, list elements and map entries are members; structs
// are members only when empty or null. apiVersion, kind and the metadata
// the server owns (name, uid, resourceVersion, managedFields, ...) are never
// tracked. kInternal (kube's 500) with the path of the first value that does
// not fit the schema.
Result<FieldSet> fields_of(const json& obj, const Type& t, Scope scope);

// What a write changes: `changed` are the fields added or modified, `removed`
// those gone. `old` nullptr compares with the type's zero value (a create:
// structs that Go always serializes count as present, so they are not
// "added" themselves).
struct Comparison {
  FieldSet changed;
  FieldSet removed;
};
Comparison compare(const json* old, const json& next, const Type& t, Scope scope);

// Merges an applied configuration into `live` (nullptr: nothing yet):
// structs and granular maps key by key, associative lists and sets element by
// element (the configuration's order for its elements, the others keep their
// place), leaves replaced. A null in the configuration removes the field.
json merge(const json* live, const json& config, const Type& t);

// Removes from `obj` the members of `last` (what an applier applied before)
// that nobody keeps: neither `keep` nor anything below it in `keep` names
// them. Empty maps and lists left behind are dropped.
void prune(json& obj, const FieldSet& last, const FieldSet& keep, const Type& t);

}  // namespace vkube::apiserver::apply
