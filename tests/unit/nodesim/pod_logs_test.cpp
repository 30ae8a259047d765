// Local pods' logs: the CRI lines the writer appends as the container
// prints, and what pods/log's options make of them.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "nodesim/log_writer.h"
#include "nodesim/pod_connector.h"
#include "support/temp_dir.h"

namespace vkube::nodesim {
namespace {

constexpr int64_t kNow = 1764941400LL * 1000000000;  // 2025-12-05T13:30:00Z

std::string file_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const char* kLog =
    "2025-12-05T13:29:00.000000001Z stdout F one\n"
    "2025-12-05T13:29:30.000000000Z stderr F two\n"
    "2025-12-05T13:29:59.500000000Z stdout P thr\n"
    "2025-12-05T13:29:59.500000000Z stdout F ee\n";

TEST_CASE("pods/log options are checked with kube's messages", "[nodesim][pods]") {
  REQUIRE(parse_log_options("tailLines=-1", kNow).status().message() ==
          "tailLines: Invalid value: -1: must be greater than or equal to 0");
  REQUIRE(parse_log_options("tailLines=-1", kNow).status().code() == Code::kInvalid);
  REQUIRE(parse_log_options("limitBytes=0", kNow).status().message() ==
          "limitBytes: Invalid value: 0: must be greater than 0");
  REQUIRE(parse_log_options("tailLines=x", kNow).status().code() == Code::kBadRequest);
  REQUIRE(parse_log_options("sinceSeconds=5&sinceTime=2025-12-05T13:00:00Z", kNow)
              .status()
              .code() == Code::kInvalid);
  REQUIRE(parse_log_options("sinceTime=yesterday", kNow).status().code() == Code::kBadRequest);
  auto o = parse_log_options("follow=true&timestamps=true&tailLines=2&sinceSeconds=60", kNow);
  REQUIRE(o.is_ok());
  CHECK(o->follow);
  CHECK(o->timestamps);
  CHECK(o->tail_lines == 2);
  CHECK(o->since == "2025-12-05T13:29:00.000000000Z");
  CHECK(parse_log_options("sinceTime=2025-12-05T14:29:30%2B01:00", kNow)->since ==
        "2025-12-05T13:29:30.000000000Z");
}

TEST_CASE("pods/log renders CRI lines: text, timestamps, since and limitBytes", "[nodesim][pods]") {
  LogOptions o;
  int64_t budget = -1;
  CHECK(render_log_lines(kLog, o, budget) == "one\ntwo\nthree\n");
  o.timestamps = true;
  CHECK(render_log_lines(kLog, o, budget) ==
        "2025-12-05T13:29:00.000000001Z one\n2025-12-05T13:29:30.000000000Z two\n"
        "2025-12-05T13:29:59.500000000Z three\n");
  o.timestamps = false;
  o.since = "2025-12-05T13:29:30.000000000Z";
  CHECK(render_log_lines(kLog, o, budget) == "two\nthree\n");
  o.since.clear();
  budget = 6;
  CHECK(render_log_lines(kLog, o, budget) == "one\ntw");
  CHECK(budget == 0);
}

TEST_CASE("tailLines starts at the last lines of the file", "[nodesim][pods]") {
  testing::TempDir dir;
  const std::string path = dir.path() + "/c.log";
  std::ofstream(path) << kLog;
  int fd = ::open(path.c_str(), O_RDONLY);
  REQUIRE(fd >= 0);
  const std::string all = kLog;
  CHECK(tail_offset(fd, -1) == 0);
  CHECK(tail_offset(fd, 0) == all.size());
  CHECK(all.substr(tail_offset(fd, 1)) == "2025-12-05T13:29:59.500000000Z stdout F ee\n");
  CHECK(all.substr(tail_offset(fd, 3)).rfind("2025-12-05T13:29:30", 0) == 0);
  CHECK(tail_offset(fd, 100) == 0);
  ::close(fd);
}

TEST_CASE("the log writer timestamps each line of stdout and stderr as it comes",
          "[nodesim][pods]") {
  testing::TempDir dir;
  const std::string path = dir.path() + "/c.log";
  int out[2], err[2];
  REQUIRE(::pipe(out) == 0);
  REQUIRE(::pipe(err) == 0);
  {
    LogWriter writer;
    REQUIRE(writer.add(out[0], err[0], path).is_ok());
    REQUIRE(::write(out[1], "hello\nwor", 9) == 9);
    REQUIRE(::write(err[1], "oops\n", 5) == 5);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    REQUIRE(::write(out[1], "ld\nno newline", 13) == 13);
    ::close(out[1]);
    ::close(err[1]);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const std::string text = file_text(path);
  LogOptions o;
  int64_t budget = -1;
  std::string shown = render_log_lines(text, o, budget);
  // The streams interleave as they arrived; each stream's order holds.
  CHECK(shown.find("hello\n") != std::string::npos);
  CHECK(shown.find("world\n") != std::string::npos);
  CHECK(shown.find("oops\n") != std::string::npos);
  CHECK(shown.find("no newline\n") != std::string::npos);
  CHECK(shown.find("hello\n") < shown.find("world\n"));
  CHECK(text.find(" stderr F oops\n") != std::string::npos);
  CriLine first;
  REQUIRE(parse_cri_line(text.substr(0, text.find('\n')), first));
  CHECK(first.timestamp.size() == 30);
  CHECK(first.timestamp.back() == 'Z');
}

}  // namespace
}  // namespace vkube::nodesim
