#include "wire.h"

#include <charconv>
#include <cstdio>
#include <ctime>

namespace vkube::http::detail {
namespace {

char lower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

bool has_crlf(std::string_view s) {
  return s.find_first_of("\r\n") != std::string_view::npos;
}

bool valid_name(std::string_view s) {
  return !s.empty() && s.find_first_of("\r\n: \t") == std::string_view::npos;
}

void append_json_string(std::string& out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (u < 0x20) {
          out += "\\u00";
          out += kHex[u >> 4];
          out += kHex[u & 0xf];
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

void append_number(std::string& out, size_t n) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, n);
  out.append(buf, end);
}

// RFC 9110 Date value, formatted at most once per second per thread.
std::string_view http_date() {
  thread_local std::time_t cached_second = 0;
  thread_local char buf[40];
  thread_local size_t len = 0;
  std::time_t now = std::time(nullptr);
  if (now != cached_second) {
    std::tm tm{};
    gmtime_r(&now, &tm);
    len = std::strftime(buf, sizeof buf, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    cached_second = now;
  }
  return {buf, len};
}

}  // namespace

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

std::string_view reason_phrase(int status) {
  switch (status) {
    case 100:
      return "Continue";
    case 101:
      return "Switching Protocols";
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 202:
      return "Accepted";
    case 204:
      return "No Content";
    case 206:
      return "Partial Content";
    case 301:
      return "Moved Permanently";
    case 302:
      return "Found";
    case 304:
      return "Not Modified";
    case 307:
      return "Temporary Redirect";
    case 308:
      return "Permanent Redirect";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 406:
      return "Not Acceptable";
    case 408:
      return "Request Timeout";
    case 409:
      return "Conflict";
    case 410:
      return "Gone";
    case 411:
      return "Length Required";
    case 412:
      return "Precondition Failed";
    case 413:
      return "Request Entity Too Large";
    case 414:
      return "URI Too Long";
    case 415:
      return "Unsupported Media Type";
    case 422:
      return "Unprocessable Entity";
    case 426:
      return "Upgrade Required";
    case 428:
      return "Precondition Required";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 501:
      return "Not Implemented";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    default:
      return "";
  }
}

std::string status_json(int code, std::string_view reason, std::string_view message) {
  std::string out;
  out.reserve(128 + message.size());
  out += R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":)";
  append_json_string(out, message);
  out += R"(,"reason":)";
  append_json_string(out, reason);
  out += R"(,"code":)";
  append_number(out, static_cast<size_t>(code));
  out += '}';
  return out;
}

Response status_response(int code, std::string_view reason, std::string_view message) {
  Response r;
  r.status = code;
  r.headers.push_back(Header{"Content-Type", "application/json"});
  r.body = status_json(code, reason, message);
  return r;
}

bool wants_close(const std::vector<Header>& headers) {
  for (const Header& h : headers) {
    if (iequals(h.name, "Connection") && iequals(h.value, "close")) return true;
  }
  return false;
}

void format_head(std::string& out, int status, const std::vector<Header>& headers,
                 const Framing& framing) {
  out.clear();
  out += "HTTP/1.1 ";
  append_number(out, static_cast<size_t>(status));
  out += ' ';
  out += reason_phrase(status);
  out += "\r\n";
  for (const Header& h : headers) {
    if (!valid_name(h.name) || has_crlf(h.value)) continue;
    if (iequals(h.name, "Content-Length") || iequals(h.name, "Transfer-Encoding") ||
        iequals(h.name, "Connection")) {
      continue;
    }
    out += h.name;
    out += ": ";
    out += h.value;
    out += "\r\n";
  }
  out += "Date: ";
  out += http_date();
  out += "\r\n";
  if (framing.content_length) {
    out += "Content-Length: ";
    append_number(out, *framing.content_length);
    out += "\r\n";
  }
  if (framing.chunked) out += "Transfer-Encoding: chunked\r\n";
  if (framing.close) {
    out += "Connection: close\r\n";
  } else if (framing.keep_alive_header) {
    out += "Connection: keep-alive\r\n";
  }
  out += "\r\n";
}

size_t format_chunk_size(char* buf, size_t size) {
  auto [end, ec] = std::to_chars(buf, buf + 16, size, 16);
  end[0] = '\r';
  end[1] = '\n';
  return static_cast<size_t>(end + 2 - buf);
}

}  // namespace vkube::http::detail
