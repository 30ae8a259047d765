// Per-kind defaulting functions behind apply_defaults (defaults*.cpp).
#pragma once

#include <nlohmann/json.hpp>

namespace vkube::apiserver::builtin {

using json = nlohmann::json;

// apps/v1 and batch/v1 (defaults_workloads.cpp).
void default_deployment(json& obj);
void default_replica_set(json& obj);
void default_replication_controller(json& obj);
void default_stateful_set(json& obj);
void default_daemon_set(json& obj);
void default_job(json& obj);
void default_cron_job(json& obj);

}  // namespace vkube::apiserver::builtin
