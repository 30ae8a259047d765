// Watch readers for bench_api's fan-out phase: many watch streams read by a
// few epoll threads with plain sockets and OpenSSL, no framework.
//
// The bench shares the server's CPUs. Through Beast and Asio's TLS stream a
// reader cost ~25 us of CPU per event, as much as the server spent sending
// it, so on a 2-core machine the figure measured the client half of the
// time. These readers are still full clients (TLS with the client
// certificate, HTTP/1.1 response head, chunked framing); they only leave out
// the layers that cost more than the reading.
#pragma once

#include <openssl/ssl.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace bench {

struct WatchTarget {
  uint16_t port = 0;
  SSL_CTX* tls = nullptr;  // null: plain HTTP
  std::string bearer;      // "Authorization: Bearer" when set
  std::string path;        // the watch request's target
};

class WatchReaders {
 public:
  // on_line(watcher, line, ns): each line of a stream's body without its
  // newline, with the steady-clock time (ns) of the read that completed it.
  // Runs on the reader threads; one watcher's lines always on the same one.
  using OnLine = std::function<void(int watcher, std::string_view line, int64_t ns)>;

  WatchReaders(int threads, OnLine on_line);
  ~WatchReaders();
  WatchReaders(const WatchReaders&) = delete;
  WatchReaders& operator=(const WatchReaders&) = delete;

  // Opens watcher `index` from the calling thread (connect, handshake, the
  // request and the response head, blocking), then hands it to a reader
  // thread. An error text, or "" once the response is 200 and chunked.
  std::string open(int index, const WatchTarget& target);
  // Streams the server ended (last chunk, close or error) while reading.
  int ended() const { return ended_.load(); }
  // Stops the threads and closes every connection.
  void stop();

  struct Stream;  // watch_reader.cpp

 private:
  void run(int lane);

  OnLine on_line_;
  std::vector<int> epoll_fds_;
  std::vector<std::thread> threads_;
  std::vector<std::unique_ptr<Stream>> streams_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> ended_{0};
};

}  // namespace bench
