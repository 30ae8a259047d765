// bench_storage: the figures that decide whether the RocksDB backend can carry
// the API server, each printed next to its target.
//
// Why these figures:
//  - Durable creates/s. The disk's fsync rate bounds any durable store, so the
//    absolute number describes the machine more than the code. What the backend
//    controls is how much of that rate it keeps, so each run is paired with raw
//    RocksDB synced Puts on the same filesystem and the ratio ours/raw is the
//    target. 64 writers show whether group commit works: without it each writer
//    waits for its own fsync and the ratio collapses.
//  - gets/s and the time to list 10,000 keys: the API server's read paths when
//    no cache answers them.
//  - Watch latency with 1,000 watchers: the fan-out every controller relies on.
//    The watchers are multiplexed over a few consumer threads through
//    set_notifier, as the API server will drive them, not one thread each.
//  - Open time: how long a restart keeps the control plane down.
//  - RSS: what the store costs in memory.
//
// It is a benchmark, not a test: a missed target prints MISS and the exit code
// stays 0. Only errors (a failed store operation, a bad flag) exit non-zero.
// Every phase runs on its own fresh store under one temporary directory, which
// is removed at exit.

#include <malloc.h>  // malloc_trim
#include <stdlib.h>  // mkdtemp
#include <sys/statfs.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <rocksdb/db.h>
#include <rocksdb/options.h>
#include <rocksdb/write_batch.h>

#include "vkube/storage/backend.h"
#include "vkube/storage/rocksdb_backend.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using vkube::Status;
using vkube::storage::Backend;
using vkube::storage::EventPtr;
using vkube::storage::EventType;
using vkube::storage::ListOptions;
using vkube::storage::Revision;
using vkube::storage::Watch;

// Every written value: Kubernetes objects are typically one to a few KiB.
constexpr size_t kValueBytes = 1024;

// ---------------------------------------------------------------------------
// Errors. Benchmark code throws BenchError on the main thread; main() catches
// it, removes the data and exits 1. Worker threads must not throw (an exception
// leaving a thread terminates the process and leaks the data directory), so
// they record the first error in an ErrorSlot, stop, and the main thread
// rethrows it after joining them.

struct BenchError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] void fail(const std::string& what) {
  throw BenchError(what);
}

void check(const Status& status, const std::string& what) {
  if (!status.is_ok()) fail(what + ": " + status.to_string());
}

class ErrorSlot {
 public:
  void set(std::string message) {
    std::lock_guard lock(mu_);
    if (!failed_.load()) {
      message_ = std::move(message);
      failed_.store(true);
    }
  }
  bool failed() const { return failed_.load(std::memory_order_relaxed); }
  void rethrow() const {
    std::lock_guard lock(mu_);
    if (failed_.load()) fail(message_);
  }

 private:
  mutable std::mutex mu_;
  std::atomic<bool> failed_{false};
  std::string message_;
};

// ---------------------------------------------------------------------------
// Small helpers.

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

double ms_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

// A stateless, well-mixed hash (splitmix64 finalizer): random key choice and
// value bytes without per-thread generator state.
uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// 1 KiB of pseudo-random printable bytes, different for every seed. Identical
// values would let RocksDB's block compression shrink the data and flatter
// both sides of every comparison.
void fill_value(uint64_t seed, std::string* out) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  out->resize(kValueBytes);
  uint64_t bits = 0;
  int left = 0;
  for (size_t i = 0; i < kValueBytes; ++i) {
    if (left < 6) {
      bits = mix64(seed * 1315423911ULL + i);
      left = 64;
    }
    (*out)[i] = kAlphabet[bits & 63];
    bits >>= 6;
    left -= 6;
  }
}

// prefix + the zero-padded number, so that keys list in numeric order.
void make_key(std::string_view prefix, int64_t n, std::string* out) {
  char digits[24];
  int len = std::snprintf(digits, sizeof digits, "%08lld", static_cast<long long>(n));
  out->assign(prefix);
  out->append(digits, static_cast<size_t>(len));
}

std::string with_commas(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i != 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return n < 0 ? "-" + out : out;
}

std::string format(const char* fmt, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, value);
  return buf;
}

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  size_t mid = values.size() / 2;
  return values.size() % 2 == 1 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

// The value at fraction `p` of an ascending vector (nearest rank).
int64_t percentile(const std::vector<int64_t>& sorted, double p) {
  if (sorted.empty()) return 0;
  size_t rank = static_cast<size_t>(p * static_cast<double>(sorted.size()));
  return sorted[std::min(rank, sorted.size() - 1)];
}

double ns_to_ms(int64_t ns) {
  return static_cast<double>(ns) / 1e6;
}

// Latencies in 1 µs buckets up to 100 ms, plus the exact maximum. The watch
// phase records millions of samples; a histogram keeps the harness's memory
// and per-sample cost flat where a vector of samples would not.
class LatencyHistogram {
 public:
  static constexpr int64_t kBucketNs = 1000;
  static constexpr size_t kBuckets = 100000;

  LatencyHistogram() : counts_(kBuckets + 1, 0) {}

  void add(int64_t ns) {
    ns = std::max<int64_t>(ns, 0);
    auto bucket = static_cast<size_t>(ns / kBucketNs);
    ++counts_[std::min(bucket, kBuckets)];
    max_ns_ = std::max(max_ns_, ns);
    ++total_;
  }

  void merge(const LatencyHistogram& other) {
    for (size_t i = 0; i < counts_.size(); ++i) counts_[i] += other.counts_[i];
    max_ns_ = std::max(max_ns_, other.max_ns_);
    total_ += other.total_;
  }

  int64_t total() const { return total_; }
  int64_t max_ns() const { return max_ns_; }

  // The upper edge of the bucket holding fraction `p` of the samples (at most
  // the maximum), so a reported percentile never understates.
  int64_t percentile_ns(double p) const {
    if (total_ == 0) return 0;
    auto rank = static_cast<int64_t>(p * static_cast<double>(total_));
    int64_t seen = 0;
    for (size_t i = 0; i < counts_.size(); ++i) {
      seen += counts_[i];
      if (seen > rank) {
        return i == kBuckets ? max_ns_ : std::min(max_ns_, static_cast<int64_t>(i + 1) * kBucketNs);
      }
    }
    return max_ns_;
  }

 private:
  std::vector<int64_t> counts_;
  int64_t max_ns_ = 0;
  int64_t total_ = 0;
};

// A field of /proc/self/status in KiB ("VmRSS", "VmHWM"), or -1.
int64_t proc_status_kib(std::string_view field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.size() > field.size() && line.compare(0, field.size(), field) == 0 &&
        line[field.size()] == ':') {
      size_t pos = line.find_first_of("0123456789");
      if (pos == std::string::npos) return -1;
      int64_t kib = -1;
      std::from_chars(line.data() + pos, line.data() + line.size(), kib);
      return kib;
    }
  }
  return -1;
}

// The filesystem holding `path`, by name where we know it. Printed because the
// durable figures mean nothing on tmpfs, where fsync costs nothing.
std::string filesystem_name(const std::string& path) {
  struct statfs info {};
  if (statfs(path.c_str(), &info) != 0) return "unknown";
  switch (static_cast<uint64_t>(info.f_type)) {
    case 0xEF53:
      return "ext4";
    case 0x58465342:
      return "xfs";
    case 0x9123683E:
      return "btrfs";
    case 0x01021994:
      return "tmpfs";
    case 0x794C7630:
      return "overlayfs";
    case 0x2FC12FC1:
      return "zfs";
    case 0xF2F52010:
      return "f2fs";
    case 0x6969:
      return "nfs";
    default:
      break;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(info.f_type));
  return buf;
}

// Resident memory in MiB after handing freed heap back to the kernel. glibc
// keeps freed memory in its arenas, so without the trim the figure would show
// what earlier phases once used rather than what is still held (leaks, caches).
int64_t trimmed_rss_mib() {
  malloc_trim(0);
  return proc_status_kib("VmRSS") / 1024;
}

// "0.52 0.61 0.70": other load on the machine skews every figure, so it is printed.
std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  if (!(in >> one >> five >> fifteen)) return "unknown";
  return one + " " + five + " " + fifteen;
}

// Peak RSS of the vkube phases alone. The raw RocksDB reference runs use
// RocksDB's defaults (a 64 MiB memtable among them) and would otherwise set
// the process's peak. Writing 5 to /proc/self/clear_refs resets VmHWM to the
// current RSS; where that fails, the figure is simply the peak so far. The
// process-wide peak is kept across the resets.
struct PeakRss {
  int64_t ours_kib = 0;
  int64_t process_kib = 0;
};
PeakRss g_peak;

class OursPeakScope {
 public:
  OursPeakScope() {
    g_peak.process_kib = std::max(g_peak.process_kib, proc_status_kib("VmHWM"));
    std::ofstream("/proc/self/clear_refs") << "5";
  }
  ~OursPeakScope() {
    int64_t hwm = proc_status_kib("VmHWM");
    g_peak.ours_kib = std::max(g_peak.ours_kib, hwm);
    g_peak.process_kib = std::max(g_peak.process_kib, hwm);
  }
  OursPeakScope(const OursPeakScope&) = delete;
  OursPeakScope& operator=(const OursPeakScope&) = delete;
};

unsigned cpu_count() {
  return std::max(1u, std::thread::hardware_concurrency());
}

// ---------------------------------------------------------------------------
// Configuration and results.

struct Config {
  std::string parent_dir;  // where the temporary directory is made
  double seconds = 3;
  bool quick = false;
  // Sizes; --quick shrinks those whose full size makes a smoke run slow.
  int64_t get_keys = 100000;
  int64_t list_keys = 10000;
  int watchers = 1000;
  int watch_writes_per_second = 1000;
  int64_t open_keys = 100000;
};

enum class Verdict { kPass, kMiss, kNotApplicable };

struct TargetRow {
  std::string what;
  std::string measured;
  std::string goal;
  Verdict verdict;
};

class Report {
 public:
  explicit Report(bool quick) : quick_(quick) {}

  // One figure, one line, printed at once so that a failure later keeps it.
  void figure(const std::string& what, const std::string& value) {
    std::printf("%-52s %s\n", (what + ":").c_str(), value.c_str());
    std::fflush(stdout);
  }

  // A target. `full_size_only` marks targets whose size --quick reduces: a
  // quick run shows their figure but does not judge it.
  void target(std::string what, std::string measured, std::string goal, bool pass,
              bool full_size_only = false) {
    Verdict verdict = pass ? Verdict::kPass : Verdict::kMiss;
    if (quick_ && full_size_only) verdict = Verdict::kNotApplicable;
    rows_.push_back({std::move(what), std::move(measured), std::move(goal), verdict});
  }

  void print_summary() const {
    int misses = 0;
    std::printf("\n== summary ==\n");
    for (const TargetRow& row : rows_) {
      const char* label = row.verdict == Verdict::kPass   ? "PASS"
                          : row.verdict == Verdict::kMiss ? "MISS"
                                                          : "n/a ";
      if (row.verdict == Verdict::kMiss) ++misses;
      std::printf("%s  %-42s %16s   target %s\n", label, row.what.c_str(), row.measured.c_str(),
                  row.goal.c_str());
    }
    if (quick_) std::printf("(--quick: reduced sizes; n/a rows are judged only in a full run)\n");
    if (misses == 0) {
      std::printf("all targets met\n");
    } else {
      std::printf("%d target%s MISSED\n", misses, misses == 1 ? "" : "s");
    }
    std::fflush(stdout);
  }

 private:
  bool quick_;
  std::vector<TargetRow> rows_;
};

// Progress notes go to stderr so that stdout holds only figures.
void note(const std::string& text) {
  std::fprintf(stderr, "# %s\n", text.c_str());
  std::fflush(stderr);
}

// ---------------------------------------------------------------------------
// Stores.

std::unique_ptr<Backend> open_store(const std::string& path, bool sync) {
  vkube::storage::RocksDbOptions options;
  options.path = path;
  options.sync = sync;
  auto opened = vkube::storage::open_rocksdb(options);
  check(opened.status(), "open_rocksdb(" + path + ")");
  return std::move(opened).value();
}

// Raw RocksDB with its default options: the reference for what the disk and
// RocksDB's own group commit allow, with none of our bookkeeping.
std::unique_ptr<rocksdb::DB> open_raw(const std::string& path) {
  rocksdb::Options options;
  options.create_if_missing = true;
  rocksdb::DB* db = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(options, path, &db);
  if (!s.ok()) fail("rocksdb::DB::Open(" + path + "): " + s.ToString());
  return std::unique_ptr<rocksdb::DB>(db);
}

void close_raw(std::unique_ptr<rocksdb::DB> db) {
  rocksdb::Status s = db->Close();
  if (!s.ok()) fail("rocksdb::DB::Close: " + s.ToString());
}

int population_threads() {
  return static_cast<int>(std::clamp(cpu_count(), 2u, 8u));
}

// Creates prefix+%08d for n in [0, count) with 1 KiB values from a few
// threads. Setup, not a measurement: open the store with sync off for it.
void populate(Backend& store, std::string_view prefix, int64_t count) {
  const int threads = population_threads();
  ErrorSlot errors;
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      std::string key;
      std::string value;
      for (int64_t n = t; n < count && !errors.failed(); n += threads) {
        make_key(prefix, n, &key);
        fill_value(static_cast<uint64_t>(n), &value);
        auto created = store.create(key, value);
        if (!created.is_ok()) {
          errors.set("populate: create " + key + ": " + created.status().to_string());
          return;
        }
      }
    });
  }
  for (std::thread& thread : pool) thread.join();
  errors.rethrow();
}

// The same keys and values as populate(), in raw RocksDB (unsynced batches of
// 1,000): the data for the raw reference figures of the read phases.
void populate_raw(rocksdb::DB& db, std::string_view prefix, int64_t count) {
  std::string key;
  std::string value;
  rocksdb::WriteBatch batch;
  for (int64_t n = 0; n < count; ++n) {
    make_key(prefix, n, &key);
    fill_value(static_cast<uint64_t>(n), &value);
    batch.Put(key, value);
    if (batch.Count() == 1000 || n + 1 == count) {
      rocksdb::Status s = db.Write(rocksdb::WriteOptions(), &batch);
      if (!s.ok()) fail("raw populate: " + s.ToString());
      batch.Clear();
    }
  }
}

// The key after every key with `prefix` ("" when there is none).
std::string prefix_end(std::string_view prefix) {
  std::string end(prefix);
  while (!end.empty() && static_cast<unsigned char>(end.back()) == 0xff) end.pop_back();
  if (!end.empty()) end.back() = static_cast<char>(static_cast<unsigned char>(end.back()) + 1);
  return end;
}

// A fresh, not yet existing directory for one phase.
class PhaseDirs {
 public:
  explicit PhaseDirs(std::string root) : root_(std::move(root)) {}
  std::string fresh(const std::string& name) {
    std::string path = root_ + "/" + std::to_string(++counter_) + "-" + name;
    if (fs::exists(path)) fail("phase directory already exists: " + path);
    return path;
  }
  // Removes a phase's data as soon as it is done: the phases together would
  // otherwise hold several hundred MB.
  static void drop(const std::string& path) {
    std::error_code ec;
    fs::remove_all(path, ec);
  }

 private:
  std::string root_;
  int counter_ = 0;
};

// ---------------------------------------------------------------------------
// Timed loops.

struct Rate {
  int64_t ops = 0;
  double seconds = 0;
  double per_second() const { return seconds > 0 ? static_cast<double>(ops) / seconds : 0; }
};

// Runs op(thread, n) for n = 0, 1, ... on `threads` threads until `seconds`
// have passed; op returns false after recording an error. All threads start
// together (after they have all been created), and the rate is the total over
// the time until the last thread stopped, so stragglers count.
template <typename Op>
Rate run_timed(int threads, double seconds, ErrorSlot& errors, const Op& op) {
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  Clock::time_point start;
  Clock::time_point deadline;
  std::vector<int64_t> counts(static_cast<size_t>(threads), 0);
  std::vector<Clock::time_point> ends(static_cast<size_t>(threads));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      int64_t n = 0;
      while (!errors.failed()) {
        if (!op(t, n)) break;
        ++n;
        if (Clock::now() >= deadline) break;
      }
      counts[static_cast<size_t>(t)] = n;
      ends[static_cast<size_t>(t)] = Clock::now();
    });
  }
  while (ready.load() < threads) std::this_thread::yield();
  start = Clock::now();
  deadline =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  go.store(true, std::memory_order_release);
  for (std::thread& thread : pool) thread.join();
  errors.rethrow();

  Rate rate;
  Clock::time_point last = start;
  for (size_t t = 0; t < counts.size(); ++t) {
    rate.ops += counts[t];
    last = std::max(last, ends[t]);
  }
  rate.seconds = std::chrono::duration<double>(last - start).count();
  return rate;
}

// ---------------------------------------------------------------------------
// Phase 1 and 2: durable creates, ours against raw RocksDB.

// Per-thread key prefixes and value buffers, so the timed loop allocates
// nothing that the other side of the comparison would not.
struct WriterBuffers {
  std::vector<std::string> prefixes;
  std::vector<std::string> keys;
  std::vector<std::string> values;
  explicit WriterBuffers(int threads) {
    for (int t = 0; t < threads; ++t) {
      prefixes.push_back("/registry/bench/w" + std::to_string(t) + "/");
    }
    keys.resize(static_cast<size_t>(threads));
    values.resize(static_cast<size_t>(threads));
  }
  // Fills the buffers for write n of thread t; returns {key, value}.
  std::pair<std::string_view, std::string_view> next(int t, int64_t n) {
    auto i = static_cast<size_t>(t);
    make_key(prefixes[i], n, &keys[i]);
    fill_value((static_cast<uint64_t>(t) << 40) ^ static_cast<uint64_t>(n), &values[i]);
    return {keys[i], values[i]};
  }
};

Rate durable_creates(PhaseDirs& dirs, const Config& config, int threads) {
  std::string dir = dirs.fresh("creates-" + std::to_string(threads));
  OursPeakScope peak;
  auto store = open_store(dir, /*sync=*/true);
  WriterBuffers buffers(threads);
  ErrorSlot errors;
  Rate rate = run_timed(threads, config.seconds, errors, [&](int t, int64_t n) {
    auto [key, value] = buffers.next(t, n);
    auto created = store->create(key, value);
    if (created.is_ok()) return true;
    errors.set("create " + std::string(key) + ": " + created.status().to_string());
    return false;
  });
  store.reset();
  PhaseDirs::drop(dir);
  return rate;
}

Rate raw_synced_puts(PhaseDirs& dirs, const Config& config, int threads) {
  std::string dir = dirs.fresh("raw-" + std::to_string(threads));
  auto db = open_raw(dir);
  WriterBuffers buffers(threads);
  rocksdb::WriteOptions write_options;
  write_options.sync = true;
  ErrorSlot errors;
  Rate rate = run_timed(threads, config.seconds, errors, [&](int t, int64_t n) {
    auto [key, value] = buffers.next(t, n);
    rocksdb::Status s = db->Put(write_options, rocksdb::Slice(key.data(), key.size()),
                                rocksdb::Slice(value.data(), value.size()));
    if (s.ok()) return true;
    errors.set("raw Put " + std::string(key) + ": " + s.ToString());
    return false;
  });
  close_raw(std::move(db));
  PhaseDirs::drop(dir);
  return rate;
}

void bench_writes(PhaseDirs& dirs, const Config& config, Report& report) {
  for (int threads : {1, 64}) {
    std::string who = std::to_string(threads) + (threads == 1 ? " writer" : " writers");
    note("durable creates, " + who);
    Rate ours = durable_creates(dirs, config, threads);
    report.figure("durable creates/s, " + who + " (sync, 1 KiB)",
                  with_commas(std::llround(ours.per_second())) + " /s  (" + with_commas(ours.ops) +
                      " in " + format("%.2f", ours.seconds) + " s)");
    note("raw RocksDB synced puts, " + who);
    Rate raw = raw_synced_puts(dirs, config, threads);
    report.figure("raw RocksDB synced puts/s, " + who + " (1 KiB)",
                  with_commas(std::llround(raw.per_second())) + " /s  (" + with_commas(raw.ops) +
                      " in " + format("%.2f", raw.seconds) + " s)");
    double ratio = raw.per_second() > 0 ? ours.per_second() / raw.per_second() : 0;
    report.figure("ours/raw, " + who, format("%.2f", ratio));
    report.target("durable creates ours/raw, " + who, format("%.2f", ratio), ">= 0.80",
                  ratio >= 0.80);
  }
}

// ---------------------------------------------------------------------------
// Phase 3: gets of random existing keys at the latest revision.

// Read n of thread t: a key spread uniformly over the populated ones.
int64_t random_key_index(int t, int64_t n, int64_t keys) {
  return static_cast<int64_t>(mix64((static_cast<uint64_t>(t) << 48) ^ static_cast<uint64_t>(n)) %
                              static_cast<uint64_t>(keys));
}

// Single-thread gets from raw RocksDB with its default options over the same
// data: what the engine and this machine allow, to tell our layer's cost (or
// a table setting) from the machine's speed.
double raw_gets_per_second(PhaseDirs& dirs, const Config& config, std::string_view prefix) {
  std::string dir = dirs.fresh("gets-raw");
  auto db = open_raw(dir);
  populate_raw(*db, prefix, config.get_keys);
  std::string key;
  std::string value;
  ErrorSlot errors;
  Rate rate = run_timed(1, config.seconds, errors, [&](int t, int64_t n) {
    make_key(prefix, random_key_index(t, n, config.get_keys), &key);
    rocksdb::Status s = db->Get(rocksdb::ReadOptions(), key, &value);
    if (s.ok() && value.size() == kValueBytes) return true;
    errors.set("raw get " + key + ": " + s.ToString());
    return false;
  });
  close_raw(std::move(db));
  PhaseDirs::drop(dir);
  return rate.per_second();
}

void bench_gets(PhaseDirs& dirs, const Config& config, Report& report) {
  constexpr std::string_view kPrefix = "/registry/bench/get/";
  std::string dir = dirs.fresh("gets");
  std::optional<OursPeakScope> peak(std::in_place);  // reset before the raw reference run
  auto store = open_store(dir, /*sync=*/false);
  note("populating " + with_commas(config.get_keys) + " keys for gets");
  populate(*store, kPrefix, config.get_keys);

  double two_thread_rate = 0;
  for (int threads : {1, 2}) {
    note("gets, " + std::to_string(threads) + " thread(s)");
    std::vector<std::string> keys(static_cast<size_t>(threads));
    ErrorSlot errors;
    Rate rate = run_timed(threads, config.seconds, errors, [&](int t, int64_t n) {
      std::string& key = keys[static_cast<size_t>(t)];
      make_key(kPrefix, random_key_index(t, n, config.get_keys), &key);
      auto got = store->get(key);
      if (!got.is_ok()) {
        errors.set("get " + key + ": " + got.status().to_string());
        return false;
      }
      if (got->value.size() != kValueBytes) {
        errors.set("get " + key + ": value of " + std::to_string(got->value.size()) +
                   " bytes, wrote " + std::to_string(kValueBytes));
        return false;
      }
      return true;
    });
    report.figure("gets/s, " + std::to_string(threads) + " thread" + (threads == 1 ? "" : "s") +
                      " (" + with_commas(config.get_keys) + " keys)",
                  with_commas(std::llround(rate.per_second())) + " /s");
    if (threads == 2) two_thread_rate = rate.per_second();
  }
  store.reset();
  peak.reset();
  PhaseDirs::drop(dir);
  note("raw RocksDB gets, 1 thread");
  double raw = raw_gets_per_second(dirs, config, kPrefix);
  report.figure("raw RocksDB gets/s, 1 thread (same data)", with_commas(std::llround(raw)) + " /s");
  report.target("gets/s, 2 threads", with_commas(std::llround(two_thread_rate)) + " /s",
                ">= 100,000 /s", two_thread_rate >= 100000);
}

// ---------------------------------------------------------------------------
// Phase 4: listing one prefix of 10,000 keys, with other keys on both sides
// of it so that the prefix has to be found and its end detected.

// The same listing done on raw RocksDB: a prefix scan copying every key and
// value into strings, the least any list must do. Returns the timed runs.
std::vector<double> raw_list_ms(PhaseDirs& dirs, const Config& config, std::string_view prefix,
                                int runs) {
  std::string dir = dirs.fresh("list-raw");
  auto db = open_raw(dir);
  populate_raw(*db, prefix, config.list_keys);
  populate_raw(*db, "/registry/bench/a/", 1000);
  populate_raw(*db, "/registry/bench/z/", 1000);
  const std::string end = prefix_end(prefix);
  std::vector<double> times;
  for (int run = 0; run <= runs; ++run) {
    Clock::time_point start = Clock::now();
    std::vector<std::pair<std::string, std::string>> items;
    rocksdb::Slice upper(end);
    rocksdb::ReadOptions options;
    options.iterate_upper_bound = &upper;
    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(options));
    for (it->Seek(rocksdb::Slice(prefix.data(), prefix.size())); it->Valid(); it->Next()) {
      items.emplace_back(it->key().ToString(), it->value().ToString());
    }
    Clock::time_point stop = Clock::now();
    if (!it->status().ok()) fail("raw scan: " + it->status().ToString());
    if (static_cast<int64_t>(items.size()) != config.list_keys) {
      fail("raw scan found " + std::to_string(items.size()) + " keys");
    }
    if (run > 0) times.push_back(ms_between(start, stop));
  }
  close_raw(std::move(db));
  PhaseDirs::drop(dir);
  return times;
}

void bench_list(PhaseDirs& dirs, const Config& config, Report& report) {
  constexpr std::string_view kPrefix = "/registry/bench/list/";
  constexpr int kRuns = 7;
  std::string dir = dirs.fresh("list");
  std::optional<OursPeakScope> peak(std::in_place);  // reset before the raw reference run
  auto store = open_store(dir, /*sync=*/false);
  note("populating " + with_commas(config.list_keys) + " keys for list");
  populate(*store, kPrefix, config.list_keys);
  populate(*store, "/registry/bench/a/", 1000);
  populate(*store, "/registry/bench/z/", 1000);

  ListOptions options;
  options.prefix = std::string(kPrefix);
  std::vector<double> times;
  for (int run = 0; run <= kRuns; ++run) {  // run 0 warms the block cache
    Clock::time_point start = Clock::now();
    auto listed = store->list(options);
    Clock::time_point end = Clock::now();
    check(listed.status(), "list " + options.prefix);
    if (static_cast<int64_t>(listed->items.size()) != config.list_keys ||
        !listed->continue_token.empty()) {
      fail("list " + options.prefix + " returned " + std::to_string(listed->items.size()) +
           " items (continue token '" + listed->continue_token + "'), expected " +
           std::to_string(config.list_keys));
    }
    std::string first;
    make_key(kPrefix, 0, &first);
    if (listed->items.front().key != first) {
      fail("list " + options.prefix + " starts at " + listed->items.front().key);
    }
    if (run > 0) times.push_back(ms_between(start, end));
  }
  double med = median(times);
  report.figure(
      "list " + with_commas(config.list_keys) + " keys (median of " + std::to_string(kRuns) + ")",
      format("%.2f ms", med) + "  (min " +
          format("%.2f", *std::min_element(times.begin(), times.end())) + ", max " +
          format("%.2f", *std::max_element(times.begin(), times.end())) + ")");
  store.reset();
  peak.reset();
  PhaseDirs::drop(dir);

  std::vector<double> raw = raw_list_ms(dirs, config, kPrefix, kRuns);
  report.figure("raw RocksDB scan of the same keys (median)",
                format("%.2f ms", median(raw)) + "  (into a vector of key/value strings)");
  report.target("list " + with_commas(config.list_keys) + " keys, median", format("%.2f ms", med),
                "< 20 ms", med < 20);
}

// ---------------------------------------------------------------------------
// Phase 5: watch delivery latency, many watchers on one prefix.
//
// Each watcher's notifier pushes its index into one ready-queue; a few
// consumer threads pop indices and poll that watcher without waiting. A value
// carries the steady_clock time taken just before create(), so latency is
// "write started" to "event in the consumer's hands", the commit included.

class ReadyQueue {
 public:
  explicit ReadyQueue(size_t consumers) : consumers_(std::max<size_t>(consumers, 1)) {}

  // Wakes a consumer when the queue stops being empty, and another each time
  // the backlog grows by kWakeEvery. Waking one per push would cost a context
  // switch per watcher per write, which on a small machine swamps the very
  // latency being measured.
  void push(uint32_t index) {
    bool wake;
    {
      std::lock_guard lock(mu_);
      items_.push_back(index);
      wake = items_.size() % kWakeEvery == 1 || kWakeEvery == 1;
    }
    if (wake) cv_.notify_one();
  }

  // Moves indices into *out, waiting for the first: this consumer's share of
  // the queue, at least a few. Taking a share rather than one index keeps the
  // consumers off the lock the notifying writer needs. Returns false once
  // stopped.
  bool pop_batch(std::vector<uint32_t>* out) {
    out->clear();
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return stopped_ || !items_.empty(); });
    if (stopped_) return false;
    size_t take = std::max<size_t>(8, (items_.size() + consumers_ - 1) / consumers_);
    while (!items_.empty() && out->size() < take) {
      out->push_back(items_.front());
      items_.pop_front();
    }
    return true;
  }

  void stop() {
    {
      std::lock_guard lock(mu_);
      stopped_ = true;
    }
    cv_.notify_all();
  }

 private:
  static constexpr size_t kWakeEvery = 32;
  const size_t consumers_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<uint32_t> items_;
  bool stopped_ = false;
};

// A watcher is in the queue at most once and polled by one consumer at a
// time: Watch promises poll/notifier safety, not concurrent polls, and the
// per-watcher order check below needs a single reader. A notification that
// arrives while a consumer polls marks the watcher dirty, and that consumer
// polls again instead of re-queueing it.
enum WatcherState : uint8_t { kIdle, kQueued, kPolling, kPollingDirty, kEnded };

struct WatcherSlot {
  std::unique_ptr<Watch> watch;
  std::atomic<uint8_t> state{kIdle};
  Revision last_revision = 0;  // the consumer holding the slot owns these
  std::optional<Status> end;
};

struct ConsumerStats {
  LatencyHistogram latency;
  std::atomic<int64_t> events{0};  // read by the main thread while waiting for the drain
  int64_t out_of_order = 0;        // a revision not above the previous one: duplicate or reordered
  int64_t foreign = 0;             // not a put of a key this phase wrote
};

// What a notifier needs, behind one pointer: the closure then holds a pointer
// and an index, small enough for std::function's inline storage, so the
// harness adds no allocation per notification.
struct WatchFanout {
  explicit WatchFanout(int consumers) : queue(static_cast<size_t>(consumers)) {}
  ReadyQueue queue;  // declared first, so it outlives the watches whose notifiers push to it
  std::vector<std::unique_ptr<WatcherSlot>> slots;
};

void notify_ready(WatchFanout& fanout, uint32_t index) {
  std::atomic<uint8_t>& state = fanout.slots[index]->state;
  uint8_t current = state.load();
  while (true) {
    if (current == kIdle) {
      if (state.compare_exchange_weak(current, kQueued)) {
        fanout.queue.push(index);
        return;
      }
    } else if (current == kPolling) {
      if (state.compare_exchange_weak(current, kPollingDirty)) return;
    } else {
      return;  // already queued, already dirty, or ended
    }
  }
}

void drain_watcher(WatcherSlot& slot, std::string_view prefix, ConsumerStats& stats,
                   std::vector<EventPtr>& events) {
  slot.state.store(kPolling);
  while (true) {
    events.clear();
    Status polled = slot.watch->poll(&events, std::chrono::milliseconds(0));
    int64_t now = now_ns();
    for (const EventPtr& event : events) {
      const auto& kv = event->kv;
      if (kv.mod_revision <= slot.last_revision) ++stats.out_of_order;
      slot.last_revision = std::max(slot.last_revision, kv.mod_revision);
      int64_t written = 0;
      auto parsed = std::from_chars(
          kv.value.data(), kv.value.data() + std::min<size_t>(kv.value.size(), 20), written);
      if (event->type != EventType::kPut || kv.key.compare(0, prefix.size(), prefix) != 0 ||
          parsed.ec != std::errc()) {
        ++stats.foreign;
        continue;
      }
      stats.latency.add(now - written);
    }
    stats.events.fetch_add(static_cast<int64_t>(events.size()), std::memory_order_relaxed);
    if (!polled.is_ok()) {
      slot.end = polled;
      slot.state.store(kEnded);
      return;
    }
    uint8_t expected = kPolling;
    if (slot.state.compare_exchange_strong(expected, kIdle)) return;
    slot.state.store(kPolling);  // was dirty: events arrived during the poll
  }
}

void bench_watch(PhaseDirs& dirs, const Config& config, Report& report) {
  constexpr std::string_view kPrefix = "/registry/bench/watch/";
  // Two to four consumers, about one per two CPUs: the writer publishes on
  // its own thread, and consumers beyond the free CPUs only add contention.
  const int consumers = static_cast<int>(std::clamp(cpu_count() / 2, 2u, 4u));
  const auto writes = static_cast<int64_t>(config.seconds * config.watch_writes_per_second);
  std::string dir = dirs.fresh("watch");
  OursPeakScope peak;
  // Sync off: one writer cannot reach 1,000 synced writes/s on a disk whose
  // fsync takes a millisecond or more, and the commit's cost is what the
  // durable-creates figures measure. Here the subject is the fan-out.
  auto store = open_store(dir, /*sync=*/false);

  note("watch: " + with_commas(config.watchers) + " watchers, " + std::to_string(consumers) +
       " consumer threads, " + with_commas(writes) + " writes at " +
       with_commas(config.watch_writes_per_second) + "/s");
  WatchFanout fanout(consumers);
  for (int i = 0; i < config.watchers; ++i) {
    auto watch = store->watch(kPrefix, 0);
    check(watch.status(), "watch " + std::string(kPrefix));
    fanout.slots.push_back(std::make_unique<WatcherSlot>());
    fanout.slots.back()->watch = std::move(watch).value();
  }
  WatchFanout* shared = &fanout;
  for (uint32_t i = 0; i < fanout.slots.size(); ++i) {
    fanout.slots[i]->watch->set_notifier([shared, i] { notify_ready(*shared, i); });
  }

  std::vector<std::unique_ptr<ConsumerStats>> stats;
  for (int c = 0; c < consumers; ++c) stats.push_back(std::make_unique<ConsumerStats>());
  auto delivered = [&stats] {
    int64_t sum = 0;
    for (const auto& s : stats) sum += s->events.load(std::memory_order_relaxed);
    return sum;
  };
  std::vector<std::thread> pool;
  for (int c = 0; c < consumers; ++c) {
    pool.emplace_back([&, c] {
      std::vector<uint32_t> batch;
      std::vector<EventPtr> events;
      while (fanout.queue.pop_batch(&batch)) {
        for (uint32_t index : batch) {
          drain_watcher(*fanout.slots[index], kPrefix, *stats[static_cast<size_t>(c)], events);
        }
      }
    });
  }

  // One writer on a fixed schedule. A late write goes out at once rather than
  // shifting the schedule, so a slow stretch is not hidden. The time stamp is
  // taken just before create(), so latency covers commit, publish and poll.
  std::vector<int64_t> create_ns;
  create_ns.reserve(static_cast<size_t>(writes));
  std::string key;
  std::string value;
  std::optional<Status> write_error;
  const auto period = std::chrono::nanoseconds(1000000000LL / config.watch_writes_per_second);
  Clock::time_point start = Clock::now();
  int64_t written = 0;
  for (; written < writes; ++written) {
    std::this_thread::sleep_until(start + period * written);
    make_key(kPrefix, written, &key);
    fill_value(static_cast<uint64_t>(written), &value);
    int64_t begin = now_ns();
    char stamp[24];
    std::snprintf(stamp, sizeof stamp, "%020lld", static_cast<long long>(begin));
    std::memcpy(value.data(), stamp, 20);
    auto created = store->create(key, value);
    create_ns.push_back(now_ns() - begin);
    if (!created.is_ok()) {
      write_error = created.status();
      break;
    }
  }
  Clock::time_point writes_done = Clock::now();
  double write_seconds = std::chrono::duration<double>(writes_done - start).count();

  // Let the consumers catch up, then stop them.
  const int64_t expected = written * static_cast<int64_t>(fanout.slots.size());
  Clock::time_point drain_deadline = writes_done + std::chrono::seconds(5);
  while (delivered() < expected && Clock::now() < drain_deadline && !write_error) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  double drain_ms = ms_between(writes_done, Clock::now());
  fanout.queue.stop();
  for (std::thread& thread : pool) thread.join();
  const int64_t got = delivered();

  int ended = 0;
  std::string end_reason;
  for (auto& slot : fanout.slots) {
    if (slot->end) {
      ++ended;
      if (end_reason.empty()) end_reason = slot->end->to_string();
    }
  }
  for (auto& slot : fanout.slots) slot->watch.reset();
  store.reset();
  PhaseDirs::drop(dir);
  if (write_error) check(*write_error, "watch phase: create " + key);

  LatencyHistogram latency;
  int64_t out_of_order = 0;
  int64_t foreign = 0;
  for (auto& s : stats) {
    latency.merge(s->latency);
    out_of_order += s->out_of_order;
    foreign += s->foreign;
  }
  std::sort(create_ns.begin(), create_ns.end());

  std::string who = with_commas(config.watchers) + " watchers";
  report.figure("watch writes (one paced writer, sync off)",
                with_commas(written) + " in " + format("%.2f", write_seconds) + " s = " +
                    with_commas(std::llround(static_cast<double>(written) / write_seconds)) +
                    " /s");
  report.figure("watch create() latency p50 / p99 (incl. fan-out)",
                format("%.3f", ns_to_ms(percentile(create_ns, 0.50))) + " / " +
                    format("%.3f ms", ns_to_ms(percentile(create_ns, 0.99))));
  report.figure("watch delivery latency p50 / p99, " + who,
                format("%.3f", ns_to_ms(latency.percentile_ns(0.50))) + " / " +
                    format("%.3f ms", ns_to_ms(latency.percentile_ns(0.99))) + "  (" +
                    std::to_string(consumers) + " consumer threads)");
  report.figure("watch delivery latency p99.9 / max, " + who,
                format("%.3f", ns_to_ms(latency.percentile_ns(0.999))) + " / " +
                    format("%.3f ms", ns_to_ms(latency.max_ns())));
  report.figure("watch events delivered / expected",
                with_commas(got) + " / " + with_commas(expected) +
                    (got == expected ? "" : "  (LOST " + with_commas(expected - got) + ")") +
                    format("  (drained %.0f ms after the last write)", drain_ms));
  report.figure("watchers ended early",
                std::to_string(ended) + (ended ? " (first: " + end_reason + ")" : ""));
  report.figure("watch events out of order or duplicated", with_commas(out_of_order));
  if (foreign != 0)
    report.figure("watch events not from this phase's writes", with_commas(foreign));

  double p99 = ns_to_ms(latency.percentile_ns(0.99));
  report.target("watch p99, " + who, format("%.3f ms", p99), "< 5 ms",
                p99 < 5 && latency.total() > 0, /*full_size_only=*/true);
  report.target("watch events delivered, in order", with_commas(got) + "/" + with_commas(expected),
                "all, none out of order", got == expected && out_of_order == 0 && ended == 0);
}

// ---------------------------------------------------------------------------
// Phase 6: open time, empty and with data.

struct OpenTimes {
  double first_ms = 0;            // the open that created the store
  double close_ms = 0;            // the close after population
  std::vector<double> reopen_ms;  // three reopens after a clean close
  int64_t rss_closed_mib = 0;     // before the first reopen
  int64_t rss_open_mib = 0;       // after the first reopen and a scan of every key
};

// Creates a store at `dir` with `keys` keys (from a sync-off session), closes
// it, then times three reopens with the default options.
OpenTimes time_opens(const std::string& dir, int64_t keys) {
  constexpr std::string_view kPrefix = "/registry/bench/open/";
  OursPeakScope peak;
  OpenTimes times;
  Clock::time_point start = Clock::now();
  auto store = open_store(dir, /*sync=*/keys == 0);
  times.first_ms = ms_between(start, Clock::now());
  if (keys > 0) {
    note("populating " + with_commas(keys) + " keys for open");
    populate(*store, kPrefix, keys);
  }
  start = Clock::now();
  store.reset();
  times.close_ms = ms_between(start, Clock::now());
  times.rss_closed_mib = trimmed_rss_mib();
  for (int i = 0; i < 3; ++i) {
    start = Clock::now();
    store = open_store(dir, /*sync=*/true);
    times.reopen_ms.push_back(ms_between(start, Clock::now()));
    if (i == 0) {
      // Every key must have survived, and the scan shows the memory an open
      // store settles at once its index and filter blocks are loaded.
      auto counted = store->count(kPrefix);
      check(counted.status(), "count after reopen");
      if (*counted != keys) {
        fail("reopened store holds " + std::to_string(*counted) + " keys, wrote " +
             std::to_string(keys));
      }
      times.rss_open_mib = trimmed_rss_mib();
    }
    store.reset();
  }
  return times;
}

// The same reopen on raw RocksDB with its default options: the floor set by
// RocksDB itself and this filesystem's fsync (an open syncs a new MANIFEST,
// OPTIONS file and WAL).
std::vector<double> time_raw_reopens(const std::string& dir) {
  close_raw(open_raw(dir));
  std::vector<double> times;
  for (int i = 0; i < 3; ++i) {
    Clock::time_point start = Clock::now();
    auto db = open_raw(dir);
    times.push_back(ms_between(start, Clock::now()));
    close_raw(std::move(db));
  }
  return times;
}

std::string list_ms(const std::vector<double>& values) {
  std::string out;
  for (double v : values) out += (out.empty() ? "" : ", ") + format("%.1f", v);
  return out;
}

void bench_open(PhaseDirs& dirs, const Config& config, Report& report) {
  note("open, empty store");
  std::string empty_dir = dirs.fresh("open-empty");
  OpenTimes empty = time_opens(empty_dir, 0);
  PhaseDirs::drop(empty_dir);
  std::string raw_dir = dirs.fresh("open-raw");
  std::vector<double> raw = time_raw_reopens(raw_dir);
  PhaseDirs::drop(raw_dir);

  double empty_med = median(empty.reopen_ms);
  report.figure("create a new store", format("%.1f ms", empty.first_ms));
  report.figure("open empty store (median of 3 reopens)",
                format("%.1f ms", empty_med) + "  (" + list_ms(empty.reopen_ms) + ")");
  report.figure("raw RocksDB reopen, empty (median of 3)",
                format("%.1f ms", median(raw)) + "  (" + list_ms(raw) + ")");
  report.target("open empty store, median", format("%.1f ms", empty_med), "< 20 ms",
                empty_med < 20);

  std::string big_dir = dirs.fresh("open-big");
  OpenTimes big = time_opens(big_dir, config.open_keys);
  PhaseDirs::drop(big_dir);
  double big_med = median(big.reopen_ms);
  std::string keys = with_commas(config.open_keys);
  report.figure("close after populating " + keys + " keys", format("%.1f ms", big.close_ms));
  report.figure("open " + keys + "-key store (median of 3 reopens)",
                format("%.1f ms", big_med) + "  (" + list_ms(big.reopen_ms) + ")");
  report.figure("RSS with the " + keys + "-key store open",
                with_commas(big.rss_open_mib) + " MiB  (" + with_commas(big.rss_closed_mib) +
                    " MiB before opening it)");
  report.target("open " + keys + "-key store, median", format("%.1f ms", big_med), "< 300 ms",
                big_med < 300, /*full_size_only=*/true);
}

// ---------------------------------------------------------------------------
// Command line and main.

void print_help() {
  std::printf(
      "usage: bench_storage [--dir DIR] [--seconds N] [--quick]\n"
      "\n"
      "Benchmarks the RocksDB storage backend: durable creates against raw RocksDB,\n"
      "gets, list, watch fan-out latency, open time and memory, each with its target.\n"
      "\n"
      "  --dir DIR     make the scratch directory (DIR/vkube-bench-XXXXXX, removed at\n"
      "                exit) inside the existing directory DIR (default $TMPDIR or /tmp).\n"
      "                The durable figures depend on DIR's filesystem.\n"
      "  --seconds N   duration of each timed run (default 3, or 1 with --quick)\n"
      "  --quick       smaller sizes, for a smoke run; size-dependent targets are not judged\n"
      "  --help        this text\n"
      "\n"
      "Exit status: 0 when the benchmark ran (even with missed targets), 1 on errors,\n"
      "2 on bad usage.\n");
}

// Returns the config, or nullopt after printing why (exit code in *exit_code).
std::optional<Config> parse_args(int argc, char** argv, int* exit_code) {
  Config config;
  std::optional<double> seconds;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value;
    bool has_value = false;
    if (size_t eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg.resize(eq);
      has_value = true;
    }
    auto take_value = [&]() -> bool {
      if (has_value) return true;
      if (i + 1 >= argc) return false;
      value = argv[++i];
      return true;
    };
    if (arg == "--help" || arg == "-h") {
      print_help();
      *exit_code = 0;
      return std::nullopt;
    } else if (arg == "--quick") {
      config.quick = true;
    } else if (arg == "--dir") {
      if (!take_value() || value.empty()) {
        std::fprintf(stderr, "bench_storage: --dir needs a directory\n");
        *exit_code = 2;
        return std::nullopt;
      }
      config.parent_dir = value;
    } else if (arg == "--seconds") {
      double parsed = 0;
      if (take_value()) {
        auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), parsed);
        if (ec != std::errc() || end != value.data() + value.size()) parsed = 0;
      }
      if (!(parsed > 0 && parsed <= 3600)) {
        std::fprintf(stderr, "bench_storage: --seconds needs a number in (0, 3600]\n");
        *exit_code = 2;
        return std::nullopt;
      }
      seconds = parsed;
    } else {
      std::fprintf(stderr, "bench_storage: unknown argument '%s' (see --help)\n", argv[i]);
      *exit_code = 2;
      return std::nullopt;
    }
  }
  if (config.quick) {
    config.seconds = 1;
    config.get_keys = 10000;
    config.watchers = 100;
    config.open_keys = 10000;
  }
  if (seconds) config.seconds = *seconds;
  if (config.parent_dir.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    config.parent_dir = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
  }
  return config;
}

std::string make_scratch_dir(const std::string& parent) {
  std::error_code ec;
  if (!fs::is_directory(parent, ec)) fail(parent + " is not an existing directory");
  std::string pattern = parent + "/vkube-bench-XXXXXX";
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) == nullptr) {
    fail("mkdtemp in " + parent + ": " + std::strerror(errno));
  }
  return buf.data();
}

void run_all(const Config& config, const std::string& scratch) {
  const int64_t start_rss = proc_status_kib("VmRSS") / 1024;
  Report report(config.quick);
  PhaseDirs dirs(scratch);
  std::printf("bench_storage%s: data in %s (%s), %u CPUs, load average %s, %.1f s per timed run\n",
              config.quick ? " --quick" : "", scratch.c_str(), filesystem_name(scratch).c_str(),
              cpu_count(), load_average().c_str(), config.seconds);
  if (filesystem_name(scratch) == "tmpfs") {
    std::printf("WARNING: tmpfs makes fsync free; durable write figures do not reflect a disk\n");
  }
  std::fflush(stdout);

  bench_writes(dirs, config, report);
  bench_gets(dirs, config, report);
  bench_list(dirs, config, report);
  bench_watch(dirs, config, report);
  bench_open(dirs, config, report);

  // At the end every store is closed: what remains is the process itself,
  // RocksDB's process-wide state and anything leaked.
  int64_t untrimmed = proc_status_kib("VmRSS") / 1024;
  int64_t trimmed = trimmed_rss_mib();
  report.figure("RSS at end (all stores closed)",
                with_commas(trimmed) + " MiB  (" + with_commas(untrimmed) +
                    " MiB before malloc_trim, " + with_commas(start_rss) + " MiB at start)");
  g_peak.process_kib = std::max(g_peak.process_kib, proc_status_kib("VmHWM"));
  report.figure("peak RSS during the vkube phases (VmHWM)",
                with_commas(g_peak.ours_kib / 1024) + " MiB  (whole process, raw runs included: " +
                    with_commas(g_peak.process_kib / 1024) + " MiB)");
  report.print_summary();
}

}  // namespace

int main(int argc, char** argv) {
  int exit_code = 0;
  std::optional<Config> config = parse_args(argc, argv, &exit_code);
  if (!config) return exit_code;

  std::string scratch;
  try {
    scratch = make_scratch_dir(config->parent_dir);
    run_all(*config, scratch);
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "bench_storage: error: %s\n", e.what());
    exit_code = 1;
  }
  if (!scratch.empty()) {
    std::error_code ec;
    fs::remove_all(scratch, ec);
    if (ec)
      std::fprintf(stderr, "bench_storage: could not remove %s: %s\n", scratch.c_str(),
                   ec.message().c_str());
  }
  return exit_code;
}
