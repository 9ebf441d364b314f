// The part of libcurl's ABI the range client uses, declared here and bound with dlopen at first
// use (as cuda-driver.cc binds libcuda): the addon links no new library and needs no curl
// headers to build, and a host without libcurl.so.4 still loads the addon (the client alone is
// unavailable, with the reason). libcurl's option numbers and struct layouts below are fixed
// for the life of the .so.4 ABI (curl/curl.h, curl/multi.h); functions newer than 7.68 are
// not used. Thread-safety: `curl()` is safe from any thread; the handles it makes are not.
#pragma once

#include <cstddef>
#include <string>

namespace ec::curl {

using CURL = void;
using CURLM = void;
using CURLcode = int;
using CURLMcode = int;

struct curl_slist {
  char* data;
  curl_slist* next;
};

// CURLMsg: msg 1 (CURLMSG_DONE) carries the transfer's result.
struct CURLMsg {
  int msg;
  CURL* easy_handle;
  union {
    void* whatever;
    CURLcode result;
  } data;
};

struct curl_blob {
  void* data;
  size_t len;
  unsigned int flags;
};

struct curl_waitfd {
  int fd;
  short events;
  short revents;
};

constexpr int kMsgDone = 1;
constexpr long kGlobalAll = 3;
constexpr unsigned int kBlobCopy = 1;
constexpr size_t kWritePause = 0x10000001;

// CURLoption: type base + number.
enum Option : int {
  kOptWriteData = 10001,
  kOptUrl = 10002,
  kOptErrorBuffer = 10010,
  kOptWriteFunction = 20011,
  kOptHeaderData = 10029,
  kOptHttpHeader = 10023,
  kOptSslVerifyPeer = 64,
  kOptSslVerifyHost = 81,
  kOptHttpVersion = 84,
  kOptHeaderFunction = 20079,
  kOptNoSignal = 99,
  kOptBufferSize = 98,
  kOptPrivate = 10103,
  kOptTcpNoDelay = 121,
  kOptConnectTimeoutMs = 156,
  kOptPipeWait = 237,
  kOptMaxAgeConn = 288,
  kOptCaInfoBlob = 40309,
};

enum MultiOption : int {
  kMultiPipelining = 3,
  kMultiMaxHostConnections = 7,
  kMultiMaxConcurrentStreams = 16,
};

constexpr long kPipeMultiplex = 2;
constexpr long kHttpVersion11 = 2;
constexpr long kHttpVersion2Tls = 4;

enum Info : int {
  kInfoResponseCode = 0x200000 + 2,
  kInfoPrivate = 0x100000 + 21,
  kInfoHttpVersion = 0x200000 + 46,
};

// CURL_HTTP_VERSION_* as CURLINFO_HTTP_VERSION reports them.
constexpr long kVersion2 = 3;

// CURLcode values the client tells apart.
enum Result : int {
  kOk = 0,
  kCouldntResolveHost = 6,
  kCouldntConnect = 7,
  kPartialFile = 18,
  kWriteError = 23,
  kOperationTimedOut = 28,
  kAbortedByCallback = 42,
  kGotNothing = 52,
  kSendError = 55,
  kRecvError = 56,
  kHttp2 = 16,
  kHttp2Stream = 92,
  kSslConnectError = 35,
  kPeerFailedVerification = 60,
};

struct Api {
  CURLcode (*global_init)(long flags);
  CURL* (*easy_init)();
  CURLcode (*easy_setopt)(CURL*, int option, ...);
  CURLcode (*easy_getinfo)(CURL*, int info, ...);
  void (*easy_cleanup)(CURL*);
  const char* (*easy_strerror)(CURLcode);
  CURLM* (*multi_init)();
  CURLMcode (*multi_setopt)(CURLM*, int option, ...);
  CURLMcode (*multi_add_handle)(CURLM*, CURL*);
  CURLMcode (*multi_remove_handle)(CURLM*, CURL*);
  CURLMcode (*multi_perform)(CURLM*, int* running);
  CURLMcode (*multi_poll)(CURLM*, curl_waitfd*, unsigned int, int timeout_ms, int* numfds);
  CURLMcode (*multi_wakeup)(CURLM*);
  CURLMsg* (*multi_info_read)(CURLM*, int* left);
  CURLMcode (*multi_cleanup)(CURLM*);
  curl_slist* (*slist_append)(curl_slist*, const char*);
  void (*slist_free_all)(curl_slist*);
  char* (*version)();
};

// The library's name: libcurl.so.4, or EC_LIBCURL (a test names one that is not there to
// check the fallback; a host may name another build).
std::string libraryName();

// libcurl, loaded and globally initialised once; nullptr (and why in `reason`) where it is not
// on this host or lacks a function (a build without HTTP/2 still serves, over HTTP/1.1).
const Api* curl(std::string* reason);

}  // namespace ec::curl
