#include "range-client.h"

#include <pthread.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "errors.h"

namespace ec::net {

using Clock = std::chrono::steady_clock;

struct RangeClient::Transfer {
  RangeClient* client = nullptr;
  // Guards `aborted`, `accepted` and the writes into dest: abort() waits out a write in progress.
  std::mutex write;
  Request req;
  curl::CURL* easy = nullptr;
  curl::curl_slist* headers = nullptr;
  char errbuf[256] = {0};
  bool added = false;
  bool aborted = false;
  int status = 0;
  bool headersDone = false;
  bool accepted = false;
  bool overflow = false;
  bool cut = false;
  std::string etag, contentRange, contentLength, contentType;
  size_t written = 0;
  size_t notified = 0;
  std::string body;
  std::string timedOut;
  Clock::time_point started;
  Clock::time_point lastData;
  // Where this transfer's pending progress event sits in events_, in which drain generation.
  uint64_t progressDrain = UINT64_MAX;
  size_t progressIndex = 0;
};

namespace {

constexpr long kBufferSize = 512 << 10;
constexpr long kIdleSeconds = 30;
constexpr int kPollMs = 50;

size_t headerCb(char* buffer, size_t size, size_t n, void* user) {
  auto* t = static_cast<RangeClient::Transfer*>(user);
  return t->client->onHeader(t, buffer, size * n);
}

size_t writeCb(char* buffer, size_t size, size_t n, void* user) {
  auto* t = static_cast<RangeClient::Transfer*>(user);
  return t->client->onData(t, buffer, size * n);
}

std::string trim(const char* s, size_t n) {
  size_t a = 0;
  while (a < n && (s[a] == ' ' || s[a] == '\t')) a++;
  while (n > a && (s[n - 1] == '\r' || s[n - 1] == '\n' || s[n - 1] == ' ' || s[n - 1] == '\t')) n--;
  return std::string(s + a, n - a);
}

bool named(const char* line, size_t n, const char* name) {
  size_t k = std::strlen(name);
  return n > k && line[k] == ':' && strncasecmp(line, name, k) == 0;
}

std::string weak(const std::string& etag) { return etag.rfind("W/", 0) == 0 ? etag.substr(2) : etag; }

// "bytes a-b/c": a, b and c (-1 where "*").
bool parseContentRange(const std::string& v, int64_t& a, int64_t& b, int64_t& c) {
  if (v.rfind("bytes ", 0) != 0) return false;
  char* end = nullptr;
  const char* p = v.c_str() + 6;
  a = std::strtoll(p, &end, 10);
  if (end == p || *end != '-') return false;
  p = end + 1;
  b = std::strtoll(p, &end, 10);
  if (end == p || *end != '/') return false;
  p = end + 1;
  if (*p == '*') {
    c = -1;
    return true;
  }
  c = std::strtoll(p, &end, 10);
  return end != p;
}

bool acceptable(const Request& r, int status, const std::string& etag, const std::string& contentRange) {
  if (!r.dest) return false;
  if (!r.etag.empty() && !etag.empty() && weak(etag) != weak(r.etag)) return false;
  if (status == 206) {
    int64_t a, b, c;
    if (!parseContentRange(contentRange, a, b, c)) return false;
    if (a != r.from || b != r.to) return false;
    if (r.size >= 0 && c >= 0 && c != r.size) return false;
    return static_cast<size_t>(b - a + 1) == r.destLength;
  }
  return status == 200 && r.from == 0 && r.size >= 0 && r.to == r.size - 1 &&
         static_cast<size_t>(r.size) == r.destLength;
}

std::string errorKind(int result, const RangeClient::Transfer& t) {
  switch (result) {
    case curl::kOk:
      return "";
    case curl::kCouldntResolveHost:
      return "resolve";
    case curl::kCouldntConnect:
      return "connect";
    case curl::kOperationTimedOut:
      return t.headersDone ? "timeout" : "connect-timeout";
    case curl::kPartialFile:
    case curl::kGotNothing:
    case curl::kSendError:
    case curl::kRecvError:
    case curl::kHttp2:
    case curl::kHttp2Stream:
      return "reset";
    case curl::kSslConnectError:
    case curl::kPeerFailedVerification:
    case 58:  // CURLE_SSL_CERTPROBLEM
    case 77:  // CURLE_SSL_CACERT_BADFILE
      return "tls";
    default:
      return "other";
  }
}

}  // namespace

RangeClient::RangeClient(ClientOptions opts, std::function<void()> wake)
    : opts_(std::move(opts)), wake_(std::move(wake)) {
  std::string reason;
  api_ = curl::curl(&reason);
  if (!api_) throw NativeException("ERR_LIBCURL_UNAVAILABLE", reason);
  multi_ = api_->multi_init();
  if (!multi_) throw NativeException("ERR_LIBCURL_UNAVAILABLE", "curl_multi_init failed");
  api_->multi_setopt(multi_, curl::kMultiPipelining, curl::kPipeMultiplex);
  api_->multi_setopt(multi_, curl::kMultiMaxHostConnections, opts_.connections);
  api_->multi_setopt(multi_, curl::kMultiMaxConcurrentStreams, opts_.streamsPerConnection);
  thread_ = std::thread([this] { run(); });
}

RangeClient::~RangeClient() { close(); }

void RangeClient::start(Request request) {
  auto* t = new Transfer();
  t->client = this;
  t->req = std::move(request);
  {
    std::lock_guard<std::mutex> g(lock_);
    if (closing_) {
      delete t;
      return;
    }
    transfers_[t->req.id] = t;
    incoming_.push_back(t);
  }
  api_->multi_wakeup(multi_);
}

void RangeClient::abort(uint32_t id) {
  {
    std::lock_guard<std::mutex> g(lock_);
    auto it = transfers_.find(id);
    if (it == transfers_.end() || closing_) return;
    {
      std::lock_guard<std::mutex> w(it->second->write);
      it->second->aborted = true;
    }
    aborts_.push_back(id);
  }
  api_->multi_wakeup(multi_);
}

std::vector<Event> RangeClient::drain() {
  std::lock_guard<std::mutex> g(eventsLock_);
  std::vector<Event> out;
  out.swap(events_);
  drains_++;
  return out;
}

void RangeClient::close() {
  {
    std::lock_guard<std::mutex> g(lock_);
    if (closing_) return;
    closing_ = true;
  }
  if (api_ && multi_) api_->multi_wakeup(multi_);
  if (thread_.joinable()) thread_.join();
  std::vector<Transfer*> left;
  {
    std::lock_guard<std::mutex> g(lock_);
    for (auto& [id, t] : transfers_) left.push_back(t);
    transfers_.clear();
    incoming_.clear();
  }
  for (Transfer* t : left) {
    if (t->easy) {
      if (t->added) api_->multi_remove_handle(multi_, t->easy);
      api_->easy_cleanup(t->easy);
    }
    if (t->headers) api_->slist_free_all(t->headers);
    delete t;
  }
  if (multi_) api_->multi_cleanup(multi_);
  multi_ = nullptr;
}

void RangeClient::push(Event e) {
  bool first;
  {
    std::lock_guard<std::mutex> g(eventsLock_);
    first = events_.empty();
    events_.push_back(std::move(e));
  }
  if (first) wake_();
}

void RangeClient::begin(Transfer* t) {
  const curl::Api& c = *api_;
  t->easy = c.easy_init();
  t->started = t->lastData = Clock::now();
  if (!t->easy) return finish(t, -1);
  for (const std::string& h : t->req.headers) t->headers = c.slist_append(t->headers, h.c_str());
  curl::CURL* e = t->easy;
  c.easy_setopt(e, curl::kOptUrl, t->req.url.c_str());
  c.easy_setopt(e, curl::kOptHttpHeader, t->headers);
  c.easy_setopt(e, curl::kOptPrivate, static_cast<void*>(t));
  c.easy_setopt(e, curl::kOptErrorBuffer, t->errbuf);
  c.easy_setopt(e, curl::kOptHeaderFunction, headerCb);
  c.easy_setopt(e, curl::kOptHeaderData, static_cast<void*>(t));
  c.easy_setopt(e, curl::kOptWriteFunction, writeCb);
  c.easy_setopt(e, curl::kOptWriteData, static_cast<void*>(t));
  c.easy_setopt(e, curl::kOptNoSignal, 1L);
  c.easy_setopt(e, curl::kOptHttpVersion, curl::kHttpVersion2Tls);
  c.easy_setopt(e, curl::kOptPipeWait, 1L);
  c.easy_setopt(e, curl::kOptBufferSize, kBufferSize);
  c.easy_setopt(e, curl::kOptTcpNoDelay, 1L);
  c.easy_setopt(e, curl::kOptConnectTimeoutMs, opts_.connectTimeoutMs);
  c.easy_setopt(e, curl::kOptMaxAgeConn, kIdleSeconds);
  if (!opts_.verify) {
    c.easy_setopt(e, curl::kOptSslVerifyPeer, 0L);
    c.easy_setopt(e, curl::kOptSslVerifyHost, 0L);
  }
  if (!opts_.ca.empty()) {
    curl::curl_blob blob{const_cast<char*>(opts_.ca.data()), opts_.ca.size(), curl::kBlobCopy};
    c.easy_setopt(e, curl::kOptCaInfoBlob, &blob);
  }
  if (c.multi_add_handle(multi_, e) != 0) return finish(t, -1);
  t->added = true;
  active_.push_back(t);
}

size_t RangeClient::onHeader(Transfer* t, const char* line, size_t n) {
  if (n >= 5 && std::strncmp(line, "HTTP/", 5) == 0) {
    const char* sp = static_cast<const char*>(std::memchr(line, ' ', n));
    t->status = sp ? std::atoi(sp + 1) : 0;
    t->etag.clear();
    t->contentRange.clear();
    t->contentLength.clear();
    t->contentType.clear();
    return n;
  }
  if (n <= 2 && (line[0] == '\r' || line[0] == '\n')) {
    if (t->status >= 100 && t->status < 200) return n;  // an interim answer; the real one follows
    t->headersDone = true;
    t->lastData = Clock::now();
    long version = 0;
    api_->easy_getinfo(t->easy, curl::kInfoHttpVersion, &version);
    bool ok = acceptable(t->req, t->status, t->etag, t->contentRange);
    {
      std::lock_guard<std::mutex> w(t->write);
      t->accepted = ok;
    }
    Event e;
    e.id = t->req.id;
    e.kind = EventKind::Headers;
    e.status = t->status;
    e.h2 = version == curl::kVersion2;
    e.accepted = ok;
    e.etag = t->etag;
    e.contentRange = t->contentRange;
    e.contentLength = t->contentLength;
    e.contentType = t->contentType;
    push(std::move(e));
    return n;
  }
  if (named(line, n, "etag"))
    t->etag = trim(line + 5, n - 5);
  else if (named(line, n, "content-range"))
    t->contentRange = trim(line + 14, n - 14);
  else if (named(line, n, "content-length"))
    t->contentLength = trim(line + 15, n - 15);
  else if (named(line, n, "content-type"))
    t->contentType = trim(line + 13, n - 13);
  return n;
}

size_t RangeClient::onData(Transfer* t, const char* data, size_t n) {
  t->lastData = Clock::now();
  size_t written;
  {
    std::lock_guard<std::mutex> w(t->write);
    if (t->aborted) return 0;
    if (!t->accepted) {
      size_t room = t->req.bodyCap - std::min(t->req.bodyCap, t->body.size());
      t->body.append(data, std::min(n, room));
      if (n > room) {
        t->cut = true;
        return 0;
      }
      return n;
    }
    if (n > t->req.destLength - t->written) {
      t->overflow = true;
      return 0;
    }
    std::memcpy(t->req.dest + t->written, data, n);
    written = t->written += n;
  }
  size_t every = t->req.notifyEvery;
  if (every && written / every > t->notified / every) {
    t->notified = written;
    bool first = false;
    {
      std::lock_guard<std::mutex> g(eventsLock_);
      // One progress event per transfer waits at a time: a later one moves its count on.
      if (t->progressDrain == drains_ && t->progressIndex < events_.size() &&
          events_[t->progressIndex].id == t->req.id && events_[t->progressIndex].kind == EventKind::Progress) {
        events_[t->progressIndex].bytes = written;
      } else {
        first = events_.empty();
        Event e;
        e.id = t->req.id;
        e.kind = EventKind::Progress;
        e.bytes = written;
        t->progressDrain = drains_;
        t->progressIndex = events_.size();
        events_.push_back(std::move(e));
      }
    }
    if (first) wake_();
  }
  return n;
}

void RangeClient::finish(Transfer* t, int result) {
  if (t->easy) {
    if (t->added) api_->multi_remove_handle(multi_, t->easy);
    api_->easy_cleanup(t->easy);
    t->easy = nullptr;
  }
  if (t->headers) api_->slist_free_all(t->headers);
  t->headers = nullptr;
  active_.erase(std::remove(active_.begin(), active_.end(), t), active_.end());
  Event e;
  e.id = t->req.id;
  e.kind = EventKind::Done;
  e.status = t->status;
  e.accepted = t->accepted;
  {
    std::lock_guard<std::mutex> g(lock_);
    transfers_.erase(t->req.id);
  }
  {
    std::lock_guard<std::mutex> w(t->write);
    if (t->aborted) e.error = "aborted";
  }
  e.bytes = t->written;
  e.body = std::move(t->body);
  e.cut = t->cut;
  if (e.error.empty()) {
    if (!t->timedOut.empty())
      e.error = t->timedOut;
    else if (t->overflow)
      e.error = "overflow";
    else if (t->cut && result == curl::kWriteError)
      e.error = "";
    else if (result == -1)
      e.error = "other";
    else
      e.error = errorKind(result, *t);
  }
  if (!e.error.empty())
    e.message = t->errbuf[0] ? t->errbuf : (result > 0 ? api_->easy_strerror(result) : e.error.c_str());
  delete t;
  push(std::move(e));
}

void RangeClient::checkTimeouts() {
  auto now = Clock::now();
  if (now < nextCheck_) return;
  nextCheck_ = now + std::chrono::milliseconds(kPollMs);
  std::vector<Transfer*> late;
  for (Transfer* t : active_) {
    auto idle = std::chrono::duration_cast<std::chrono::milliseconds>(now - t->lastData).count();
    if (!t->headersDone && t->status == 0 &&
        std::chrono::duration_cast<std::chrono::milliseconds>(now - t->started).count() >
            opts_.headersTimeoutMs + opts_.connectTimeoutMs) {
      t->timedOut = "headers-timeout";
      late.push_back(t);
    } else if (t->headersDone && idle > opts_.bodyTimeoutMs) {
      t->timedOut = "body-timeout";
      late.push_back(t);
    }
  }
  for (Transfer* t : late) finish(t, curl::kOperationTimedOut);
}

void RangeClient::run() {
  // Named so that per-thread CPU figures (/proc/PID/task/*/comm) can tell it apart.
  pthread_setname_np(pthread_self(), "ec-range-client");
  const curl::Api& c = *api_;
  for (;;) {
    std::vector<Transfer*> incoming;
    std::vector<uint32_t> aborts;
    {
      std::lock_guard<std::mutex> g(lock_);
      if (closing_) return;
      incoming.swap(incoming_);
      aborts.swap(aborts_);
    }
    for (Transfer* t : incoming) begin(t);
    for (uint32_t id : aborts) {
      auto it = std::find_if(active_.begin(), active_.end(), [id](Transfer* t) { return t->req.id == id; });
      if (it != active_.end()) finish(*it, curl::kAbortedByCallback);
    }
    int running = 0;
    c.multi_perform(multi_, &running);
    int left = 0;
    while (curl::CURLMsg* m = c.multi_info_read(multi_, &left)) {
      if (m->msg != curl::kMsgDone) continue;
      Transfer* t = nullptr;
      c.easy_getinfo(m->easy_handle, curl::kInfoPrivate, &t);
      if (t) finish(t, m->data.result);
    }
    checkTimeouts();
    int fds = 0;
    c.multi_poll(multi_, nullptr, 0, kPollMs, &fds);
  }
}

}  // namespace ec::net
