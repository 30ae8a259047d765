#include "vkube/controllers/informers.h"
#include "vkube/controllers/object_cache.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <thread>
#include <unordered_map>

#include "vkube/common/json_scan.h"
#include "vkube/common/log.h"

namespace vkube::controllers {

namespace {

constexpr std::string_view kRoot = "/registry/";

// "/registry/<group>/<plural>/<rest>" -> {group, plural}, rest.
bool parse_key(std::string_view key, ResourceKey* r, std::string_view* rest) {
  if (key.substr(0, kRoot.size()) != kRoot) return false;
  key.remove_prefix(kRoot.size());
  auto a = key.find('/');
  if (a == std::string_view::npos) return false;
  auto b = key.find('/', a + 1);
  if (b == std::string_view::npos) return false;
  r->group = std::string(key.substr(0, a));
  r->plural = std::string(key.substr(a + 1, b - a - 1));
  *rest = key.substr(b + 1);
  return !rest->empty();
}

std::string resource_id(const ResourceKey& r) {
  return r.group + "/" + r.plural;
}

void finish(json& obj, const storage::KeyValue& kv) {
  json& meta = obj["metadata"];
  meta["resourceVersion"] = std::to_string(kv.mod_revision);
  // No controller reads managedFields, and they are a third of a typical
  // object (client-go's informers drop them too). A write of a cached copy
  // without them keeps the stored ones: absent means "unchanged".
  if (meta.is_object()) meta.erase("managedFields");
}

ObjectPtr decode(const storage::KeyValue& kv) {
  json obj = json::parse(kv.value, nullptr, false);
  if (obj.is_discarded() || !obj.is_object()) return nullptr;
  finish(obj, kv);
  return std::make_shared<const json>(std::move(obj));
}

// Objects no cache keeps reach only handlers that read apiVersion, kind and
// metadata (the any-handlers: garbage collector, namespace controller; and
// the handlers of a filtered cache's resource): the rest is skipped while
// parsing, so a burst of ConfigMap or Secret writes neither builds their data
// trees nor keeps them in memory.
//
// The members are found by scanning the text (the data is skipped, never
// parsed) and only they are parsed; text the scan cannot walk takes the
// parser's callback path below.
ObjectPtr decode_metadata(const storage::KeyValue& kv) {
  std::string small;
  small.reserve(512);
  small.push_back('{');
  auto add = [&small](std::string_view key, std::string_view value) {
    if (small.back() != '{') small.push_back(',');
    small.push_back('"');
    small.append(key);
    small.append("\":");
    small.append(value);
  };
  bool scanned =
      json_scan::for_each_member(kv.value, [&](std::string_view key, std::string_view value) {
        if (key == "apiVersion" || key == "kind") {
          add(key, value);
        } else if (key == "metadata") {
          if (value.empty() || value.front() != '{') return true;  // finish() copes
          add(key, "{");
          if (!json_scan::for_each_member(value, [&](std::string_view k, std::string_view v) {
                if (k != "managedFields") add(k, v);
                return true;
              }))
            return false;
          small.push_back('}');
        }
        return true;
      });
  small.push_back('}');
  if (scanned) {
    json obj = json::parse(small, nullptr, false);
    if (!obj.is_discarded() && obj.is_object()) {
      finish(obj, kv);
      return std::make_shared<const json>(std::move(obj));
    }
  }
  json::parser_callback_t keep = [](int depth, json::parse_event_t event, json& parsed) {
    if (event != json::parse_event_t::key) return true;
    const auto& k = parsed.get_ref<const std::string&>();
    if (depth == 1) return k == "metadata" || k == "apiVersion" || k == "kind";
    return depth != 2 || k != "managedFields";
  };
  json obj = json::parse(kv.value, keep, false);
  if (obj.is_discarded() || !obj.is_object()) return nullptr;
  finish(obj, kv);
  return std::make_shared<const json>(std::move(obj));
}

}  // namespace

struct Informers::State {
  storage::Backend& store;
  // A cached resource: its cache, which keys the cache keeps (null: all)
  // and the handlers of its events.
  struct Watched {
    std::unique_ptr<ObjectCache> cache;
    KeyFilter only;
    std::vector<Handler> handlers;
  };
  std::unordered_map<std::string, Watched> resources;  // by resource_id
  std::vector<Handler> any_handlers;
  // The revision last seen of every object no cache keeps, by storage key;
  // kept only when a handler can see them. Their states are not kept: a
  // watch event carries the state before it (prev_kv), and a relist reads
  // a missed object's last state back from the store's history. Keeping
  // their parsed metadata cost about 1 KB per stored object, most of a
  // tenant's memory once it holds tens of thousands of ConfigMaps.
  std::unordered_map<std::string, storage::Revision> others;

  std::unique_ptr<storage::Watch> watch;
  std::thread thread;
  std::mutex mu;
  std::condition_variable cv;
  bool stopping = false;
  bool woken = false;
  std::atomic<storage::Revision> dispatched{0};
  std::mutex progress_mu;
  std::condition_variable progress_cv;

  explicit State(storage::Backend& s) : store(s) {}

  // Where the object of one stored key belongs.
  struct Target {
    ResourceKey resource;
    std::string_view key;          // "ns/name" or "name"
    Watched* watched = nullptr;    // its resource, when cached
    ObjectCache* cache = nullptr;  // the cache that keeps this object, if any
  };

  bool locate(std::string_view storage_key, Target* t) {
    if (!parse_key(storage_key, &t->resource, &t->key)) return false;
    auto it = resources.find(resource_id(t->resource));
    if (it == resources.end()) return true;
    t->watched = &it->second;
    if (!t->watched->only || t->watched->only(t->key)) t->cache = t->watched->cache.get();
    return true;
  }

  // The object of a put: whole when a cache keeps it, else its metadata.
  static ObjectPtr decode_for(const Target& t, const storage::KeyValue& kv) {
    return t.cache != nullptr ? decode(kv) : decode_metadata(kv);
  }

  // Applies one stored state (obj null: deleted) and tells the handlers.
  // `rev`: the put's revision; `prev`: the state before the event, when the
  // event carries it (the last state of an uncached object comes from it).
  void apply(const std::string& storage_key, ObjectPtr obj, storage::Revision rev = 0,
             const storage::KeyValue* prev = nullptr) {
    Target t;
    if (locate(storage_key, &t)) apply(storage_key, t, std::move(obj), rev, prev);
  }

  void apply(const std::string& storage_key, const Target& t, ObjectPtr obj, storage::Revision rev,
             const storage::KeyValue* prev) {
    ObjectCache* cache = t.cache;
    if (cache == nullptr && any_handlers.empty() && (!t.watched || t.watched->handlers.empty()))
      return;
    ObjectEvent e;
    e.resource = t.resource;
    e.key = std::string(t.key);
    ObjectPtr old;
    if (cache != nullptr) {
      old = obj ? cache->put(e.key, obj) : cache->remove(e.key);
    } else if (obj) {
      auto [it, inserted] = others.try_emplace(storage_key, rev);
      if (!inserted) {
        old = last_state(storage_key, it->second, prev);
        it->second = rev;
      }
    } else if (auto it = others.find(storage_key); it != others.end()) {
      old = last_state(storage_key, it->second, prev);
      others.erase(it);
      // Its state is gone from history too (compacted): the handlers still
      // hear of the delete, with what the key says.
      if (!old) old = from_key(t);
    }
    if (obj) {
      e.type = old ? EventType::kModified : EventType::kAdded;
      e.object = std::move(obj);
      e.old = std::move(old);
    } else {
      if (!old) return;  // never seen
      e.type = EventType::kDeleted;
      e.object = old;
      e.old = std::move(old);
    }
    if (t.watched != nullptr)
      for (const Handler& h : t.watched->handlers) h(e);
    for (const Handler& h : any_handlers) h(e);
  }

  // The metadata of an uncached object as last seen at revision `seen`:
  // the event's previous state when it is that one (always, on a watch that
  // missed nothing), else read back at that revision, or at the oldest one
  // history still has (a state it had after `seen`). Null when history no
  // longer has the object.
  ObjectPtr last_state(const std::string& storage_key, storage::Revision seen,
                       const storage::KeyValue* prev) {
    if (prev != nullptr && prev->mod_revision == seen) return decode_metadata(*prev);
    auto got = store.get(storage_key, std::max(seen, store.compacted_revision()));
    return got.is_ok() ? decode_metadata(*got) : nullptr;
  }

  // A deleted object's metadata from its key alone: name and namespace.
  static ObjectPtr from_key(const Target& t) {
    json meta = json::object();
    auto slash = t.key.find('/');
    if (slash == std::string_view::npos) {
      meta["name"] = std::string(t.key);
    } else {
      meta["namespace"] = std::string(t.key.substr(0, slash));
      meta["name"] = std::string(t.key.substr(slash + 1));
    }
    return std::make_shared<const json>(json{{"metadata", std::move(meta)}});
  }

  void advance(storage::Revision rev) {
    if (rev <= dispatched.load()) return;
    {
      std::lock_guard lock(progress_mu);
      dispatched.store(rev);
    }
    progress_cv.notify_all();
  }

  // Lists everything and dispatches the difference from what is known.
  Status relist() {
    storage::ListOptions lo;
    lo.prefix = std::string(kRoot);
    auto listed = store.list(lo);
    if (!listed.is_ok()) return listed.status();
    std::set<std::string> present;
    for (const storage::KeyValue& kv : listed->items) {
      present.insert(kv.key);
      Target t;
      if (!locate(kv.key, &t)) continue;
      // Unchanged objects are neither parsed nor re-announced.
      if (t.cache != nullptr) {
        ObjectPtr cur = t.cache->get(t.key);
        if (cur &&
            (*cur)["metadata"].value("resourceVersion", "") == std::to_string(kv.mod_revision))
          continue;
      } else if (auto seen = others.find(kv.key);
                 seen != others.end() && seen->second == kv.mod_revision) {
        continue;
      }
      ObjectPtr obj = decode_for(t, kv);
      if (!obj) continue;
      apply(kv.key, t, std::move(obj), kv.mod_revision, nullptr);
    }
    // Deletions missed while the watch was gone.
    for (auto& [id, watched] : resources) {
      for (const std::string& k : watched.cache->keys()) {
        std::string full = std::string(kRoot) + id + "/" + k;
        if (!present.count(full)) apply(full, nullptr);
      }
    }
    std::vector<std::string> gone;
    for (const auto& [k, v] : others)
      if (!present.count(k)) gone.push_back(k);
    for (const std::string& k : gone) apply(k, nullptr);
    advance(listed->revision);
    auto w = store.watch(kRoot, listed->revision);
    if (!w.is_ok()) return w.status();
    watch = std::move(w).value();
    watch->set_notifier([this] {
      std::lock_guard lock(mu);
      woken = true;
      cv.notify_all();
    });
    return Status::ok();
  }

  void run() {
    std::vector<storage::EventPtr> events;
    while (true) {
      {
        std::unique_lock lock(mu);
        cv.wait(lock, [&] { return stopping || woken; });
        if (stopping) return;
        woken = false;
      }
      while (true) {
        events.clear();
        Status s = watch->poll(&events, std::chrono::milliseconds(0));
        for (const storage::EventPtr& ev : events) {
          Target t;
          if (locate(ev->kv.key, &t))
            apply(ev->kv.key, t,
                  ev->type == storage::EventType::kPut ? decode_for(t, ev->kv) : nullptr,
                  ev->kv.mod_revision, ev->prev_kv ? &*ev->prev_kv : nullptr);
          advance(ev->kv.mod_revision);
        }
        if (!s.is_ok()) {
          if (stopping_now()) return;
          VKUBE_LOG(info, "controller informers re-listing", {"reason", s.message()});
          Status r = relist();
          while (!r.is_ok() && !stopping_now()) {
            VKUBE_LOG(warn, "controller informers cannot re-list", {"error", r.message()});
            std::unique_lock lock(mu);
            cv.wait_for(lock, std::chrono::seconds(1), [&] { return stopping; });
            lock.unlock();
            r = relist();
          }
          break;
        }
        if (events.empty()) break;
      }
    }
  }

  bool stopping_now() {
    std::lock_guard lock(mu);
    return stopping;
  }
};

Informers::Informers(storage::Backend& store) : state_(std::make_unique<State>(store)) {}

Informers::~Informers() {
  stop();
}

const Lister& Informers::cache(const ResourceKey& resource, KeyFilter only) {
  State::Watched& w = state_->resources[resource_id(resource)];
  if (!w.cache) {
    w.cache = std::make_unique<ObjectCache>();
    w.only = std::move(only);
  } else if (w.only && only) {  // keeps what either caller wants
    w.only = [a = std::move(w.only), b = std::move(only)](std::string_view key) {
      return a(key) || b(key);
    };
  } else {
    w.only = nullptr;  // someone wants all of them
  }
  return *w.cache;
}

void Informers::on_event(const ResourceKey& resource, Handler handler) {
  // Caches the resource (all of it, unless someone asked for a filtered cache first).
  if (!state_->resources.count(resource_id(resource))) (void)cache(resource);
  state_->resources[resource_id(resource)].handlers.push_back(std::move(handler));
}

void Informers::on_any_event(Handler handler) {
  state_->any_handlers.push_back(std::move(handler));
}

Status Informers::start() {
  VKUBE_RETURN_IF_ERROR(state_->relist());
  state_->thread = std::thread([this] { state_->run(); });
  return Status::ok();
}

void Informers::stop() {
  {
    std::lock_guard lock(state_->mu);
    state_->stopping = true;
    state_->cv.notify_all();
  }
  if (state_->thread.joinable()) state_->thread.join();
  if (state_->watch) state_->watch->cancel();
}

bool Informers::wait_for(storage::Revision revision, std::chrono::milliseconds timeout) {
  std::unique_lock lock(state_->progress_mu);
  return state_->progress_cv.wait_for(lock, timeout,
                                      [&] { return state_->dispatched.load() >= revision; });
}

bool Informers::sync(std::chrono::milliseconds timeout) {
  return wait_for(state_->store.current_revision(), timeout);
}

storage::Revision Informers::dispatched_revision() const {
  return state_->dispatched.load();
}

}  // namespace vkube::controllers
