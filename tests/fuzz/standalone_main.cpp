// The fuzz harnesses without libFuzzer, for the regular (g++) test suite:
//
//   vkube_fuzz_smoke <harness> [--corpus DIR] [--runs N] [--seconds S] [--seed N]
//   vkube_fuzz_smoke <harness> FILE...     (replay inputs, e.g. a saved crash)
//
// Runs every file of the seed corpus, then N inputs made by mutating the
// seeds (byte flips, inserts, deletes, repeats, splices) with a fixed seed, so
// a run is reproducible; it stops early after S seconds. A harness that finds
// a problem aborts; the input is written first to fuzz-smoke-<harness>.input.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "harnesses.h"

namespace {

#define VKUBE_DECLARE(name) extern "C" int vkube_fuzz_##name(const uint8_t*, size_t);
VKUBE_FUZZ_HARNESSES(VKUBE_DECLARE)
#undef VKUBE_DECLARE

struct Harness {
  const char* name;
  int (*run)(const uint8_t*, size_t);
};

constexpr Harness kHarnesses[] = {
#define VKUBE_ENTRY(name) {#name, vkube_fuzz_##name},
    VKUBE_FUZZ_HARNESSES(VKUBE_ENTRY)
#undef VKUBE_ENTRY
};

constexpr size_t kMaxLen = 4096;  // libFuzzer's default -max_len

std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The input under test, written out before each run: an abort leaves it on disk.
void run_one(const Harness& h, const std::string& input, const std::string& save_as) {
  if (!save_as.empty()) {
    std::ofstream out(save_as, std::ios::binary | std::ios::trunc);
    out.write(input.data(), static_cast<std::streamsize>(input.size()));
  }
  h.run(reinterpret_cast<const uint8_t*>(input.data()), input.size());
}

std::string mutate(std::mt19937_64& rng, const std::vector<std::string>& seeds) {
  auto pick = [&](size_t n) { return n == 0 ? size_t{0} : static_cast<size_t>(rng() % n); };
  std::string s = seeds.empty() ? std::string() : seeds[pick(seeds.size())];
  int steps = 1 + static_cast<int>(rng() % 4);
  for (int i = 0; i < steps; ++i) {
    switch (rng() % 7) {
      case 0:  // flip a bit
        if (!s.empty()) s[pick(s.size())] ^= static_cast<char>(1u << (rng() % 8));
        break;
      case 1:  // set a byte to an interesting value
        if (!s.empty()) {
          static const char kBytes[] = {0,   '\\', '"',    '{',    '[', ':',
                                        ',', '\n', '\xff', '\x80', '%'};
          s[pick(s.size())] = kBytes[pick(sizeof kBytes)];
        }
        break;
      case 2:  // insert a random byte
        s.insert(s.begin() + static_cast<std::ptrdiff_t>(pick(s.size() + 1)),
                 static_cast<char>(rng()));
        break;
      case 3:  // delete a range
        if (!s.empty()) {
          size_t at = pick(s.size());
          s.erase(at, 1 + pick(std::min<size_t>(16, s.size() - at)));
        }
        break;
      case 4:  // repeat a range (nesting, long names, many fields)
        if (!s.empty()) {
          size_t at = pick(s.size());
          size_t len = 1 + pick(std::min<size_t>(32, s.size() - at));
          std::string piece = s.substr(at, len);
          for (size_t n = 1 + pick(8); n > 0; --n) s.insert(at, piece);
        }
        break;
      case 5:  // splice with another seed
        if (!seeds.empty()) {
          const std::string& other = seeds[pick(seeds.size())];
          size_t cut = pick(s.size() + 1);
          s = s.substr(0, cut) + other.substr(pick(other.size() + 1));
        }
        break;
      case 6:  // truncate
        s.resize(pick(s.size() + 1));
        break;
    }
  }
  if (s.size() > kMaxLen) s.resize(kMaxLen);
  return s;
}

int usage() {
  std::fprintf(stderr,
               "usage: vkube_fuzz_smoke <harness> [--corpus DIR] [--runs N] [--seconds S] "
               "[--seed N] [FILE...]\nharnesses:");
  for (const Harness& h : kHarnesses) std::fprintf(stderr, " %s", h.name);
  std::fprintf(stderr, "\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage();
  const Harness* h = nullptr;
  for (const Harness& candidate : kHarnesses)
    if (std::strcmp(candidate.name, argv[1]) == 0) h = &candidate;
  if (h == nullptr) return usage();
  std::string corpus;
  long runs = 2000;
  double seconds = 10;
  uint64_t seed = 36;
  std::vector<std::string> files;
  for (int i = 2; i < argc; ++i) {
    std::string_view a = argv[i];
    bool has_value = i + 1 < argc;
    if (a == "--corpus" && has_value)
      corpus = argv[++i];
    else if (a == "--runs" && has_value)
      runs = std::stol(argv[++i]);
    else if (a == "--seconds" && has_value)
      seconds = std::stod(argv[++i]);
    else if (a == "--seed" && has_value)
      seed = std::stoull(argv[++i]);
    else if (a.starts_with("--"))
      return usage();
    else
      files.emplace_back(a);
  }
  if (!files.empty()) {
    for (const std::string& f : files) run_one(*h, read_file(f), "");
    std::printf("%s: %zu inputs replayed\n", h->name, files.size());
    return 0;
  }

  std::vector<std::string> seeds;
  if (!corpus.empty() && std::filesystem::is_directory(corpus)) {
    std::vector<std::filesystem::path> paths;
    for (const auto& e : std::filesystem::directory_iterator(corpus))
      if (e.is_regular_file()) paths.push_back(e.path());
    std::sort(paths.begin(), paths.end());  // the same order on every machine
    for (const auto& p : paths) seeds.push_back(read_file(p));
  }
  const std::string save_as = std::string("fuzz-smoke-") + h->name + ".input";
  for (const std::string& s : seeds) run_one(*h, s, save_as);

  std::mt19937_64 rng(seed);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  long done = 0;
  for (; done < runs && std::chrono::steady_clock::now() < deadline; ++done)
    run_one(*h, mutate(rng, seeds), save_as);
  std::filesystem::remove(save_as);
  std::printf("%s: %zu seeds and %ld mutations ran\n", h->name, seeds.size(), done);
  return 0;
}
