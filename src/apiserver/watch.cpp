#include "watch.h"

#include <chrono>
#include <deque>
#include <map>

#include "custom_conversion.h"
#include "object.h"
#include "table.h"
#include "vkube/common/log.h"

namespace vkube::apiserver {

using Clock = std::chrono::steady_clock;

// As kube-apiserver's watch cache: a bookmark about once a minute. More
// often would wake every idle client (each tenant's syncer holds seven
// watches on its host) for nothing.
constexpr std::chrono::seconds kBookmarkEvery{60};

struct WatchDispatcher::Lane : std::enable_shared_from_this<Lane> {
  Lane(WatchDispatcher& d, std::shared_ptr<http::StreamHome> h)
      : dispatcher(d), home(std::move(h)) {}

  // Any thread: `s` has events. The first of a batch posts the lane's drain.
  void ready(std::shared_ptr<WatchStream> s);
  // On the lane's thread: drains the streams queued so far.
  void drain_ready();
  // encode(), memoised for watches whose lines depend only on the event and
  // the kind (no selectors, no Table): the same event drained by a thousand
  // such streams is encoded once. The reference holds until the next call.
  // Lane thread only.
  const std::string& encode_shared(const WatchSpec& spec, const storage::EventPtr& e);

  WatchDispatcher& dispatcher;
  const std::shared_ptr<http::StreamHome> home;  // null: the dispatcher's thread

  std::mutex mu;
  std::vector<std::shared_ptr<WatchStream>> queued;
  bool posted = false;

  // Lane thread only.
  std::vector<std::shared_ptr<WatchStream>> batch;
  std::vector<storage::EventPtr> events;
  struct Encoded {
    storage::EventPtr event;  // held, so its address is not reused while cached
    const Kind* kind;
    std::string line;
  };
  std::deque<Encoded> encoded;  // most recent last
  size_t encoded_bytes = 0;     // of their lines
  std::string scratch;          // a line that is not memoised
};

class WatchStream final : public http::ResponseStream,
                          public std::enable_shared_from_this<WatchStream> {
 public:
  using Lane = WatchDispatcher::Lane;

  WatchStream(WatchDispatcher& d, std::unique_ptr<storage::Watch> w, WatchSpec spec,
              std::string initial)
      : d_(d), watch_(std::move(w)), spec_(std::move(spec)), initial_(std::move(initial)) {
    last_rev_ = spec_.start_revision;
    deadline_ = Clock::now() + std::chrono::seconds(spec_.timeout_seconds);
    next_bookmark_ = (Clock::now() + kBookmarkEvery).time_since_epoch().count();
  }

  void start(std::shared_ptr<http::StreamSink> sink) override {
    lane_ = d_.lane_for(sink->home());
    {
      std::lock_guard lock(mu_);
      sink_ = std::move(sink);
    }
    if (!initial_.empty()) {
      std::shared_ptr<http::StreamSink> s = current_sink();
      if (s && !s->write(std::move(initial_))) {
        finish(false);
        return;
      }
      initial_.clear();
    }
    if (watch_) {
      std::weak_ptr<WatchStream> weak = shared_from_this();
      Lane* lane = lane_.get();  // outlives the watch: the stream holds both
      watch_->set_notifier([weak, lane] {
        if (auto s = weak.lock()) lane->ready(std::move(s));
      });
    }
    d_.add(shared_from_this());
    lane_->ready(shared_from_this());
  }

  void stop() override { finish(false); }

  // Drains events into the sink. On the lane's thread only.
  void drain() {
    if (done_) return;
    if (!watch_) {
      finish(true);
      return;
    }
    Lane& lane = *lane_;
    std::string out;
    // The one line of a single event is written from the lane's cache
    // without a copy; it is copied into `out` before anything else is
    // encoded (which may drop it from the cache).
    const std::string* single = nullptr;
    auto take_single = [&] {
      if (single != nullptr) out = *single;
      single = nullptr;
    };
    for (;;) {
      lane.events.clear();
      Status s = watch_->poll(&lane.events, std::chrono::milliseconds(0));
      for (const auto& e : lane.events) {
        take_single();
        const std::string& line = lane.encode_shared(spec_, e);
        if (out.empty()) {
          single = &line;
        } else {
          out += line;
        }
        last_rev_ = e->kv.mod_revision;
      }
      if (!s.is_ok()) {
        take_single();
        if (s.code() == Code::kExpired) {
          out += d_.encode_object(spec_, "ERROR", status_object(ApiError(s)));
        }
        lane.events.clear();
        if (!out.empty()) write(out);
        finish(true);
        return;
      }
      if (lane.events.empty()) break;
    }
    lane.events.clear();
    if (single != nullptr) {
      write(*single);
    } else if (!out.empty()) {
      write(out);
    }
  }

  // Whether tick() has work: read on the dispatcher's thread.
  bool due(Clock::time_point now) const {
    return now >= deadline_ ||
           (spec_.bookmarks && now.time_since_epoch().count() >= next_bookmark_.load());
  }

  // Timeouts and bookmarks. On the lane's thread only.
  void tick(Clock::time_point now) {
    if (done_) return;
    if (now >= deadline_) {
      finish(true);
      return;
    }
    if (spec_.bookmarks && now.time_since_epoch().count() >= next_bookmark_.load()) {
      next_bookmark_ = (now + kBookmarkEvery).time_since_epoch().count();
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
  Lane* lane() const { return lane_.get(); }

 private:
  std::shared_ptr<http::StreamSink> current_sink() {
    std::lock_guard lock(mu_);
    return sink_;
  }

  // On the lane's thread: straight to the socket when the lane is the
  // connection's own thread (StreamSink::write_here).
  void write(std::string_view data) {
    std::shared_ptr<http::StreamSink> sink = current_sink();
    if (sink && !sink->write_here(data)) finish(false);
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
  std::shared_ptr<Lane> lane_;  // set by start(), before the stream is added
  std::mutex mu_;
  std::shared_ptr<http::StreamSink> sink_;
  std::atomic<bool> done_{false};
  Clock::time_point deadline_;
  std::atomic<Clock::rep> next_bookmark_;
  storage::Revision last_rev_ = 0;
};

void WatchDispatcher::Lane::ready(std::shared_ptr<WatchStream> s) {
  {
    std::lock_guard lock(mu);
    queued.push_back(std::move(s));
    if (posted) return;
    posted = true;
  }
  if (home) {
    home->post([self = shared_from_this()] { self->drain_ready(); });
  } else {
    dispatcher.wake_own();
  }
}

void WatchDispatcher::Lane::drain_ready() {
  {
    std::lock_guard lock(mu);
    batch.swap(queued);
    posted = false;
  }
  for (auto& s : batch) s->drain();
  batch.clear();
}

const std::string& WatchDispatcher::Lane::encode_shared(const WatchSpec& spec,
                                                        const storage::EventPtr& e) {
  if (spec.table || !spec.query.labels.empty() || !spec.query.fields.empty()) {
    scratch = dispatcher.encode(spec, *e);
    return scratch;
  }
  for (auto it = encoded.rbegin(); it != encoded.rend(); ++it) {
    if (it->event == e && it->kind == spec.kind) return it->line;
  }
  // Enough for the events of one batch of drains, across a few kinds, and
  // bounded by bytes too: large objects written in a row must not stay here
  // by the hundred.
  constexpr size_t kMaxLines = 256;
  constexpr size_t kMaxBytes = 4 << 20;
  std::string line = dispatcher.encode(spec, *e);
  while (!encoded.empty() &&
         (encoded.size() >= kMaxLines || encoded_bytes + line.size() > kMaxBytes)) {
    encoded_bytes -= encoded.front().line.size();
    encoded.pop_front();
  }
  encoded_bytes += line.size();
  encoded.push_back({e, spec.kind, std::move(line)});
  return encoded.back().line;
}

WatchDispatcher::WatchDispatcher(Metrics& metrics)
    : metrics_(metrics), own_(std::make_shared<Lane>(*this, nullptr)) {
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
  std::string line = "{\"type\":\"ERROR\",\"object\":";
  append_json(line, status_object(e));
  line += "}\n";
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

std::shared_ptr<WatchDispatcher::Lane> WatchDispatcher::lane_for(
    const std::shared_ptr<http::StreamHome>& home) {
  if (!home) return own_;
  std::lock_guard lock(mu_);
  auto& lane = lanes_[home.get()];
  if (!lane) lane = std::make_shared<Lane>(*this, home);
  return lane;
}

void WatchDispatcher::wake_own() {
  std::lock_guard lock(mu_);
  own_ready_ = true;
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
      cv_.wait(lock, [&] { return stopping_ || own_ready_ || !streams_.empty(); });
      next_tick = std::max(next_tick, Clock::now());
    } else {
      cv_.wait_until(lock, next_tick, [&] { return stopping_ || own_ready_; });
    }
    if (stopping_) break;
    bool drain = own_ready_;
    own_ready_ = false;
    lock.unlock();
    if (drain) own_->drain_ready();
    if (Clock::now() >= next_tick) {
      tick_all();
      next_tick = Clock::now() + std::chrono::milliseconds(250);
    }
    lock.lock();
  }
}

// Streams due for a timeout or a bookmark get their tick on their lane's
// thread, one task per lane; the others cost no wake-up there.
void WatchDispatcher::tick_all() {
  auto now = Clock::now();
  std::map<Lane*, std::vector<std::shared_ptr<WatchStream>>> due;
  {
    std::lock_guard lock(mu_);
    for (const auto& s : streams_) {
      if (s->due(now)) due[s->lane()].push_back(s);
    }
  }
  for (auto& [lane, streams] : due) {
    auto tick = [now, streams = std::move(streams)] {
      for (const auto& s : streams) s->tick(now);
    };
    if (lane->home) {
      lane->home->post(std::move(tick));
    } else {
      tick();
    }
  }
}

std::string WatchDispatcher::encode_object(const WatchSpec& spec, const char* type, json obj) {
  // A built-in kind stored in another version is shown in the one watched.
  if (spec.kind && std::string_view(type) != "ERROR")
    builtin::convert_to(spec.kind->strategy, obj, spec.kind->resource.gv.version);
  if (spec.convert && std::string_view(type) != "ERROR") {
    if (Status s = spec.convert(obj); !s.is_ok()) {
      type = "ERROR";
      obj = status_object(conversion_error(s));
    }
  }
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
  append_json(line, out_obj);  // a Table or Status in kube's field order
  line += "}\n";
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
  if (converts_by_webhook(c.kind))
    spec.convert = [&server = c.server, kind = &c.kind,
                    version = c.resource().gv.api_version()](json& obj) {
      return convert_custom(server, *kind, obj, version);
    };
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
