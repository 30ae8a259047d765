#include "metrics.h"

#include <malloc.h>

#include <cstdio>
#include <string_view>

#include "vkube/common/memory.h"

namespace vkube::apiserver {

void Metrics::observe(const std::string& verb, const std::string& resource, int code,
                      double seconds) {
  std::lock_guard lock(mu_);
  requests_[{verb, resource, code}]++;
  Histogram& h = latency_[{verb, resource}];
  for (size_t i = 0; i < kBuckets.size(); ++i)
    if (seconds <= kBuckets[i]) h.counts[i]++;
  h.count++;
  h.sum += seconds;
}

namespace {

// The heap as glibc's malloc sees it: what is allocated, and what it holds
// free (freed but not given back: resident until trimmed, so RSS minus the
// allocated bytes is mostly this and the program's own pages).
void render_heap(std::string& out) {
  if (std::string_view(heap_allocator()) != "glibc") return;  // jemalloc has its own figures
  const struct mallinfo2 mi = mallinfo2();
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "# HELP vkube_heap_allocated_bytes Bytes allocated by malloc and in use.\n"
                "# TYPE vkube_heap_allocated_bytes gauge\n"
                "vkube_heap_allocated_bytes %llu\n"
                "# HELP vkube_heap_free_bytes Bytes malloc holds free in its arenas.\n"
                "# TYPE vkube_heap_free_bytes gauge\n"
                "vkube_heap_free_bytes %llu\n",
                static_cast<unsigned long long>(mi.uordblks + mi.hblkhd),
                static_cast<unsigned long long>(mi.fordblks));
  out += buf;
}

}  // namespace

std::string Metrics::render() const {
  std::string out;
  char buf[512];
  out +=
      "# HELP apiserver_request_total Requests by verb, resource and HTTP code.\n"
      "# TYPE apiserver_request_total counter\n";
  std::lock_guard lock(mu_);
  for (const auto& [k, v] : requests_) {
    std::snprintf(buf, sizeof buf,
                  "apiserver_request_total{verb=\"%s\",resource=\"%s\",code=\"%d\"} %llu\n",
                  std::get<0>(k).c_str(), std::get<1>(k).c_str(), std::get<2>(k),
                  static_cast<unsigned long long>(v));
    out += buf;
  }
  out +=
      "# HELP apiserver_request_duration_seconds Request latency by verb and resource.\n"
      "# TYPE apiserver_request_duration_seconds histogram\n";
  for (const auto& [k, h] : latency_) {
    for (size_t i = 0; i < kBuckets.size(); ++i) {
      std::snprintf(
          buf, sizeof buf,
          "apiserver_request_duration_seconds_bucket{verb=\"%s\",resource=\"%s\",le=\"%g\"} "
          "%llu\n",
          k.first.c_str(), k.second.c_str(), kBuckets[i],
          static_cast<unsigned long long>(h.counts[i]));
      out += buf;
    }
    std::snprintf(
        buf, sizeof buf,
        "apiserver_request_duration_seconds_bucket{verb=\"%s\",resource=\"%s\",le=\"+Inf\"} "
        "%llu\napiserver_request_duration_seconds_sum{verb=\"%s\",resource=\"%s\"} %g\n"
        "apiserver_request_duration_seconds_count{verb=\"%s\",resource=\"%s\"} %llu\n",
        k.first.c_str(), k.second.c_str(), static_cast<unsigned long long>(h.count),
        k.first.c_str(), k.second.c_str(), h.sum, k.first.c_str(), k.second.c_str(),
        static_cast<unsigned long long>(h.count));
    out += buf;
  }
  std::snprintf(buf, sizeof buf,
                "# HELP apiserver_current_inflight_requests Requests being handled.\n"
                "# TYPE apiserver_current_inflight_requests gauge\n"
                "apiserver_current_inflight_requests %lld\n"
                "# HELP apiserver_registered_watchers Open watch streams.\n"
                "# TYPE apiserver_registered_watchers gauge\n"
                "apiserver_registered_watchers %lld\n",
                static_cast<long long>(inflight_.load()), static_cast<long long>(watches_.load()));
  out += buf;
  render_heap(out);
  return out;
}

}  // namespace vkube::apiserver
