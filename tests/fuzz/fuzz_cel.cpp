// CEL as tenants write it: CRD x-kubernetes-validations rules and admission
// policy expressions. Each input is one expression, compiled both ways
// (compile for CRD rules, compile_in with kube's admission variables), type
// checked against a schema, and evaluated under kube's per-call cost limit.
// The evaluator must stop within the limit and say why; nothing may throw.
#include <nlohmann/json.hpp>

#include "fuzz_util.h"
#include "vkube/cel/cel.h"

using nlohmann::json;
namespace cel = vkube::cel;

namespace {

struct Env {
  json self = {{"spec",
                {{"a", 1},
                 {"s", "abc"},
                 {"labels", {{"x", "y"}}},
                 {"list", {1, 2, 3}},
                 {"q", "1Gi"},
                 {"t", "2023-06-01T10:00:00Z"}}},
               {"metadata", {{"name", "n"}}}};
  json schema = {
      {"type", "object"},
      {"properties",
       {{"spec",
         {{"type", "object"},
          {"properties",
           {{"a", {{"type", "integer"}}},
            {"s", {{"type", "string"}}},
            {"labels", {{"type", "object"}, {"additionalProperties", {{"type", "string"}}}}},
            {"list", {{"type", "array"}, {"items", {{"type", "integer"}}}}},
            {"q", {{"x-kubernetes-int-or-string", true}}},
            {"t", {{"type", "string"}, {"format", "date-time"}}}}}}},
        {"metadata", {{"type", "object"}}}}}};
  json activation = {{"object", self}, {"params", self}, {"oldObject", nullptr}};
  cel::Authorizer authz;
  cel::EvalOptions options;
  cel::TypeEnv types;
  Env() {
    authz.user = "u";
    authz.authorize = [](const cel::AuthzAttributes&) {
      return cel::AuthzDecision{true, "ok", ""};
    };
    options.authorizer = &authz;
    options.schema = &schema;
    types.object = &schema;
  }
};

void check_result(const cel::EvalResult& r) {
  FUZZ_CHECK(r.ok || !r.error.empty());
  if (r.cost_exceeded) FUZZ_CHECK(!r.ok);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Env env;
  std::string_view expr = vkube::fuzz::as_text(data, size);
  std::string error;
  if (auto program = cel::compile(expr, &error)) {
    check_result(cel::evaluate(*program, env.self, &env.self, env.options));
  } else {
    FUZZ_CHECK(!error.empty());
  }
  error.clear();
  auto program = cel::compile_in(expr, cel::admission_names(true, true), &error);
  if (!program) {
    FUZZ_CHECK(!error.empty());
    return 0;
  }
  (void)cel::check_types(*program, env.types);
  cel::EvalOptions admission = env.options;
  admission.schema = nullptr;
  check_result(cel::evaluate(*program, env.activation, nullptr, admission));
  return 0;
}
