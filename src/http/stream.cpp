// Chunked streaming responses (watch): the sink producers write to, and the
// connection side that drains it onto the socket.
#include <span>

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/bind_handler.hpp>

#include "connection.h"
#include "sink.h"
#include "vkube/common/log.h"

namespace vkube::http::detail {
namespace {

constexpr std::string_view kCrlf = "\r\n";
constexpr std::string_view kLastChunk = "0\r\n\r\n";
constexpr size_t kPeekSize = 512;

net::const_buffer view(std::string_view s) {
  return net::buffer(s.data(), s.size());
}

}  // namespace

// SinkImpl --------------------------------------------------------------------------

bool SinkImpl::write(std::string chunk) {
  std::lock_guard lock(mu_);
  if (!accepting_) return false;
  if (chunk.empty()) return true;  // an empty chunk would end the response
  if (unsent_ + chunk.size() > limit_) {
    // The client reads slower than the producer writes: cut it off rather
    // than buffer without bound.
    accepting_ = false;
    if (strand_) {
      net::post(*strand_, [weak = connection_] {
        if (auto c = weak.lock()) c->on_stream_overflow();
      });
    }
    return false;
  }
  unsent_ += chunk.size();
  queue_.push_back(std::move(chunk));
  notify_locked();
  return true;
}

void SinkImpl::close() {
  std::lock_guard lock(mu_);
  if (!accepting_) return;
  accepting_ = false;
  producer_closed_ = true;
  notify_locked();
}

void SinkImpl::notify_locked() {
  // Posting under the lock keeps detach() a barrier: after it, nothing posts.
  if (flush_posted_ || !strand_) return;
  flush_posted_ = true;
  net::post(*strand_, [weak = connection_] {
    if (auto c = weak.lock()) c->flush_stream();
  });
}

bool SinkImpl::take(std::vector<std::string>& out) {
  std::lock_guard lock(mu_);
  out.swap(queue_);
  flush_posted_ = false;
  return producer_closed_ || ending_;
}

void SinkImpl::sent(size_t bytes) {
  std::lock_guard lock(mu_);
  unsent_ -= std::min(bytes, unsent_);
}

void SinkImpl::end_for_shutdown() {
  std::lock_guard lock(mu_);
  accepting_ = false;
  ending_ = true;
}

void SinkImpl::detach() {
  std::lock_guard lock(mu_);
  accepting_ = false;
  strand_.reset();
  queue_.clear();
}

bool SinkImpl::producer_closed() {
  std::lock_guard lock(mu_);
  return producer_closed_;
}

// Connection: streaming ---------------------------------------------------------------

void Connection::begin_stream() {
  state_ = State::kStreaming;
  stream_ = std::move(response_.stream);
  Framing framing;
  framing.chunked = true;
  // A watch ends when either side goes away; the connection is not reused.
  framing.close = true;
  format_head(head_, response_.status, response_.headers, framing);
  response_ = Response{};
  sink_ =
      std::make_shared<SinkImpl>(executor_, weak_from_this(), core_.options.stream_buffer_limit);
  // A watch lasts as long as it likes. No read or write is pending here, so
  // the deadline can be changed; it must not be while streaming.
  lowest().expires_never();
  stream_writing_ = true;
  with_stream([&](auto& s) {
    net::async_write(s, net::buffer(head_),
                     beast::bind_front_handler(&Connection::on_stream_head, shared_from_this()));
  });
}

void Connection::on_stream_head(error_code ec, size_t) {
  stream_writing_ = false;
  if (state_ != State::kStreaming) return;
  if (ec) return close_now();  // never started, so never stopped
  stream_head_sent_ = true;
  if (stream_shutdown_) {  // shutdown came while the head was on its way
    sink_->end_for_shutdown();
    return flush_stream();
  }
  stream_started_ = true;
  try {
    stream_->start(sink_);
  } catch (const std::exception& e) {
    VKUBE_LOG(error, "http: stream start threw", {"error", e.what()});
    stream_stop_called_ = true;
    return close_now();
  } catch (...) {
    stream_stop_called_ = true;
    return close_now();
  }
  if (state_ != State::kStreaming) return;
  watch_peer();
  flush_stream();
}

void Connection::watch_peer() {
  // A pending read is how a vanished client is noticed while nothing is
  // written. What a client sends during a watch is discarded.
  with_stream([&](auto& s) {
    s.async_read_some(buffer_.prepare(kPeekSize),
                      beast::bind_front_handler(&Connection::on_peer_data, shared_from_this()));
  });
}

void Connection::on_peer_data(error_code ec, size_t) {
  if (state_ != State::kStreaming) return;
  if (ec) return close_now();  // the client went away: stop() the producer
  watch_peer();
}

void Connection::flush_stream() {
  if (state_ != State::kStreaming || stream_writing_ || !stream_head_sent_) return;
  bool finish = sink_->take(stream_batch_);
  if (stream_batch_.empty() && !finish) return;
  // Everything queued goes out in one gather write: one size line, the data
  // and a CRLF per chunk, without copying the data.
  chunk_sizes_.resize(stream_batch_.size());
  stream_buffers_.clear();
  stream_payload_ = 0;
  for (size_t i = 0; i < stream_batch_.size(); ++i) {
    const std::string& chunk = stream_batch_[i];
    size_t len = format_chunk_size(chunk_sizes_[i].data(), chunk.size());
    stream_buffers_.push_back(net::buffer(chunk_sizes_[i].data(), len));
    stream_buffers_.push_back(net::buffer(chunk));
    stream_buffers_.push_back(view(kCrlf));
    stream_payload_ += chunk.size();
  }
  if (finish) {
    stream_buffers_.push_back(view(kLastChunk));
    stream_last_sent_ = true;
  }
  stream_writing_ = true;
  // A span, not the vector: async_write copies its buffer sequence.
  std::span<const net::const_buffer> buffers(stream_buffers_);
  with_stream([&](auto& s) {
    net::async_write(s, buffers,
                     beast::bind_front_handler(&Connection::on_stream_written, shared_from_this()));
  });
}

void Connection::on_stream_written(error_code ec, size_t) {
  stream_writing_ = false;
  if (state_ != State::kStreaming) return;
  if (ec) return close_now();
  sink_->sent(stream_payload_);
  stream_batch_.clear();
  if (stream_last_sent_) return close_now();
  flush_stream();
}

void Connection::on_stream_overflow() {
  if (state_ != State::kStreaming) return;
  VKUBE_LOG(warn, "http: stream client too slow, closing", {"remote", remote_},
            {"limit", core_.options.stream_buffer_limit});
  close_now();
}

void Connection::end_stream_for_shutdown() {
  stream_shutdown_ = true;
  if (!stream_head_sent_) return;  // on_stream_head() finishes the job
  sink_->end_for_shutdown();
  stop_stream();
  flush_stream();
}

void Connection::stop_stream() {
  if (!stream_started_ || stream_stop_called_ || !stream_) return;
  stream_stop_called_ = true;
  if (sink_ && sink_->producer_closed()) return;  // the producer ended it itself
  try {
    stream_->stop();
  } catch (const std::exception& e) {
    VKUBE_LOG(error, "http: stream stop threw", {"error", e.what()});
  } catch (...) {
    VKUBE_LOG(error, "http: stream stop threw");
  }
}

}  // namespace vkube::http::detail
