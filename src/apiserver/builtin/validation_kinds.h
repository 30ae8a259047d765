// Per-kind validation functions behind validate() (validation*.cpp). Each
// takes the new object and, on update, the old one (else nullptr).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "field_errors.h"

namespace vkube::apiserver::builtin {

using json = nlohmann::json;

// apps/v1 and core/v1 controllers (validation_workloads.cpp).
void validate_deployment(const json& obj, const json* old, FieldErrors& errs);
void validate_replica_set(const json& obj, const json* old, FieldErrors& errs);
void validate_stateful_set(const json& obj, const json* old, FieldErrors& errs);
void validate_daemon_set(const json& obj, const json* old, FieldErrors& errs);
void validate_replication_controller(const json& obj, const json* old, FieldErrors& errs);

// batch/v1 (validation_batch.cpp).
void validate_job(const json& obj, const json* old, FieldErrors& errs);
void validate_cron_job(const json& obj, const json* old, FieldErrors& errs);

// core/v1 (validation_core.cpp).
void validate_service(const json& obj, const json* old, FieldErrors& errs);
void validate_config_map(const json& obj, const json* old, FieldErrors& errs);
void validate_secret(const json& obj, const json* old, FieldErrors& errs);
void validate_event(const json& obj, const json* old, bool events_group, FieldErrors& errs);

// rbac, networking, policy, scheduling (validation_other.cpp).
void validate_rbac(const std::string& kind, const json& obj, const json* old, FieldErrors& errs);
void validate_ingress(const json& obj, FieldErrors& errs);
void validate_network_policy(const json& obj, FieldErrors& errs);
void validate_pdb(const json& obj, FieldErrors& errs);
void validate_priority_class(const json& obj, const json* old, FieldErrors& errs);

// apiregistration.k8s.io/v1 APIService (validation_apiservice.cpp).
void validate_api_service(const json& obj, FieldErrors& errs);

}  // namespace vkube::apiserver::builtin
