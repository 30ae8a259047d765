#include "watch.h"

#include <chrono>

#include "object.h"
#include "table.h"
#include "vkube/common/log.h"

namespace vkube::apiserver {

using Clock = std::chrono::steady_clock;

// As kube-apiserver's watch cache: a bookmark about once a minute. More
// often would wake every idle client (each tenant's syncer holds seven
// watches on its host) for nothing.
constexpr std::chrono::seconds kBookmarkEvery{60};

class WatchStream final : public http::ResponseStream,
                          public std::enable_shared_from_this<WatchStream> {
 public:
  WatchStream(WatchDispatcher& d, std::unique_ptr<storage::Watch> w, WatchSpec spec,
              std::string initial)
      : d_(d), watch_(std::move(w)), spec_(std::move(spec)), initial_(std::move(initial)) {
    last_rev_ = spec_.start_revision;
    deadline_ = Clock::now() + std::chrono::seconds(spec_.timeout_seconds);
    next_bookmark_ = Clock::now() + kBookmarkEvery;
  }

  void start(std::shared_ptr<http::StreamSink> sink) override {
    {
      std::lock_guard lock(mu_);
      sink_ = std::move(sink);
    }
    if (!initial_.empty()) {
      write(std::move(initial_));
      initial_.clear();
    }
    if (watch_) {
      std::weak_ptr<WatchStream> weak = shared_from_this();
      WatchDispatcher* d = &d_;
      watch_->set_notifier([weak, d] {
        if (auto s = weak.lock()) d->ready(std::move(s));
      });
    }
    d_.add(shared_from_this());
    d_.ready(shared_from_this());
  }

  void stop() override { finish(false); }

  // Drains events into the sink. Runs on the dispatcher thread only.
  void drain() {
    if (done_) return;
    if (!watch_) {
      finish(true);
      return;
    }
    std::vector<storage::EventPtr> events;
    std::string out;
    for (;;) {
      events.clear();
      Status s = watch_->poll(&events, std::chrono::milliseconds(0));
      for (const auto& e : events) {
        out += d_.encode_shared(spec_, e);
        last_rev_ = e->kv.mod_revision;
      }
      if (!s.is_ok()) {
        if (s.code() == Code::kExpired) {
          out += d_.encode_object(spec_, "ERROR", status_object(ApiError(s)));
        }
        if (!out.empty()) write(std::move(out));
        finish(true);
        return;
      }
      if (events.empty()) break;
    }
    if (!out.empty()) write(std::move(out));
  }

  // Timeouts and bookmarks. Runs on the dispatcher thread.
  void tick(Clock::time_point now) {
    if (done_) return;
    if (now >= deadline_) {
      finish(true);
      return;
    }
    if (spec_.bookmarks && now >= next_bookmark_) {
      next_bookmark_ = now + kBookmarkEvery;
      // Only a revision this stream has delivered is safe to promise.
      drain();
      if (done_) return;
      storage::Revision rev = last_rev_;
      json obj = {{"kind", spec_.kind->resource.kind},
                  {"apiVersion", spec_.kind->resource.gv.api_version()},
                  {"metadata", {{"resourceVersion", std::to_string(rev)}}}};
      write(json{{"type", "BOOKMARK"}, {"object", obj}}.dump() + "\n");
    }
  }

  bool done() const { return done_; }

 private:
  void write(std::string data) {
    std::shared_ptr<http::StreamSink> sink;
    {
      std::lock_guard lock(mu_);
      sink = sink_;
    }
    if (sink && !sink->write(std::move(data))) finish(false);
  }

  // Ends the stream once: cancels the storage watch and closes the sink
  // (politely, with the last chunk, when `close_sink`).
  void finish(bool close_sink) {
    std::shared_ptr<http::StreamSink> sink;
    {
      std::lock_guard lock(mu_);
      if (done_) return;
      done_ = true;
      sink = std::move(sink_);
    }
    if (watch_) watch_->cancel();
    if (sink && close_sink) sink->close();
    d_.remove(this);
  }

  WatchDispatcher& d_;
  std::unique_ptr<storage::Watch> watch_;
  WatchSpec spec_;
  std::string initial_;
  std::mutex mu_;
  std::shared_ptr<http::StreamSink> sink_;
  std::atomic<bool> done_{false};
  Clock::time_point deadline_, next_bookmark_;
  storage::Revision last_rev_ = 0;
};

WatchDispatcher::WatchDispatcher(Metrics& metrics) : metrics_(metrics) {
  thread_ = std::thread([this] { run(); });
}

WatchDispatcher::~WatchDispatcher() {
  shutdown();
  if (thread_.joinable()) thread_.join();
}

std::shared_ptr<http::ResponseStream> WatchDispatcher::open(std::unique_ptr<storage::Watch> watch,
                                                            WatchSpec spec, std::string initial) {
  return std::make_shared<WatchStream>(*this, std::move(watch), std::move(spec), std::move(initial));
}

std::shared_ptr<http::ResponseStream> WatchDispatcher::error_stream(const ApiError& e) {
  WatchSpec spec;
  std::string line = json{{"type", "ERROR"}, {"object", status_object(e)}}.dump() + "\n";
  return std::make_shared<WatchStream>(*this, nullptr, std::move(spec), std::move(line));
}

void WatchDispatcher::shutdown() {
  std::set<std::shared_ptr<WatchStream>> streams;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    streams = streams_;
    cv_.notify_all();
  }
  for (const auto& s : streams) s->stop();
}

void WatchDispatcher::ready(std::shared_ptr<WatchStream> s) {
  std::lock_guard lock(mu_);
  ready_.push_back(std::move(s));
  cv_.notify_one();
}

void WatchDispatcher::add(const std::shared_ptr<WatchStream>& s) {
  bool stop_now;
  {
    std::lock_guard lock(mu_);
    stop_now = stopping_;
    if (!stop_now && streams_.insert(s).second) metrics_.watches_add(1);
  }
  cv_.notify_all();  // the dispatcher may sleep with no stream to tick
  if (stop_now) s->stop();
}

void WatchDispatcher::remove(WatchStream* s) {
  std::lock_guard lock(mu_);
  for (auto it = streams_.begin(); it != streams_.end(); ++it) {
    if (it->get() == s) {
      streams_.erase(it);
      metrics_.watches_add(-1);
      break;
    }
  }
}

void WatchDispatcher::run() {
  auto next_tick = Clock::now();
  std::unique_lock lock(mu_);
  while (!stopping_) {
    // Ticks (timeouts, bookmarks) only while there are streams: an idle
    // server does not wake.
    if (streams_.empty()) {
      cv_.wait(lock, [&] { return stopping_ || !ready_.empty() || !streams_.empty(); });
      next_tick = std::max(next_tick, Clock::now());
    } else {
      cv_.wait_until(lock, next_tick, [&] { return stopping_ || !ready_.empty(); });
    }
    if (stopping_) break;
    std::deque<std::shared_ptr<WatchStream>> batch;
    batch.swap(ready_);
    lock.unlock();
    for (auto& s : batch) s->drain();
    batch.clear();
    auto now = Clock::now();
    if (now >= next_tick) {
      lock.lock();
      std::vector<std::shared_ptr<WatchStream>> all(streams_.begin(), streams_.end());
      lock.unlock();
      for (auto& s : all) s->tick(now);
      next_tick = now + std::chrono::milliseconds(250);
    }
    lock.lock();
  }
}

std::string WatchDispatcher::encode_object(const WatchSpec& spec, const char* type, json obj) {
  json out_obj;
  if (spec.table && std::string_view(type) != "ERROR") {
    out_obj = make_table(*spec.kind, {obj}, spec.include,
                         {{"resourceVersion", str_at(obj["metadata"], "resourceVersion")}});
  } else {
    if (spec.kind && std::string_view(type) != "ERROR") {
      obj["kind"] = spec.kind->resource.kind;
      obj["apiVersion"] = spec.kind->resource.gv.api_version();
    }
    out_obj = std::move(obj);
  }
  std::string line = "{\"type\":\"";
  line += type;
  line += "\",\"object\":";
  line += out_obj.dump(-1, ' ', false, json::error_handler_t::replace);
  line += "}\n";
  return line;
}

std::string WatchDispatcher::encode_shared(const WatchSpec& spec, const storage::EventPtr& e) {
  if (spec.table || !spec.query.labels.empty() || !spec.query.fields.empty())
    return encode(spec, *e);
  for (auto it = encoded_.rbegin(); it != encoded_.rend(); ++it) {
    if (it->event == e && it->kind == spec.kind) return it->line;
  }
  std::string line = encode(spec, *e);
  encoded_.push_back({e, spec.kind, line});
  // Enough for the events of one batch of drains, across a few kinds.
  if (encoded_.size() > 256) encoded_.pop_front();
  return line;
}

std::string WatchDispatcher::encode(const WatchSpec& spec, const storage::Event& e) {
  const bool filtering = !spec.query.labels.empty() || !spec.query.fields.empty();
  auto decode = [](const storage::KeyValue& kv, storage::Revision rv) -> std::optional<json> {
    auto o = decode_stored(kv);
    if (!o.is_ok()) return std::nullopt;
    (*o)["metadata"]["resourceVersion"] = std::to_string(rv);
    return std::move(o).value();
  };
  auto match = [&](const json& obj) { return matches(spec.query, obj); };

  if (e.type == storage::EventType::kDelete) {
    if (!e.prev_kv) return {};
    auto obj = decode(*e.prev_kv, e.kv.mod_revision);
    if (!obj || (filtering && !match(*obj))) return {};
    return encode_object(spec, "DELETED", std::move(*obj));
  }
  auto obj = decode(e.kv, e.kv.mod_revision);
  if (!obj) return {};
  if (!filtering) return encode_object(spec, e.prev_kv ? "MODIFIED" : "ADDED", std::move(*obj));
  bool now_matches = match(*obj);
  bool prev_matches = false;
  if (e.prev_kv) {
    auto prev = decode(*e.prev_kv, e.prev_kv->mod_revision);
    prev_matches = prev && match(*prev);
  }
  if (now_matches) return encode_object(spec, prev_matches ? "MODIFIED" : "ADDED", std::move(*obj));
  if (prev_matches) return encode_object(spec, "DELETED", std::move(*obj));
  return {};
}

http::Response handle_watch(Context& c) {
  ListQuery q = ListQuery::from_context(c, /*paged=*/false);
  if (!q.error.is_ok()) return error_response(q.error);
  if (Status s = check_field_selector(c.resource(), q.fields); !s.is_ok()) return error_response(s);
  WatchSpec spec;
  spec.kind = &c.kind;
  spec.kinds = c.kinds;
  spec.backend = &c.server.backend();
  spec.table = wants_table(c.req.header("Accept"));
  spec.include = parse_include_object(c.param("includeObject").value_or(""));
  if (auto b = c.param("allowWatchBookmarks")) parse_bool(*b, &spec.bookmarks);
  if (auto t = c.param("timeoutSeconds")) {
    try {
      spec.timeout_seconds = std::max<int64_t>(1, std::stoll(*t));
    } catch (...) {
      return error_response(bad_request("timeoutSeconds must be an integer"));
    }
  }
  std::string prefix = Registry::storage_prefix(c.kind);
  if (c.resource().namespaced && !c.info.namespace_.empty()) prefix += c.info.namespace_ + "/";
  // A watch on one object (kubectl wait, delete): fieldSelector metadata.name
  // or the name in the path narrows the storage prefix.
  if (!c.info.name.empty()) {
    q.fields = api::FieldSelector::parse("metadata.name=" + c.info.name).value();
  }

  auto rv = parse_resource_version(q.resource_version);
  if (!rv.is_ok()) return error_response(rv.status());
  std::string initial;
  storage::Revision after = *rv;
  if (*rv == 0) {
    // "" and "0": synthetic ADDED events for the current state, then changes.
    ListQuery lq = q;
    lq.resource_version.clear();
    auto listed = list_objects(c, lq);
    if (!listed.is_ok()) return error_response(listed.status());
    for (json& obj : listed->items)
      initial += c.server.watches().encode_object(spec, "ADDED", std::move(obj));
    after = listed->revision;
    spec.query = q;
  } else {
    spec.query = q;
  }
  http::Response resp;
  resp.status = 200;
  resp.set_header("Content-Type", "application/json");
  auto w = c.server.backend().watch(prefix, after);
  if (!w.is_ok()) {
    if (w.status().code() == Code::kExpired) {
      resp.stream = c.server.watches().error_stream(ApiError(Status::expired(
          "too old resource version: " + std::to_string(after) + " (" +
          std::to_string(c.server.backend().compacted_revision()) + ")")));
      return resp;
    }
    return error_response(w.status());
  }
  spec.start_revision = after != 0 ? after : c.server.backend().current_revision();
  resp.stream = c.server.watches().open(std::move(w).value(), std::move(spec), std::move(initial));
  return resp;
}

}  // namespace vkube::apiserver
