// HTTP/1.1 response framing and small helpers shared by the transport files.
// Deliberately free of Beast: the response head is a few string appends, and
// formatting it here keeps per-request work to one reused buffer.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "vkube/http/server.h"

namespace vkube::http::detail {

// ASCII case-insensitive comparison, as HTTP field names require.
bool iequals(std::string_view a, std::string_view b);

// percent_decode() appending to `out`, so a reused string keeps its capacity.
void append_percent_decoded(std::string& out, std::string_view in, bool plus_as_space);

// "OK" for 200, "Not Found" for 404, ...; "" for codes without a standard phrase.
std::string_view reason_phrase(int status);

// A Kubernetes Status object (metav1.Status) describing a failure, as JSON.
std::string status_json(int code, std::string_view reason, std::string_view message);

// A Response carrying status_json(...) with Content-Type application/json.
Response status_response(int code, std::string_view reason, std::string_view message);

// How the transport frames one response.
struct Framing {
  std::optional<size_t> content_length;  // nullopt: no Content-Length field
  bool chunked = false;                  // Transfer-Encoding: chunked
  bool close = false;                    // Connection: close
  bool keep_alive_header = false;        // Connection: keep-alive (HTTP/1.0 clients)
};

// Replaces `out` with the status line and header block (ending in the blank
// line). Handler headers that would break framing (Content-Length,
// Transfer-Encoding, Connection) or that hold CR/LF are dropped.
void format_head(std::string& out, int status, const std::vector<Header>& headers,
                 const Framing& framing);

// True when the handler asked for the connection to close ("Connection: close").
bool wants_close(const std::vector<Header>& headers);

// Whether a response with this status may carry a body (not 1xx, 204, 304).
inline bool status_allows_body(int status) {
  return status >= 200 && status != 204 && status != 304;
}

// The size line of one chunk ("1a2b\r\n") written into `buf`; returns its length.
size_t format_chunk_size(char* buf, size_t size);
inline constexpr size_t kChunkSizeMax = 20;  // 16 hex digits + CRLF, rounded up

}  // namespace vkube::http::detail
