// Field management on writes (metadata.managedFields) and server-side apply:
// the glue between the verb handlers and the apply library (apply/).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "server_impl.h"
#include "typed.h"

namespace vkube::apiserver {

// The field manager of a write: the fieldManager parameter, else the
// User-Agent up to its first '/' without unprintable characters, at most
// 128 bytes (kube's default: "kubectl" for "kubectl/v1.32.3 (linux/amd64)").
std::string field_manager(const Context& c);

// Validates the write options kube validates: fieldManager (at most 128
// bytes, printable) and, for PATCH, force (apply only) and the fieldManager
// apply requires, and dryRun ("All" only). 422 Invalid on
// "<options_kind>.meta.k8s.io" as kube words it.
std::optional<ApiError> check_write_options(const Context& c, std::string_view options_kind,
                                            bool apply);

// The schema-driven type of the request's objects (untyped for custom
// resources), and the part of them this request's writes track.
apply::Type object_type_of(const Context& c);
apply::Scope scope_of(const Context& c);

// Records an Update (create, update, non-apply patch, /status, /scale) in
// next's managedFields; `old` nullptr for a create. Cheap when the write
// changed nothing tracked.
void track_fields(Context& c, const json* old, json& next);

// The create pipeline after decoding (namespace, name, uid, defaults,
// validation, admission, storage): `track` records the creator's fields, off
// when they were recorded already (an apply that creates). `may_defer`: the
// answer may come as a DeferredResponse once the write commits (a POST's;
// a caller that reads the answer passes false).
http::Response create_object(Context& c, json obj, bool track, bool may_defer = false);

// Whether a create of `r` may answer before its commit: nothing to undo on
// failure (a Service's IPs, a pod's GPU quota) and nothing to do after it (a
// CRD is served at once). create_object() defers only then, and
// Server::serves_without_blocking() runs only those creates on an I/O thread.
bool create_may_defer(Server& s, const Kind& k);

// guaranteed_update whose managedFields step is `fields` (called with the
// current and next object after prepare_update, before validation) instead
// of track_fields.
using FieldsHook = std::function<void(const json& cur, json& next)>;
http::Response guaranteed_update(Context& c, const Transform& transform, const FieldsHook& fields);

// The answer to a write as the bytes just stored, their resourceVersion
// spliced in (JSON ended by a newline, as kube's encoder ends a document):
// the object is not encoded a second time. nullopt when the bytes have no
// top-level metadata object.
std::optional<http::Response> stored_bytes_response(int code, std::string_view stored,
                                                    storage::Revision rev);

// PATCH application/apply-patch+yaml: server-side apply, creating the
// object when it does not exist.
http::Response handle_apply(Context& c);

}  // namespace vkube::apiserver
