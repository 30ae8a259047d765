// The child process of tests/unit/storage/crash_test.cpp: writes to a store from several threads
// and reports each acknowledged write on stdout until the test kills it with SIGKILL.
//
// Usage: storage_crash_writer DATA_DIR SEED
//
// Output, one line per event:
//   open <current_revision> <compacted_revision>
//   begin <create|update|remove> <key>     before the call: from here on the write may commit
//   ack <create|update|remove> <key> <revision> <length>:<fnv1a-hex>   (or "-" for a remove)
//   begin compact <revision>
//   compacted <revision>
// Every line goes out in a single write(2) of less than PIPE_BUF bytes, so lines of different
// threads never interleave and nothing sits in a stdio buffer when the kill arrives: whatever
// the test reads was reported before the process died.
//
// Thread t owns the keys /crash/t<t>/<n>. At start it adopts the ones a previous run left (their
// mod revisions come from the store, so unacknowledged writes of that run are accounted for).
// Values are make_value(key, counter, length), which the test recomputes to check even writes
// it never saw acknowledged. Exit status: 2 when the store does not open, 3 when the store
// answers something that contradicts the writes made so far.
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "vkube/storage/rocksdb_backend.h"

namespace vkube::storage {
namespace {

constexpr int kThreads = 4;
constexpr size_t kSmallestValue = 10;
constexpr size_t kLargestValue = 8192;
// Compact about once per this many writes, this many revisions behind the newest, so that
// every run leaves history both below and above the compacted revision.
constexpr uint64_t kCompactEvery = 500;
constexpr Revision kCompactLag = 100;

// The value format and digest below must agree with crash_test.cpp. The counter comes first
// so that even a 10-byte value names it.
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

void write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) std::_Exit(4);  // the test has gone away; nobody is left to report to
    data.remove_prefix(static_cast<size_t>(n));
  }
}

void emit(std::string line) {
  line.push_back('\n');
  write_all(STDOUT_FILENO, line);
}

// _Exit, not exit: the other threads are still writing, and static destructors racing them
// would only blur the message.
[[noreturn]] void fail(const std::string& message) {
  write_all(STDERR_FILENO, "storage_crash_writer: " + message + "\n");
  std::_Exit(3);
}

struct OwnedKey {
  std::string key;
  Revision mod_revision = 0;
};

class Writer {
 public:
  Writer(Backend& store, uint64_t seed) : store_(store), seed_(seed) {}

  void run_thread(int thread) {
    std::mt19937_64 rng(seed_ * 1000003u + static_cast<uint64_t>(thread));
    const std::string prefix = "/crash/t" + std::to_string(thread) + "/";
    int64_t next_n = 0;
    std::vector<OwnedKey> owned = adopt(prefix, &next_n);
    std::uniform_int_distribution<size_t> length_dist(kSmallestValue, kLargestValue);
    // Seeds scatter the first compaction over the whole interval (consecutive seeds included),
    // so that runs shorter than kCompactEvery writes compact too.
    const uint64_t compact_phase = ((seed_ * 0x9E3779B97F4A7C15ull) >> 32) % kCompactEvery;
    for (;;) {
      uint64_t counter = writes_.fetch_add(1) + 1;
      size_t length = length_dist(rng);
      uint64_t dice = rng() % 100;
      if (owned.empty() || dice < 35) {
        std::string key = prefix + std::to_string(next_n++);
        owned.push_back({key, create(key, make_value(key, counter, length))});
      } else {
        size_t index = static_cast<size_t>(rng() % owned.size());
        OwnedKey& target = owned[index];
        if (dice < 90) {
          target.mod_revision = update(target, make_value(target.key, counter, length));
        } else {
          remove(target);
          owned[index] = std::move(owned.back());
          owned.pop_back();
        }
      }
      if ((counter + compact_phase) % kCompactEvery == 0) compact();
    }
  }

 private:
  std::vector<OwnedKey> adopt(const std::string& prefix, int64_t* next_n) {
    ListOptions options;
    options.prefix = prefix;
    options.keys_only = true;
    Result<ListResult> listed = store_.list(options);
    if (!listed) fail("list " + prefix + ": " + listed.status().to_string());
    std::vector<OwnedKey> owned;
    for (const KeyValue& kv : listed->items) {
      int64_t n = std::strtoll(kv.key.c_str() + prefix.size(), nullptr, 10);
      if (n >= *next_n) *next_n = n + 1;
      owned.push_back({kv.key, kv.mod_revision});
    }
    return owned;
  }

  Revision create(const std::string& key, const std::string& value) {
    emit("begin create " + key);
    Result<KeyValue> kv = store_.create(key, value);
    if (!kv) fail("create " + key + ": " + kv.status().to_string());
    if (kv->mod_revision != kv->create_revision || kv->version != 1) {
      fail("create " + key + " returned inconsistent revisions");
    }
    emit("ack create " + key + " " + std::to_string(kv->mod_revision) + " " + digest(value));
    return kv->mod_revision;
  }

  Revision update(const OwnedKey& target, const std::string& value) {
    emit("begin update " + target.key);
    // Only this thread writes the key, so a conflict means the store lost or invented a write.
    Result<KeyValue> kv = store_.update(target.key, value, target.mod_revision);
    if (!kv) fail("update " + target.key + ": " + kv.status().to_string());
    if (kv->mod_revision <= target.mod_revision) {
      fail("update " + target.key + " did not advance its mod revision");
    }
    emit("ack update " + target.key + " " + std::to_string(kv->mod_revision) + " " + digest(value));
    return kv->mod_revision;
  }

  void remove(const OwnedKey& target) {
    emit("begin remove " + target.key);
    Result<KeyValue> kv = store_.remove(target.key, target.mod_revision);
    if (!kv) fail("remove " + target.key + ": " + kv.status().to_string());
    emit("ack remove " + target.key + " " + std::to_string(kv->mod_revision) + " -");
  }

  void compact() {
    Revision target = store_.current_revision() - kCompactLag;
    if (target <= store_.compacted_revision()) return;
    emit("begin compact " + std::to_string(target));
    Status status = store_.compact(target);
    if (!status) fail("compact " + std::to_string(target) + ": " + status.to_string());
    emit("compacted " + std::to_string(target));
  }

  Backend& store_;
  const uint64_t seed_;
  std::atomic<uint64_t> writes_{0};
};

int run(const char* data_dir, uint64_t seed) {
  RocksDbOptions options;
  options.path = data_dir;
  Result<std::unique_ptr<Backend>> opened = open_rocksdb(options);
  if (!opened) {
    write_all(STDERR_FILENO, "storage_crash_writer: open " + std::string(data_dir) + ": " +
                                 opened.status().to_string() + "\n");
    return 2;
  }
  Backend& store = **opened;
  emit("open " + std::to_string(store.current_revision()) + " " +
       std::to_string(store.compacted_revision()));
  Writer writer(store, seed);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back([&writer, t] { writer.run_thread(t); });
  // The threads never return: the only way out is the test's SIGKILL.
  for (std::thread& thread : threads) thread.join();
  return 0;
}

}  // namespace
}  // namespace vkube::storage

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s DATA_DIR SEED\n", argv[0]);
    return 1;
  }
  return vkube::storage::run(argv[1], std::strtoull(argv[2], nullptr, 10));
}
