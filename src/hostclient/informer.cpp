// The reflector loop: list (paged), then watch from the list's revision,
// resume broken watches from the last revision seen, relist on 410 Gone and
// dispatch only the difference.
#include "vkube/hostclient/informer.h"

#include <algorithm>
#include <cctype>
#include <condition_variable>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "vkube/controllers/object_cache.h"
#include "vkube/common/log.h"

namespace vkube::hostclient {
namespace {

using controllers::EventType;
using controllers::ObjectEvent;
using controllers::ObjectPtr;
using Clock = std::chrono::steady_clock;

// Failed lists and watches are retried from this delay, doubling up to the
// maximum; a success resets it.
constexpr std::chrono::milliseconds kInitialBackoff{500};
constexpr std::chrono::milliseconds kMaxBackoff{30'000};
// A watch that ends sooner than this without a reason counts as a failure
// (a server that closes every stream at once must not be hammered).
constexpr std::chrono::seconds kShortWatch{1};

std::string query_escape(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

// As the local informers keep them: no managedFields (no controller reads
// them, and they are a third of a typical object). A list's items carry no
// kind; they get the list's, so every cached object is self-describing.
ObjectPtr prepare(json obj, const std::string& kind, const std::string& api_version) {
  if (!obj.is_object()) return nullptr;
  auto m = obj.find("metadata");
  if (m == obj.end() || !m->is_object()) return nullptr;
  m->erase("managedFields");
  if (!kind.empty() && !obj.contains("kind")) obj["kind"] = kind;
  if (!api_version.empty() && !obj.contains("apiVersion")) obj["apiVersion"] = api_version;
  return std::make_shared<const json>(std::move(obj));
}

enum class WatchEnd { kEnded, kGone, kFailed, kStopped };

}  // namespace

struct Informer::State {
  Client& client;
  InformerOptions options;
  controllers::ObjectCache cache;
  std::vector<controllers::Handler> handlers;
  Cancellation cancel;
  std::thread thread;

  mutable std::mutex mu;
  mutable std::condition_variable cv;
  bool stopping = false;
  bool synced = false;

  // Only the informer's thread touches these.
  std::string revision;
  std::chrono::milliseconds backoff = kInitialBackoff;
  std::mt19937 rng{std::random_device{}()};

  State(Client& c, InformerOptions o) : client(c), options(std::move(o)) {}

  bool stopping_now() const {
    std::lock_guard lock(mu);
    return stopping;
  }

  // Sleeps the current backoff (then doubles it); false when stopped first.
  bool back_off() {
    std::uniform_int_distribution<long> jitter(0, backoff.count() / 2);
    auto d = backoff + std::chrono::milliseconds(jitter(rng));
    backoff = std::min(backoff * 2, kMaxBackoff);
    std::unique_lock lock(mu);
    return !cv.wait_for(lock, d, [&] { return stopping; });
  }

  std::string selectors() const {
    std::string q;
    if (!options.label_selector.empty())
      q += "&labelSelector=" + query_escape(options.label_selector);
    if (!options.field_selector.empty())
      q += "&fieldSelector=" + query_escape(options.field_selector);
    return q;
  }

  void dispatch(EventType type, std::string key, ObjectPtr object, ObjectPtr old) {
    ObjectEvent e;
    e.type = type;
    e.resource = options.resource;
    e.key = std::move(key);
    e.object = std::move(object);
    e.old = std::move(old);
    for (const controllers::Handler& h : handlers) h(e);
  }

  void apply_put(const std::string& key, ObjectPtr obj) {
    ObjectPtr old = cache.put(key, obj);
    EventType type = old ? EventType::kModified : EventType::kAdded;
    dispatch(type, key, std::move(obj), std::move(old));
  }

  // `last`: the final state the server reported, or null (then the cached one).
  void apply_delete(const std::string& key, ObjectPtr last) {
    ObjectPtr old = cache.remove(key);
    if (!old) return;  // never seen: nothing to tell
    dispatch(EventType::kDeleted, key, last ? std::move(last) : old, old);
  }

  // Lists every page, then dispatches the difference from the cache: adds,
  // modifies for changed revisions, deletes for keys that vanished.
  Status relist() {
    std::vector<ObjectPtr> items;
    std::string cont, list_revision;
    do {
      std::string target = options.path + "?limit=" + std::to_string(options.page_size);
      if (!cont.empty()) target += "&continue=" + query_escape(cont);
      target += selectors();
      Response r = client.call_cancellable("GET", target, nullptr, "application/json", cancel);
      if (!r.ok()) {
        return Status(r.code == 410 ? Code::kExpired : Code::kUnavailable,
                      "list " + options.path + ": " + (r.code ? std::to_string(r.code) + " " : "") +
                          r.message());
      }
      const json& meta = r.body["metadata"];
      if (!meta.is_object()) return Status::unavailable("list " + options.path + ": no metadata");
      cont = meta.value("continue", "");
      // Every page is read at the first page's revision.
      if (list_revision.empty()) list_revision = meta.value("resourceVersion", "");
      std::string kind = r.body.value("kind", "");
      if (kind.ends_with("List")) kind.resize(kind.size() - 4);
      std::string api_version = r.body.value("apiVersion", "");
      json& page = r.body["items"];
      if (!page.is_array()) continue;
      for (json& item : page) {
        if (ObjectPtr obj = prepare(std::move(item), kind, api_version)) items.push_back(obj);
      }
    } while (!cont.empty() && !stopping_now());
    if (stopping_now()) return Status::cancelled("stopped");

    std::set<std::string> present;
    for (ObjectPtr& obj : items) {
      std::string key = controllers::object_key(*obj);
      if (key.empty()) continue;
      present.insert(key);
      // Unchanged objects are not announced again.
      ObjectPtr cur = cache.get(key);
      if (cur && controllers::resource_version(*cur) == controllers::resource_version(*obj)) continue;
      apply_put(key, std::move(obj));
    }
    for (const std::string& key : cache.keys())
      if (!present.count(key)) apply_delete(key, nullptr);
    revision = list_revision;
    return Status::ok();
  }

  // One watch from `revision`, applying its events.
  WatchEnd watch_once(std::string* why) {
    std::uniform_int_distribution<int> spread(300, 600);
    std::string target = options.path + "?watch=1&allowWatchBookmarks=true&resourceVersion=" +
                         query_escape(revision) + "&timeoutSeconds=" + std::to_string(spread(rng)) +
                         selectors();
    bool gone = false;
    Response r = client.watch_cancellable(
        target,
        [&](std::string_view type, json object) {
          if (type == "BOOKMARK") {
            if (object.is_object()) {
              std::string rv = controllers::resource_version(object);
              if (!rv.empty()) revision = rv;
            }
            return true;
          }
          if (type == "ERROR") {
            int code = object.is_object() ? object.value("code", 0) : 0;
            gone = code == 410;
            *why = object.is_object() ? object.value("message", "watch error") : "watch error";
            return false;
          }
          ObjectPtr obj = prepare(std::move(object), {}, {});
          std::string key = obj ? controllers::object_key(*obj) : std::string();
          if (key.empty()) return true;  // nothing a cache can hold
          std::string rv = controllers::resource_version(*obj);
          if (type == "ADDED" || type == "MODIFIED") {
            apply_put(key, std::move(obj));
          } else if (type == "DELETED") {
            apply_delete(key, std::move(obj));
          }
          if (!rv.empty()) revision = rv;
          return true;
        },
        cancel);
    if (stopping_now()) return WatchEnd::kStopped;
    if (gone || r.code == 410) {
      if (why->empty()) *why = r.message();
      return WatchEnd::kGone;
    }
    if (!why->empty()) return WatchEnd::kFailed;
    if (r.code == 200) return WatchEnd::kEnded;
    *why = (r.code ? std::to_string(r.code) + " " : "") + r.message();
    return WatchEnd::kFailed;
  }

  void run() {
    bool listed = false;
    while (!stopping_now()) {
      if (!listed) {
        Status s = relist();
        if (stopping_now()) return;
        if (!s.is_ok()) {
          VKUBE_LOG(warn, "host informer cannot list", {"path", options.path},
                    {"error", s.message()});
          if (!back_off()) return;
          continue;
        }
        listed = true;
        backoff = kInitialBackoff;
        {
          std::lock_guard lock(mu);
          synced = true;
        }
        cv.notify_all();
      }
      std::string why;
      auto started = Clock::now();
      switch (watch_once(&why)) {
        case WatchEnd::kStopped:
          return;
        case WatchEnd::kGone:
          VKUBE_LOG(info, "host informer re-listing", {"path", options.path}, {"reason", why});
          listed = false;
          break;
        case WatchEnd::kEnded:
          if (Clock::now() - started >= kShortWatch) {
            backoff = kInitialBackoff;
          } else if (!back_off()) {
            return;
          }
          break;
        case WatchEnd::kFailed:
          VKUBE_LOG(info, "host informer watch failed", {"path", options.path}, {"error", why});
          if (!back_off()) return;
          break;
      }
    }
  }
};

Informer::Informer(Client& client, InformerOptions options)
    : state_(std::make_unique<State>(client, std::move(options))) {
  if (state_->options.page_size == 0) state_->options.page_size = 500;
}

Informer::~Informer() {
  stop();
}

void Informer::on_event(controllers::Handler handler) {
  state_->handlers.push_back(std::move(handler));
}

void Informer::start() {
  if (state_->thread.joinable()) return;
  state_->thread = std::thread([s = state_.get()] { s->run(); });
}

void Informer::stop() {
  {
    std::lock_guard lock(state_->mu);
    state_->stopping = true;
  }
  state_->cv.notify_all();
  state_->cancel.cancel();
  if (state_->thread.joinable()) state_->thread.join();
}

bool Informer::wait_synced(std::chrono::milliseconds timeout) const {
  std::unique_lock lock(state_->mu);
  return state_->cv.wait_for(lock, timeout, [&] { return state_->synced; });
}

bool Informer::synced() const {
  std::lock_guard lock(state_->mu);
  return state_->synced;
}

ObjectPtr Informer::get(std::string_view key) const {
  return state_->cache.get(key);
}

std::vector<ObjectPtr> Informer::list(std::string_view ns) const {
  return state_->cache.list(ns);
}

std::vector<ObjectPtr> Informer::controlled_by(std::string_view owner_uid) const {
  return state_->cache.controlled_by(owner_uid);
}

size_t Informer::size() const {
  return state_->cache.size();
}

}  // namespace vkube::hostclient
