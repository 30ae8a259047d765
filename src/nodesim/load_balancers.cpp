#include "load_balancers.h"

#include "pod_ips.h"
#include "vkube/common/log.h"

namespace vkube::nodesim {

namespace {

std::string key_of(const json& obj) {
  return text_at(obj, {"metadata", "namespace"}) + "/" + text_at(obj, {"metadata", "name"});
}

// Whether this controller answers for `svc`.
bool ours(const json& svc) {
  return text_at(svc, {"spec", "type"}) == "LoadBalancer" &&
         text_at(svc, {"spec", "loadBalancerClass"}).empty();
}

// The first ingress address of the Service's status ("" when none).
std::string ingress_ip(const json& svc) {
  const json status = svc.value("status", json::object());
  const json ingress = status.value("loadBalancer", json::object()).value("ingress", json::array());
  if (!ingress.is_array() || ingress.empty() || !ingress[0].is_object()) return {};
  return ingress[0].value("ip", "");
}

}  // namespace

Result<std::unique_ptr<LoadBalancers>> LoadBalancers::create(Client& client,
                                                             const controllers::Lister& services,
                                                             const std::string& pool) {
  const auto slash = pool.find('/');
  auto base = PodIps::parse(pool.substr(0, slash));
  int bits = -1;
  if (slash != std::string::npos) {
    try {
      bits = std::stoi(pool.substr(slash + 1));
    } catch (...) {
      bits = -1;
    }
  }
  if (!base || bits < 8 || bits > 30)
    return Status::invalid("load balancer pool: want a.b.c.d/n with n from 8 to 30, got \"" + pool +
                           "\"");
  const uint32_t size = uint32_t{1} << (32 - bits);
  return std::unique_ptr<LoadBalancers>(
      new LoadBalancers(client, services, *base & ~(size - 1), size));
}

LoadBalancers::LoadBalancers(Client& client, const controllers::Lister& services, uint32_t base,
                             uint32_t size)
    : client_(client), services_(services), base_(base), size_(size) {}

LoadBalancers::~LoadBalancers() {
  stop();
}

void LoadBalancers::on_service(const controllers::ObjectEvent& e) {
  queue_.add(e.key);
}

void LoadBalancers::start() {
  {
    std::lock_guard lock(mu_);
    for (const controllers::ObjectPtr& s : services_.list()) {
      auto ip = PodIps::parse(ingress_ip(*s));
      if (!ours(*s) || !ip || !in_pool(*ip) || held_.count(*ip)) continue;
      held_[*ip] = key_of(*s);
      by_key_[key_of(*s)] = *ip;
    }
  }
  worker_ = std::thread([this] {
    queue_.run([this](const std::string& key) { return reconcile(key); },
               [](const std::string& key, const Status& s) {
                 VKUBE_LOG(warn, "simulated load balancer: service sync failed", {"service", key},
                           {"error", s.to_string()});
               });
  });
}

void LoadBalancers::stop() {
  queue_.shutdown();
  if (worker_.joinable()) worker_.join();
}

uint32_t LoadBalancers::address_for(const std::string& key, const json& svc) {
  std::lock_guard lock(mu_);
  if (auto it = by_key_.find(key); it != by_key_.end()) return it->second;
  auto take = [&](uint32_t ip) {
    held_[ip] = key;
    by_key_[key] = ip;
    return ip;
  };
  for (const std::string& text : {ingress_ip(svc), text_at(svc, {"spec", "loadBalancerIP"})}) {
    auto ip = PodIps::parse(text);
    if (ip && in_pool(*ip) && !held_.count(*ip)) return take(*ip);
  }
  for (uint32_t tries = 0; tries + 2 < size_; ++tries) {
    uint32_t ip = base_ + next_;
    next_ = next_ + 1 >= size_ - 1 ? 1 : next_ + 1;
    if (!held_.count(ip)) return take(ip);
  }
  return 0;
}

Status LoadBalancers::reconcile(const std::string& key) {
  controllers::ObjectPtr svc = services_.get(key);
  if (!svc || !ours(*svc)) {
    std::lock_guard lock(mu_);
    if (auto it = by_key_.find(key); it != by_key_.end()) {
      held_.erase(it->second);
      by_key_.erase(it);
    }
  }
  if (!svc) return Status::ok();
  std::string want;
  if (ours(*svc)) {
    const uint32_t ip = address_for(key, *svc);
    if (ip == 0) {
      VKUBE_LOG(warn, "simulated load balancer: the pool is spent", {"service", key});
      return Status::ok();
    }
    want = PodIps::format(ip);
  } else if (text_at(*svc, {"spec", "loadBalancerClass"}).empty()) {
    // No longer a LoadBalancer: an address of ours goes (another's stays).
    auto had = PodIps::parse(ingress_ip(*svc));
    if (!had || !in_pool(*had)) return Status::ok();
  } else {
    return Status::ok();
  }
  if (ingress_ip(*svc) == want) return Status::ok();
  json body = *svc;
  body["status"]["loadBalancer"] =
      want.empty() ? json::object() : json{{"ingress", json::array({{{"ip", want}}})}};
  ApiResult r = client_.call("PUT",
                             "/api/v1/namespaces/" + text_at(*svc, {"metadata", "namespace"}) +
                                 "/services/" + text_at(*svc, {"metadata", "name"}) + "/status",
                             body);
  if (r.ok() || r.code == 404) return Status::ok();
  if (r.code == 409) {
    queue_.add_after(key, std::chrono::milliseconds(50));
    return Status::ok();
  }
  return Status::internal("load balancer status of " + key + ": " + r.body.dump());
}

}  // namespace vkube::nodesim
