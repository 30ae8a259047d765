// Query strings, percent-decoding and the header helpers of Request/Response.
// No Beast here: these are used by layers above the transport too.
#include <algorithm>
#include <future>

#include "vkube/http/server.h"
#include "wire.h"

namespace vkube::http {
namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Calls fn(key, value) for each '&'-separated parameter (raw, not decoded)
// until fn returns false. Empty segments ("a=1&&b=2") are skipped.
template <typename Fn>
void for_each_param(std::string_view query, Fn&& fn) {
  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string_view part = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (part.empty()) continue;
    size_t eq = part.find('=');
    std::string_view key = part.substr(0, eq);
    std::string_view value =
        eq == std::string_view::npos ? std::string_view() : part.substr(eq + 1);
    if (!fn(key, value)) return;
  }
}

bool needs_decoding(std::string_view s) {
  return s.find_first_of("%+") != std::string_view::npos;
}

}  // namespace

namespace detail {

void append_percent_decoded(std::string& out, std::string_view in, bool plus_as_space) {
  for (size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    if (c == '%' && i + 2 < in.size()) {
      int hi = hex_value(in[i + 1]);
      int lo = hex_value(in[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out += static_cast<char>(hi * 16 + lo);
        i += 2;
        continue;
      }
    }
    // A '%' without two hex digits is kept as it is: a lenient decoder never
    // turns a bad request into a crash or a silently different name.
    out += (plus_as_space && c == '+') ? ' ' : c;
  }
}

}  // namespace detail

std::string percent_decode(std::string_view in, bool plus_as_space) {
  std::string out;
  out.reserve(in.size());
  detail::append_percent_decoded(out, in, plus_as_space);
  return out;
}

std::vector<std::pair<std::string, std::string>> parse_query(std::string_view query) {
  std::vector<std::pair<std::string, std::string>> out;
  for_each_param(query, [&](std::string_view key, std::string_view value) {
    out.emplace_back(percent_decode(key, true), percent_decode(value, true));
    return true;
  });
  return out;
}

std::optional<std::string> query_param(std::string_view query, std::string_view name) {
  std::optional<std::string> found;
  for_each_param(query, [&](std::string_view key, std::string_view value) {
    // Keys are almost never encoded; compare without allocating when possible.
    bool match = needs_decoding(key) ? percent_decode(key, true) == name : key == name;
    if (match) found = needs_decoding(value) ? percent_decode(value, true) : std::string(value);
    return !match;
  });
  return found;
}

std::string_view Request::header(std::string_view name) const {
  for (const Header& h : headers) {
    if (detail::iequals(h.name, name)) return h.value;
  }
  return {};
}

void Response::set_header(std::string name, std::string value) {
  auto same = [&](const Header& h) { return detail::iequals(h.name, name); };
  auto it = std::find_if(headers.begin(), headers.end(), same);
  if (it == headers.end()) {
    headers.push_back(Header{std::move(name), std::move(value)});
    return;
  }
  it->value = std::move(value);
  // Later duplicates would contradict the replacement; drop them.
  headers.erase(std::remove_if(it + 1, headers.end(), same), headers.end());
}

void DeferredResponse::then(std::function<void(Response&)> step) {
  std::lock_guard lock(mu_);
  if (done_) {
    step(*done_);
  } else {
    steps_.push_back(std::move(step));
  }
}

void DeferredResponse::complete(Response response) {
  std::function<void(Response)> deliver;
  {
    std::lock_guard lock(mu_);
    for (auto& step : steps_) step(response);
    steps_.clear();
    if (!deliver_) {
      done_ = std::move(response);
      return;
    }
    deliver = std::move(deliver_);
  }
  deliver(std::move(response));
}

void DeferredResponse::on_complete(std::function<void(Response)> deliver) {
  std::optional<Response> ready;
  {
    std::lock_guard lock(mu_);
    if (!done_) {
      deliver_ = std::move(deliver);
      return;
    }
    ready = std::move(done_);
    done_.reset();
  }
  deliver(std::move(*ready));
}

void DeferredResponse::finally(Response& r, std::function<void(Response&)> step) {
  if (r.deferred) {
    r.deferred->then(std::move(step));
  } else {
    step(r);
  }
}

Response DeferredResponse::wait(Response r) {
  if (!r.deferred) return r;
  std::promise<Response> answer;
  auto ready = answer.get_future();
  r.deferred->on_complete([&answer](Response final) { answer.set_value(std::move(final)); });
  return ready.get();
}

}  // namespace vkube::http
