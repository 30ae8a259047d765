#include "errors.h"

#include <string_view>
#include <utility>
#include <vector>

namespace vkube::apiserver {

int http_code(Code code) {
  switch (code) {
    case Code::kOk: return 200;
    case Code::kNotFound: return 404;
    case Code::kAlreadyExists: return 409;
    case Code::kConflict: return 409;
    case Code::kInvalid: return 422;
    case Code::kBadRequest: return 400;
    case Code::kMethodNotAllowed: return 405;
    case Code::kNotAcceptable: return 406;
    case Code::kUnsupportedMediaType: return 415;
    case Code::kUnauthorized: return 401;
    case Code::kForbidden: return 403;
    case Code::kExpired: return 410;
    case Code::kTooLarge: return 413;
    case Code::kTooManyRequests: return 429;
    case Code::kFutureRevision: return 504;
    case Code::kTimeout: return 504;
    case Code::kUnavailable: return 503;
    case Code::kCancelled: return 500;
    case Code::kCorruption: return 500;
    case Code::kInternal: return 500;
  }
  return 500;
}

std::string_view reason(Code code) {
  switch (code) {
    case Code::kFutureRevision: return "Timeout";
    case Code::kCancelled:
    case Code::kCorruption: return "InternalError";
    default: return code_name(code);
  }
}

json status_object(const ApiError& e) {
  if (e.raw.is_object()) return e.raw;
  json s = {{"kind", "Status"},
            {"apiVersion", "v1"},
            {"metadata", json::object()},
            {"status", "Failure"},
            {"message", e.status.message()},
            {"reason", reason(e.status.code())},
            {"code", http_code(e.status.code())}};
  if (e.status.code() == Code::kInternal || e.status.code() == Code::kCorruption ||
      e.status.code() == Code::kCancelled)
    s["reason"] = "InternalError";
  if (!e.details.empty()) s["details"] = e.details;
  // A patch whose result does not decode names no kind and no object, as
  // kube's field.Invalid(patch, ...) with an empty GroupKind does.
  constexpr std::string_view kPatchInvalid = " \"\" is invalid: patch: ";
  if (e.status.code() == Code::kInvalid && e.status.message().starts_with(kPatchInvalid)) {
    s["details"] = {
        {"causes", json::array({{{"reason", "FieldValueInvalid"},
                                 {"message", e.status.message().substr(kPatchInvalid.size())},
                                 {"field", "patch"}}})}};
  }
  // A 422 that names no field (a JSON patch that cannot apply) carries its
  // text as a cause, as kube's generic server response does: kubectl prints
  // an Invalid error's causes, and nothing else after "is invalid".
  if (e.status.code() == Code::kInvalid && s.contains("details") && s["details"].is_object() &&
      (!s["details"].contains("causes") || s["details"]["causes"].empty())) {
    constexpr std::string_view kGeneric =
        "the server rejected our request due to an error in our request: ";
    std::string_view m = e.status.message();
    if (m.starts_with(kGeneric)) m.remove_prefix(kGeneric.size());
    s["details"]["causes"] =
        json::array({{{"reason", "UnexpectedServerResponse"}, {"message", std::string(m)}}});
  }
  if (e.status.code() == Code::kFutureRevision) {
    s["details"]["causes"] = json::array(
        {{{"reason", "ResourceVersionTooLarge"}, {"message", "Too large resource version"}}});
    s["details"]["retryAfterSeconds"] = 1;
  }
  return s;
}

json success_status(const json& details) {
  return {{"kind", "Status"}, {"apiVersion", "v1"},  {"metadata", json::object()},
          {"status", "Success"}, {"details", details}};
}

namespace {

// kube writes its Go types' fields in declaration order, and clients and
// scripts that compare bodies as text see that order; nlohmann's objects are
// sorted. A Shape lists a document's keys in kube's order, each with the
// shape of its value (or of each element of an array value); keys it does
// not list follow, sorted.
struct Key;
using Shape = std::vector<Key>;
struct Key {
  const char* name;
  const Shape* shape = nullptr;
};

const Shape kListMeta = {{"selfLink"}, {"resourceVersion"}, {"continue"}, {"remainingItemCount"}};
const Shape kObjectMeta = {{"name"},
                           {"generateName"},
                           {"namespace"},
                           {"selfLink"},
                           {"uid"},
                           {"resourceVersion"},
                           {"generation"},
                           {"creationTimestamp"},
                           {"deletionTimestamp"},
                           {"deletionGracePeriodSeconds"},
                           {"labels"},
                           {"annotations"},
                           {"ownerReferences"},
                           {"finalizers"},
                           {"managedFields"}};
const Shape kObject = {{"kind"}, {"apiVersion"}, {"metadata", &kObjectMeta}, {"spec"}, {"status"}};

// meta/v1 Status.
const Shape kCause = {{"reason"}, {"message"}, {"field"}};
const Shape kDetails = {{"name"}, {"group"},           {"kind"},
                        {"uid"},  {"causes", &kCause}, {"retryAfterSeconds"}};
const Shape kStatus = {{"kind"},    {"apiVersion"}, {"metadata", &kListMeta}, {"status"},
                       {"message"}, {"reason"},     {"details", &kDetails},   {"code"}};

// meta/v1 Table.
const Shape kColumn = {{"name"}, {"type"}, {"format"}, {"description"}, {"priority"}};
const Shape kRowCondition = {{"type"}, {"status"}, {"reason"}, {"message"}};
const Shape kRow = {{"cells"}, {"conditions", &kRowCondition}, {"object", &kObject}};
const Shape kTable = {{"kind"},
                      {"apiVersion"},
                      {"metadata", &kListMeta},
                      {"columnDefinitions", &kColumn},
                      {"rows", &kRow}};

// Legacy discovery (meta/v1).
const Shape kGroupVersion = {{"groupVersion"}, {"version"}};
const Shape kCidr = {{"clientCIDR"}, {"serverAddress"}};
const Shape kApiVersions = {
    {"kind"}, {"apiVersion"}, {"versions"}, {"serverAddressByClientCIDRs", &kCidr}};
const Shape kApiGroup = {{"kind"},
                         {"apiVersion"},
                         {"name"},
                         {"versions", &kGroupVersion},
                         {"preferredVersion", &kGroupVersion},
                         {"serverAddressByClientCIDRs", &kCidr}};
const Shape kApiGroupList = {{"kind"}, {"apiVersion"}, {"groups", &kApiGroup}};
const Shape kApiResource = {
    {"name"}, {"singularName"}, {"namespaced"}, {"group"},      {"version"},
    {"kind"}, {"verbs"},        {"shortNames"}, {"categories"}, {"storageVersionHash"}};
const Shape kApiResourceList = {
    {"kind"}, {"apiVersion"}, {"groupVersion"}, {"resources", &kApiResource}};

// Aggregated discovery (apidiscovery.k8s.io/v2).
const Shape kGvk = {{"group"}, {"version"}, {"kind"}};
const Shape kSubresource = {
    {"subresource"}, {"responseKind", &kGvk}, {"acceptedTypes", &kGvk}, {"verbs"}};
const Shape kResourceDiscovery = {
    {"resource"}, {"responseKind", &kGvk}, {"scope"},      {"singularResource"},
    {"verbs"},    {"shortNames"},          {"categories"}, {"subresources", &kSubresource}};
const Shape kVersionDiscovery = {{"version"}, {"resources", &kResourceDiscovery}, {"freshness"}};
const Shape kGroupDiscovery = {
    {"kind"}, {"apiVersion"}, {"metadata", &kObjectMeta}, {"versions", &kVersionDiscovery}};
const Shape kGroupDiscoveryList = {
    {"kind"}, {"apiVersion"}, {"metadata", &kListMeta}, {"items", &kGroupDiscovery}};

const Shape* shape_of(const json& body) {
  if (!body.is_object()) return nullptr;
  auto kind = body.find("kind");
  if (kind == body.end() || !kind->is_string()) return nullptr;
  static const std::vector<std::pair<std::string_view, const Shape*>> kShapes = {
      {"Status", &kStatus},
      {"Table", &kTable},
      {"APIResourceList", &kApiResourceList},
      {"APIGroupList", &kApiGroupList},
      {"APIGroup", &kApiGroup},
      {"APIVersions", &kApiVersions},
      {"APIGroupDiscoveryList", &kGroupDiscoveryList}};
  const std::string& k = kind->get_ref<const std::string&>();
  for (const auto& [name, shape] : kShapes)
    if (name == k) return shape;
  return nullptr;
}

// Writes values in place (nlohmann's serializer appends to `out`), so a
// Table's rows cost no more than dumping them unordered.
class OrderedWriter {
 public:
  explicit OrderedWriter(std::string& out)
      : out_(out),
        dump_(nlohmann::detail::output_adapter<char, std::string>(out), ' ',
              json::error_handler_t::replace) {}

  void value(const json& v, const Shape* shape) {
    if (shape != nullptr && v.is_object()) return object(v, *shape);
    if (shape != nullptr && v.is_array()) {
      out_ += '[';
      bool first = true;
      for (const json& e : v) {
        if (!first) out_ += ',';
        first = false;
        value(e, shape);
      }
      out_ += ']';
      return;
    }
    dump_.dump(v, false, false, 0);
  }

 private:
  void object(const json& v, const Shape& shape) {
    out_ += '{';
    bool first = true;
    size_t listed_seen = 0;
    for (const Key& k : shape) {
      auto it = v.find(k.name);
      if (it == v.end()) continue;
      ++listed_seen;
      if (!first) out_ += ',';
      first = false;
      out_ += '"';  // a Shape's names need no escaping
      out_ += k.name;
      out_ += "\":";
      value(*it, k.shape);
    }
    if (listed_seen == v.size()) {  // the common case: no other keys
      out_ += '}';
      return;
    }
    for (auto it = v.begin(); it != v.end(); ++it) {
      bool listed = false;
      for (const Key& k : shape) listed = listed || it.key() == k.name;
      if (listed) continue;
      if (!first) out_ += ',';
      first = false;
      dump_.dump(json(it.key()), false, false, 0);
      out_ += ':';
      dump_.dump(*it, false, false, 0);
    }
    out_ += '}';
  }

  std::string& out_;
  nlohmann::detail::serializer<json> dump_;
};

}  // namespace

const std::vector<std::string_view>& object_meta_order() {
  static const std::vector<std::string_view> kOrder = [] {
    std::vector<std::string_view> names;
    for (const Key& k : kObjectMeta) names.push_back(k.name);
    return names;
  }();
  return kOrder;
}

void append_json(std::string& out, const json& body) {
  OrderedWriter(out).value(body, shape_of(body));
}

std::string encode_json(const json& body) {
  std::string out;
  append_json(out, body);
  // kube's JSON encoder ends every document with a newline.
  out += '\n';
  return out;
}

http::Response json_response(int code, const json& body) {
  http::Response r;
  r.status = code;
  r.set_header("Content-Type", "application/json");
  r.body = encode_json(body);
  return r;
}

http::Response error_response(const ApiError& e) {
  if (e.raw.is_object() && e.raw.contains("code") && e.raw["code"].is_number_integer())
    return json_response(e.raw["code"].get<int>(), e.raw);
  return json_response(http_code(e.status.code()), status_object(e));
}

http::Response status_response(const Status& s) { return error_response(ApiError(s)); }

namespace {

json details_for(const api::Resource& r, const std::string& name) {
  json d = {{"kind", r.plural}};
  if (!name.empty()) d["name"] = name;
  if (!r.gv.group.empty()) d["group"] = r.gv.group;
  return d;
}

std::string quoted_resource(const api::Resource& r, const std::string& name) {
  return r.group_resource() + " \"" + name + "\"";
}

std::string_view cause_reason(FieldError::Type t) {
  switch (t) {
    case FieldError::Type::kRequired: return "FieldValueRequired";
    case FieldError::Type::kInvalid: return "FieldValueInvalid";
    case FieldError::Type::kNotSupported: return "FieldValueNotSupported";
    case FieldError::Type::kDuplicate: return "FieldValueDuplicate";
    case FieldError::Type::kForbidden: return "FieldValueForbidden";
    case FieldError::Type::kTooLong: return "FieldValueTooLong";
    case FieldError::Type::kTooMany: return "FieldValueTooMany";
  }
  return "FieldValueInvalid";
}

}  // namespace

ApiError not_found(const api::Resource& r, const std::string& name) {
  return {Status::not_found(quoted_resource(r, name) + " not found"), details_for(r, name)};
}

ApiError already_exists(const api::Resource& r, const std::string& name) {
  return {Status::already_exists(quoted_resource(r, name) + " already exists"), details_for(r, name)};
}

ApiError conflict(const api::Resource& r, const std::string& name, const std::string& why) {
  return {Status::conflict("Operation cannot be fulfilled on " + quoted_resource(r, name) + ": " + why),
          details_for(r, name)};
}

ApiError invalid(const api::Resource& r, const std::string& name, const FieldErrors& errors) {
  // kube names the GroupKind (Deployment.apps), the kind alone for core.
  std::string msg = r.kind + (r.gv.group.empty() ? "" : "." + r.gv.group) + " \"" + name +
                    "\" is invalid: ";
  json causes = json::array();
  if (errors.size() == 1) {
    msg += errors[0].to_string();
  } else {
    msg += "[";
    for (size_t i = 0; i < errors.size(); ++i) msg += (i ? ", " : "") + errors[i].to_string();
    msg += "]";
  }
  for (const auto& e : errors) {
    std::string m = e.to_string();
    m = m.substr(std::min(m.size(), e.field.size() + 2));
    causes.push_back({{"reason", cause_reason(e.type)}, {"message", m}, {"field", e.field}});
  }
  json d = {{"kind", r.kind}, {"name", name}, {"causes", causes}};
  if (!r.gv.group.empty()) d["group"] = r.gv.group;
  return {Status::invalid(msg), d};
}

ApiError bad_request(std::string message) { return Status::bad_request(std::move(message)); }

ApiError method_not_supported(const api::Resource& r, const std::string& verb) {
  return {Status(Code::kMethodNotAllowed, verb + " is not supported on resources of kind \"" +
                                              r.group_resource() + "\""),
          details_for(r, "")};
}

}  // namespace vkube::apiserver
