// Kills a process that writes to the store with SIGKILL at random moments and checks, by
// reopening the store here, that everything it acknowledged survived: "durable by default"
// is only worth something if it holds when the process dies mid-write.
//
// The writer (tests/helpers/storage_crash_writer.cpp) prints "begin" before each write and
// "ack" after it returns, so after a kill every write is either acknowledged (must be there,
// exactly), in flight (may or may not have committed) or never started (must not be there).
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <catch2/catch.hpp>

#include "support/temp_dir.h"
#include "vkube/storage/rocksdb_backend.h"

extern char** environ;

namespace vkube::storage {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr int kCycles = 25;
// Every fifth run is killed without waiting for "open", often while RocksDB is recovering the
// previous run's WAL, because a crash during recovery must not lose it either.
constexpr int kKillDuringOpenEvery = 5;
constexpr char kPrefix[] = "/crash/";
constexpr auto kOpenTimeout = std::chrono::seconds(20);
constexpr auto kReplayTimeout = std::chrono::seconds(10);
constexpr size_t kProblemsShown = 10;

// The value format and digest must agree with storage_crash_writer.cpp.
std::string make_value(std::string_view key, uint64_t counter, size_t length) {
  std::string unit = std::to_string(counter) + "|" + std::string(key) + "|";
  std::string value;
  value.reserve(length + unit.size());
  while (value.size() < length) value += unit;
  value.resize(length);
  return value;
}

std::string digest(std::string_view value) {
  uint64_t hash = 14695981039346656037ull;
  for (unsigned char c : value) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  char buf[48];
  std::snprintf(buf, sizeof buf, "%zu:%016" PRIx64, value.size(), hash);
  return buf;
}

// True when `value` is one the writer could have written to `key`: unacknowledged writes that
// committed are not in the model, but must still not be torn or misplaced.
bool well_formed(std::string_view key, std::string_view value) {
  size_t bar = value.find('|');
  if (bar == std::string_view::npos || bar == 0 || bar > 19) return false;
  uint64_t counter = 0;
  for (char c : value.substr(0, bar)) {
    if (c < '0' || c > '9') return false;
    counter = counter * 10 + static_cast<uint64_t>(c - '0');
  }
  return value == make_value(key, counter, value.size());
}

struct Ack {
  std::string op;  // create, update or remove
  std::string key;
  Revision revision = 0;
  std::string digest;  // "-" for remove
};

// What one writer process reported before it died.
struct WriterRun {
  bool opened = false;
  Revision open_current = 0;
  Revision open_compacted = 0;
  std::vector<Ack> acks;
  std::map<std::string, std::string> pending;  // key -> op begun and never acknowledged
  Revision acked_compaction = 0;
  Revision begun_compaction = 0;
  std::vector<std::string> problems;
};

void parse_line(const std::string& line, WriterRun* run) {
  std::istringstream in(line);
  std::string word;
  in >> word;
  if (word == "open") {
    in >> run->open_current >> run->open_compacted;
    run->opened = true;
  } else if (word == "begin") {
    std::string op, arg;
    in >> op >> arg;
    if (op == "compact") {
      run->begun_compaction = std::max<Revision>(run->begun_compaction, std::stoll(arg));
    } else {
      run->pending[arg] = op;
    }
  } else if (word == "ack") {
    Ack ack;
    in >> ack.op >> ack.key >> ack.revision >> ack.digest;
    run->pending.erase(ack.key);
    run->acks.push_back(ack);
  } else if (word == "compacted") {
    Revision revision = 0;
    in >> revision;
    run->acked_compaction = std::max(run->acked_compaction, revision);
  } else {
    in.setstate(std::ios::failbit);
  }
  if (in.fail()) run->problems.push_back("unexpected line from the writer: " + line);
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Starts the writer and kills it `delay` after it reports the store open (after its start
// when `during_open`). Returns what it reported; a line cut by the kill is ignored.
WriterRun run_writer(const testing::TempDir& root, uint64_t seed, milliseconds delay,
                     bool during_open) {
  WriterRun run;
  int fds[2];
  REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
  std::string program = VKUBE_CRASH_WRITER;
  std::string data_dir = root.sub("data");
  std::string seed_text = std::to_string(seed);
  std::string err_path = root.sub("writer.stderr");
  std::vector<char*> argv = {program.data(), data_dir.data(), seed_text.data(), nullptr};
  // posix_spawn rather than fork: this process has RocksDB's background threads.
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  int spawned = posix_spawn(&pid, program.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  if (spawned != 0) ::close(fds[0]);
  REQUIRE(spawned == 0);

  const Clock::time_point start = Clock::now();
  Clock::time_point kill_at = during_open ? start + delay : Clock::time_point::max();
  bool killed = false;
  std::string buffer;
  char chunk[1 << 16];
  for (;;) {
    Clock::time_point now = Clock::now();
    if (!killed && kill_at == Clock::time_point::max() && now - start > kOpenTimeout) {
      run.problems.push_back("the writer did not report the store open within 20 s");
      kill_at = now;
    }
    if (!killed && now >= kill_at) {
      ::kill(pid, SIGKILL);
      killed = true;
    }
    int timeout_ms = 100;
    if (!killed && kill_at != Clock::time_point::max()) {
      auto left = std::chrono::duration_cast<milliseconds>(kill_at - now).count();
      timeout_ms = static_cast<int>(std::clamp<int64_t>(left, 0, 100));
    }
    pollfd ready{fds[0], POLLIN, 0};
    if (::poll(&ready, 1, timeout_ms) <= 0) continue;
    ssize_t n = ::read(fds[0], chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // end of file: the writer is dead
    buffer.append(chunk, static_cast<size_t>(n));
    size_t begin = 0;
    for (size_t end; (end = buffer.find('\n', begin)) != std::string::npos; begin = end + 1) {
      parse_line(buffer.substr(begin, end - begin), &run);
      if (run.opened && kill_at == Clock::time_point::max()) kill_at = Clock::now() + delay;
    }
    buffer.erase(0, begin);
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL) {
    run.problems.push_back("the writer ended by itself (wait status " + std::to_string(status) +
                           "): " + read_text(err_path));
  }
  return run;
}

struct KeyState {
  Revision create_revision = 0;
  Revision mod_revision = 0;
  int64_t version = 0;
  std::string digest;
  bool operator==(const KeyState&) const = default;
};
using KeyMap = std::map<std::string, KeyState>;

std::string describe(const KeyState& s) {
  return "{create " + std::to_string(s.create_revision) + ", mod " +
         std::to_string(s.mod_revision) + ", version " + std::to_string(s.version) + ", value " +
         s.digest + "}";
}

struct EventRecord {
  EventType type = EventType::kPut;
  std::string key;
  std::string digest;  // "-" for a delete
  bool operator==(const EventRecord&) const = default;
};

std::string describe(const EventRecord& e) {
  return (e.type == EventType::kPut ? "put " : "delete ") + e.key + " " + e.digest;
}

// The keys under kPrefix as of `revision` (0 = latest).
Result<KeyMap> read_keys(Backend& store, Revision revision, std::vector<std::string>* problems) {
  ListOptions options;
  options.prefix = kPrefix;
  options.revision = revision;
  Result<ListResult> listed = store.list(options);
  if (!listed) return listed.status();
  KeyMap keys;
  for (const KeyValue& kv : listed->items) {
    if (!well_formed(kv.key, kv.value)) {
      problems->push_back("key " + kv.key + " holds a value the writer never wrote (" +
                          digest(kv.value) + ")");
    }
    keys[kv.key] = {kv.create_revision, kv.mod_revision, kv.version, digest(kv.value)};
  }
  return keys;
}

// Everything the writers acknowledged, checked against the store after each kill.
class CrashModel {
 public:
  // Folds in a run's acknowledgements; some contradict earlier ones on their own (one revision
  // given to two writes).
  void apply(const WriterRun& run, std::vector<std::string>* problems) {
    for (const Ack& ack : run.acks) {
      std::string what = ack.op + " " + ack.key + " at revision " + std::to_string(ack.revision);
      auto [earlier, inserted] = acked_.emplace(ack.revision, ack);
      if (!inserted) problems->push_back(what + ": revision also given to " + earlier->second.key);
      if (ack.revision <= current_) {
        problems->push_back(what + ": not above the store's revision before the run, " +
                            std::to_string(current_));
      }
      max_acked_ = std::max(max_acked_, ack.revision);
      if (ack.op == "create") {
        KeyState state{ack.revision, ack.revision, 1, ack.digest};
        if (!keys_.emplace(ack.key, state).second) problems->push_back(what + ": key existed");
        continue;
      }
      auto found = keys_.find(ack.key);
      if (found == keys_.end()) {
        problems->push_back(what + ": key did not exist");
      } else if (ack.op == "update") {
        found->second.mod_revision = ack.revision;
        found->second.version += 1;
        found->second.digest = ack.digest;
      } else {
        keys_.erase(found);
      }
    }
    acked_compaction_ = std::max(acked_compaction_, run.acked_compaction);
    acks_ += static_cast<int64_t>(run.acks.size());
  }

  // Checks the reopened store against everything acknowledged so far, then adopts its state
  // for the next run: the writes that were in flight have resolved one way or the other.
  void verify(Backend& store, const WriterRun& run, std::vector<std::string>* problems) {
    const Revision current = store.current_revision();
    const Revision compacted = store.compacted_revision();
    check_revisions(run, current, compacted, problems);
    Result<KeyMap> actual = read_keys(store, 0, problems);
    if (!actual) {
      problems->push_back("list after reopening: " + actual.status().to_string());
      return;
    }
    check_keys(*actual, run, current, problems);
    check_reads_at_acked_revisions(store, run, compacted, problems);
    check_replay(store, run, current, compacted, *actual, problems);
    keys_ = std::move(*actual);
    current_ = current;
    compacted_ = compacted;
    history_.erase(history_.begin(), history_.lower_bound(compacted));
  }

  int64_t acks() const { return acks_; }
  int64_t unacked_committed() const { return unacked_committed_; }
  Revision current() const { return current_; }
  Revision compacted() const { return compacted_; }

 private:
  void check_revisions(const WriterRun& run, Revision current, Revision compacted,
                       std::vector<std::string>* problems) const {
    // Each failed expectation names both revisions.
    auto expect = [&](bool holds, const std::string& what, Revision a, Revision b) {
      if (holds) return;
      problems->push_back(what + " (" + std::to_string(a) + " vs " + std::to_string(b) + ")");
    };
    expect(current >= max_acked_, "current revision below an acknowledged write", current,
           max_acked_);
    expect(current >= current_, "current revision went backwards", current, current_);
    expect(compacted >= acked_compaction_, "compacted revision below an acknowledged compaction",
           compacted, acked_compaction_);
    expect(compacted >= compacted_, "compacted revision went backwards", compacted, compacted_);
    expect(compacted <= std::max(compacted_, run.begun_compaction), "compacted beyond requests",
           compacted, run.begun_compaction);
    expect(compacted <= current, "compacted revision above the current one", compacted, current);
    // The writer must find the store exactly as the test's last reopen left it.
    expect(!run.opened || run.open_current == current_, "writer opened at another revision",
           run.open_current, current_);
    expect(!run.opened || run.open_compacted == compacted_, "writer opened at another compaction",
           run.open_compacted, compacted_);
    // Each write in flight at the kill may have used one revision without an ack; no more.
    Revision unacked = current - current_ - static_cast<Revision>(run.acks.size());
    expect(unacked <= static_cast<Revision>(run.pending.size()),
           "more unacknowledged revisions than writes in flight", unacked,
           static_cast<Revision>(run.pending.size()));
  }

  void check_keys(const KeyMap& actual, const WriterRun& run, Revision current,
                  std::vector<std::string>* problems) const {
    auto pending_op = [&](const std::string& key) {
      auto found = run.pending.find(key);
      return found == run.pending.end() ? std::string() : found->second;
    };
    for (const auto& [key, want] : keys_) {
      auto got = actual.find(key);
      if (got == actual.end()) {
        if (pending_op(key) != "remove") problems->push_back("lost " + key + " " + describe(want));
        continue;
      }
      const KeyState& have = got->second;
      // An update in flight at the kill may have committed without its ack.
      bool unacked_update = pending_op(key) == "update" && have.mod_revision > current_ &&
                            have.create_revision == want.create_revision &&
                            have.version == want.version + 1;
      if (have != want && !unacked_update) {
        problems->push_back(key + ": acknowledged " + describe(want) + ", store has " +
                            describe(have));
      }
    }
    for (const auto& [key, have] : actual) {
      if (have.mod_revision > current) {
        problems->push_back(key + " " + describe(have) + " is newer than the current revision");
      }
      if (keys_.count(key) != 0) continue;
      bool unacked_create = pending_op(key) == "create" && have.create_revision > current_ &&
                            have.mod_revision == have.create_revision && have.version == 1;
      if (!unacked_create) {
        problems->push_back(key + " " + describe(have) + " exists, but no write left it there");
      }
    }
  }

  // Acknowledged writes must also be readable at their own revision until compacted.
  static void check_reads_at_acked_revisions(Backend& store, const WriterRun& run,
                                             Revision compacted,
                                             std::vector<std::string>* problems) {
    for (const Ack& ack : run.acks) {
      if (ack.revision < compacted) continue;
      std::string what =
          "get " + ack.key + " at " + std::to_string(ack.revision) + " (its " + ack.op + "): ";
      Result<KeyValue> kv = store.get(ack.key, ack.revision);
      if (ack.op == "remove") {
        if (kv.status().code() != Code::kNotFound) problems->push_back(what + "not NotFound");
      } else if (!kv) {
        problems->push_back(what + kv.status().to_string());
      } else if (kv->mod_revision != ack.revision || digest(kv->value) != ack.digest) {
        problems->push_back(what + "mod " + std::to_string(kv->mod_revision) + ", value " +
                            digest(kv->value) + ", acknowledged " + ack.digest);
      }
    }
  }

  // Replays the retained history: one event per revision, in order, each matching its ack (or
  // a write in flight at the kill), and list-at-start plus events must give the latest list.
  void check_replay(Backend& store, const WriterRun& run, Revision current, Revision compacted,
                    const KeyMap& actual, std::vector<std::string>* problems) {
    if (current == 0) return;
    const Revision base = std::max<Revision>(compacted, 1);  // watch after 0 means "from now"
    Result<KeyMap> state = read_keys(store, base, problems);
    Result<std::unique_ptr<Watch>> watch = store.watch(kPrefix, base);
    if (!state || !watch) {
      problems->push_back("list or watch at " + std::to_string(base) + ": " +
                          state.status().to_string() + " / " + watch.status().to_string());
      return;
    }
    std::set<std::string> unacked_seen;
    Revision expected = base + 1;
    const Clock::time_point deadline = Clock::now() + kReplayTimeout;
    while (expected <= current && problems->size() < kProblemsShown) {
      if (Clock::now() > deadline) {
        problems->push_back("replay from " + std::to_string(base) + " stalled before " +
                            std::to_string(expected) + " of " + std::to_string(current));
        break;
      }
      std::vector<EventPtr> events;
      Status status = (*watch)->poll(&events, milliseconds(100));
      for (const EventPtr& event : events) {
        const KeyValue& kv = event->kv;
        if (kv.mod_revision != expected) {
          problems->push_back("replay from " + std::to_string(base) + ": expected revision " +
                              std::to_string(expected) + ", got " +
                              std::to_string(kv.mod_revision));
          return;
        }
        bool put = event->type == EventType::kPut;
        EventRecord record{event->type, kv.key, put ? digest(kv.value) : "-"};
        if (put && !well_formed(kv.key, kv.value)) {
          problems->push_back("torn event " + describe(record));
        }
        check_event(expected, record, run, &unacked_seen, problems);
        history_[expected] = record;
        if (put) {
          (*state)[kv.key] = {kv.create_revision, kv.mod_revision, kv.version, record.digest};
        } else {
          state->erase(kv.key);
        }
        ++expected;
      }
      if (!status) {
        problems->push_back("replay watch ended: " + status.to_string());
        return;
      }
    }
    (*watch)->cancel();
    unacked_committed_ += static_cast<int64_t>(unacked_seen.size());
    if (expected > current && *state != actual) {
      problems->push_back("list at " + std::to_string(base) +
                          " plus the replayed events differs from the latest list");
    }
  }

  void check_event(Revision revision, const EventRecord& record, const WriterRun& run,
                   std::set<std::string>* unacked_seen, std::vector<std::string>* problems) const {
    std::string what = "event at " + std::to_string(revision) + " " + describe(record);
    if (auto seen = history_.find(revision); seen != history_.end()) {
      if (seen->second != record) problems->push_back(what + ": was " + describe(seen->second));
      return;
    }
    if (auto acked = acked_.find(revision); acked != acked_.end()) {
      const Ack& ack = acked->second;
      if (ack.key != record.key || (ack.op == "remove") != (record.type == EventType::kDelete) ||
          ack.digest != record.digest) {
        problems->push_back(what + ": acknowledged as " + ack.op + " " + ack.key + " " +
                            ack.digest);
      }
      return;
    }
    auto pending = run.pending.find(record.key);
    bool in_flight = revision > current_ && pending != run.pending.end() &&
                     (pending->second == "remove") == (record.type == EventType::kDelete) &&
                     unacked_seen->insert(record.key).second;
    if (!in_flight) problems->push_back(what + ": matches no write, acknowledged or in flight");
  }

  KeyMap keys_;
  std::map<Revision, Ack> acked_;            // every acknowledged write
  std::map<Revision, EventRecord> history_;  // events verified by earlier replays
  Revision max_acked_ = 0;
  Revision acked_compaction_ = 0;
  Revision current_ = 0;  // as verified after the previous run
  Revision compacted_ = 0;
  int64_t acks_ = 0;
  int64_t unacked_committed_ = 0;  // writes in flight at a kill that turned out committed
};

uint64_t env_or(const char* name, uint64_t fallback) {
  const char* text = std::getenv(name);
  return text != nullptr && *text != '\0' ? std::strtoull(text, nullptr, 10) : fallback;
}

// Shows the first problems one by one and stops the test: later cycles would only repeat them.
// The store is moved out of the temporary directory first, to be looked at after the test.
void require_no_problems(const std::vector<std::string>& problems, const testing::TempDir& root) {
  if (problems.empty()) return;
  const std::string kept = root.path() + "-failed-store";
  std::error_code error;
  std::filesystem::rename(root.sub("data"), kept, error);
  for (size_t i = 0; i < problems.size() && i < kProblemsShown; ++i) FAIL_CHECK(problems[i]);
  FAIL(problems.size() << " problem(s); store kept at " << (error ? "(move failed)" : kept));
}

TEST_CASE("store survives SIGKILL at random moments", "[storage][crash]") {
  const uint64_t base_seed = env_or("VKUBE_CRASH_SEED", 1);
  const int cycles = static_cast<int>(env_or("VKUBE_CRASH_CYCLES", kCycles));
  INFO("base seed " << base_seed << " (VKUBE_CRASH_SEED repeats it)");
  testing::TempDir root;
  REQUIRE(!root.path().empty());
  RocksDbOptions options;
  options.path = root.sub("data");
  options.watch_buffer_events = 1 << 20;  // the replay must never be cut for falling behind
  CrashModel model;
  const Clock::time_point start = Clock::now();
  int in_flight = 0;
  int killed_before_open = 0;
  for (int cycle = 0; cycle < cycles; ++cycle) {
    const uint64_t seed = base_seed * 1000 + static_cast<uint64_t>(cycle);
    std::mt19937_64 rng(seed);
    const bool during_open = cycle % kKillDuringOpenEvery == kKillDuringOpenEvery - 1;
    const milliseconds delay(during_open ? rng() % 60 : 20 + rng() % 231);
    INFO("cycle " << cycle << ", writer seed " << seed << ", kill " << delay.count() << " ms after "
                  << (during_open ? "start" : "open"));
    WriterRun run = run_writer(root, seed, delay, during_open);
    std::vector<std::string> problems = run.problems;
    model.apply(run, &problems);
    {
      Result<std::unique_ptr<Backend>> store = open_rocksdb(options);
      if (!store) problems.push_back("reopen after the kill: " + store.status().to_string());
      if (store) model.verify(**store, run, &problems);
    }  // closed before the next writer opens it
    require_no_problems(problems, root);
    in_flight += static_cast<int>(run.pending.size());
    killed_before_open += run.opened ? 0 : 1;
  }
  // A last reopen with no writer in between must find exactly the same store.
  std::vector<std::string> problems;
  {
    Result<std::unique_ptr<Backend>> store = open_rocksdb(options);
    REQUIRE(store.is_ok());
    model.verify(**store, WriterRun{}, &problems);
  }
  require_no_problems(problems, root);
  auto seconds = std::chrono::duration<double>(Clock::now() - start).count();
  WARN(cycles << " SIGKILL cycles in " << seconds << " s: " << model.acks()
              << " acknowledged writes checked; " << in_flight << " writes in flight at a kill, "
              << model.unacked_committed() << " of them committed; " << killed_before_open
              << " runs killed before open; final revision " << model.current() << ", compacted "
              << model.compacted());
  CHECK(model.acks() > 0);
}

}  // namespace
}  // namespace vkube::storage
