// Ranged GETs on libcurl's multi interface (HTTP/2 multiplexed over few connections, TLS by the
// libcurl build's OpenSSL, HTTP/1.1 where ALPN or the scheme says so), on a thread of its own
// with its own event loop. A request names its URL, its headers and where its body goes: into a
// caller's buffer (the whole range, written as it arrives, with no copy or callback per chunk on
// the caller's side) once the answer's status, Content-Range and ETag are what the caller
// expects; otherwise the first `bodyCap` bytes of it are kept for the caller to read. Every
// decision (which ranges, retries, hedging, pinning) is the caller's: this only moves bytes and
// reports, per request, its headers, its progress at `notifyEvery` bytes, and one completion.
//
// Thread-safety: start, abort, drain and close may be called from any thread; `wake` runs on the
// client's thread. No N-API here.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "curl-api.h"

namespace ec::net {

struct ClientOptions {
  long connections = 8;
  long streamsPerConnection = 100;
  long connectTimeoutMs = 10'000;
  long headersTimeoutMs = 30'000;
  long bodyTimeoutMs = 30'000;
  std::string ca;  // PEM; empty: the system's CAs
  bool verify = true;
};

struct Request {
  uint32_t id = 0;
  std::string url;
  std::vector<std::string> headers;  // "name: value"
  uint8_t* dest = nullptr;           // nullptr: the body is kept (up to bodyCap)
  size_t destLength = 0;
  size_t bodyCap = 64 << 10;
  size_t notifyEvery = 0;  // a progress event each time this many more bytes are in dest (0: none)
  // What the answer must be for its body to go into dest: 206 for bytes from-to (inclusive) of
  // an object of `size` bytes (-1: any), or a 200 of the whole object; its ETag, where it has
  // one, weakly equal to `etag` (where that is not empty).
  int64_t from = -1;
  int64_t to = -1;
  int64_t size = -1;
  std::string etag;
};

enum class EventKind : uint8_t { Headers = 0, Progress = 1, Done = 2 };

struct Event {
  uint32_t id = 0;
  EventKind kind = EventKind::Done;
  int status = 0;
  bool h2 = false;
  bool accepted = false;  // the body goes (went) into dest
  std::string etag, contentRange, contentLength, contentType;
  size_t bytes = 0;  // bytes in dest, final
  std::string body;  // the kept body (an answer not accepted, or a request without dest)
  bool cut = false;  // the kept body was longer than bodyCap
  // "" or why the transfer failed: aborted, closed, overflow, connect, connect-timeout,
  // headers-timeout, body-timeout, timeout, reset, resolve, tls, other.
  std::string error;
  std::string message;
};

class RangeClient {
 public:
  // Throws NativeException ERR_LIBCURL_UNAVAILABLE where libcurl does not load.
  RangeClient(ClientOptions opts, std::function<void()> wake);
  ~RangeClient();
  RangeClient(const RangeClient&) = delete;
  RangeClient& operator=(const RangeClient&) = delete;

  void start(Request request);
  // Stops the request; once this returns nothing more is written into its dest. Its Done event
  // (error "aborted", unless it had already completed) still follows.
  void abort(uint32_t id);
  // The events since the last drain, in order; `wake` ran when the first of them came.
  std::vector<Event> drain();
  // Ends every transfer (no events for them) and joins the thread.
  void close();

  struct Transfer;

 private:
  void run();
  void begin(Transfer* t);
  void finish(Transfer* t, int result);
  void checkTimeouts();
  void push(Event e);

 public:
  // Called from libcurl's callbacks on the client's thread.
  size_t onHeader(Transfer* t, const char* line, size_t n);
  size_t onData(Transfer* t, const char* data, size_t n);

 private:
  const curl::Api* api_;
  ClientOptions opts_;
  std::function<void()> wake_;
  curl::CURLM* multi_ = nullptr;

  // Guards transfers_, incoming_, aborts_ and closing_ (each Transfer guards its own writes).
  std::mutex lock_;
  std::unordered_map<uint32_t, Transfer*> transfers_;
  std::vector<Transfer*> incoming_;
  std::vector<uint32_t> aborts_;
  bool closing_ = false;

  std::mutex eventsLock_;
  std::vector<Event> events_;
  uint64_t drains_ = 0;

  // The client thread's own.
  std::vector<Transfer*> active_;
  std::chrono::steady_clock::time_point nextCheck_{};

  std::thread thread_;
};

}  // namespace ec::net
