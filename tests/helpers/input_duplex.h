// An in-memory http::Duplex for the streaming fuzz harnesses and tests: reads give the
// fuzzer's bytes in small pieces (so frames arrive split as over TCP), then
// the end of stream; writes are counted and dropped.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>

#include "vkube/http/duplex.h"

namespace vkube::fuzz {

class InputDuplex final : public http::Duplex {
 public:
  explicit InputDuplex(std::string_view input) : input_(input) {}
  Result<size_t> read(char* out, size_t size) override {
    if (closed_) return Status::cancelled("closed");
    // Piece sizes vary with the bytes themselves: deterministic per input.
    size_t piece = 1 + (pos_ < input_.size() ? static_cast<unsigned char>(input_[pos_]) % 97 : 0);
    size_t n = std::min({size, piece, input_.size() - pos_});
    std::copy_n(input_.data() + pos_, n, out);
    pos_ += n;
    return n;
  }
  Status write(std::string_view data) override {
    if (closed_) return Status::cancelled("closed");
    written_ += data.size();
    return Status::ok();
  }
  void close_write() override {}
  void close() override { closed_ = true; }
  void set_deadline(Clock::time_point) override {}
  size_t written() const { return written_; }

 private:
  std::string input_;
  size_t pos_ = 0;
  size_t written_ = 0;
  bool closed_ = false;
};

}  // namespace vkube::fuzz
