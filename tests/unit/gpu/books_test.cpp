// The pool's books read from host objects (issue 38): where a tenant's share
// is found, which pods count as allocated, pending or reclaiming, the pool.
#include <catch2/catch.hpp>

#include "vkube/gpu/books.h"

using json = nlohmann::json;
using vkube::gpu::host_share;
using vkube::gpu::pool_books;

namespace {

json tenant_ns(const std::string& name, const std::string& share = "") {
  json ns = {{"metadata", {{"name", "vkube-" + name}, {"labels", {{"vkube.io/tenant", name}}}}}};
  if (!share.empty()) ns["metadata"]["annotations"]["vkube.io/gpu-share"] = share;
  return ns;
}

json statefulset(const std::string& ns, const std::string& tenant, const std::string& arg) {
  return {{"metadata",
           {{"name", "vkube"}, {"namespace", ns}, {"labels", {{"vkube.io/tenant", tenant}}}}},
          {"spec",
           {{"template",
             {{"spec",
               {{"containers",
                 {{{"name", "vkube"}, {"args", {"serve", "--gpu-quota=gpus=2", arg}}}}}}}}}}}};
}

json pod(const std::string& ns, int gpus, const std::string& node, const std::string& phase = "",
         bool terminating = false) {
  json p = {{"metadata", {{"name", "p"}, {"namespace", ns}}},
            {"spec",
             {{"containers",
               {{{"name", "c"},
                 {"resources", {{"limits", {{"nvidia.com/gpu", std::to_string(gpus)}}}}}}}}}}};
  if (!node.empty()) p["spec"]["nodeName"] = node;
  if (!phase.empty()) p["status"]["phase"] = phase;
  if (terminating) p["metadata"]["deletionTimestamp"] = "2026-12-07T10:00:00Z";
  return p;
}

json node(int gpus) {
  return {{"metadata", {{"name", "n"}, {"labels", {{"nvidia.com/gpu.product", "NVIDIA-H100"}}}}},
          {"status", {{"allocatable", {{"nvidia.com/gpu", std::to_string(gpus)}}}}}};
}

}  // namespace

TEST_CASE("host_share: the namespace annotation, else the StatefulSet's flag", "[gpu][share]") {
  json set = statefulset("vkube-a", "a", "--gpu-share=deserved=2,limit=4");
  auto s = host_share(tenant_ns("a", "deserved=3"), set);
  REQUIRE(s.is_ok());
  CHECK(s->deserved_milli == 3000);
  CHECK_FALSE(s->limit_milli.has_value());
  s = host_share(tenant_ns("a"), set);
  REQUIRE(s.is_ok());
  CHECK(s->to_string() == "deserved=2,limit=4");
  s = host_share(tenant_ns("a"), json());
  REQUIRE(s.is_ok());
  CHECK(s->deserved_milli == 0);
  s = host_share(tenant_ns("a", "deserved=much"), set);
  REQUIRE_FALSE(s.is_ok());
  CHECK_THAT(s.status().message(), Catch::Contains("invalid GPU share item \"deserved=much\""));
}

TEST_CASE("pool_books: what each tenant holds, waits for, borrows and lends", "[gpu][share]") {
  json nss = {{"items",
               {tenant_ns("a", "deserved=4"),
                tenant_ns("b", "deserved=4"),
                tenant_ns("bad", "x"),
                {{"metadata", {{"name", "default"}}}}}}};
  json sets = {{"items", {statefulset("helm", "h", "--gpu-share=deserved=1")}}};
  json pods = {{"items",
                {pod("vkube-a", 2, "n1"), pod("vkube-a", 1, ""), pod("vkube-b", 5, "n1"),
                 pod("vkube-b", 1, "n1", "Succeeded"), pod("vkube-b", 1, "n1", "", true),
                 pod("vkube-b", 1, "", "", true), pod("default", 8, "n1"), pod("helm", 1, "n2")}}};
  json nodes = {{"items", {node(8), node(4)}}};
  auto books = pool_books(nss, sets, pods, nodes);
  CHECK(books.capacity == 12000);
  REQUIRE(books.tenants.size() == 4);  // not "default": no tenant label
  const auto& a = books.tenants[1];
  const auto& b = books.tenants[2];
  CHECK(books.tenants[0].ns == "helm");
  CHECK(books.tenants[0].tenant == "h");
  CHECK(books.tenants[0].share.deserved_milli == 1000);
  CHECK(books.tenants[0].allocated == 1000);
  CHECK(a.tenant == "a");
  CHECK(a.allocated == 2000);
  CHECK(a.pending == 1000);
  CHECK(a.lent == 0);
  CHECK(b.allocated == 5000);
  CHECK(b.reclaiming == 1000);
  CHECK(b.pending == 0);
  CHECK(b.borrowed == 1000);
  CHECK(b.fair_share == 5000);
  CHECK(books.tenants[3].ns == "vkube-bad");
  CHECK(books.tenants[3].share.deserved_milli == 0);
  REQUIRE(books.bad_shares.count("vkube-bad") == 1);
  CHECK_THAT(books.bad_shares.at("vkube-bad"), Catch::Contains("invalid GPU share item \"x\""));
}
