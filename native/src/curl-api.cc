#include "curl-api.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

namespace ec::curl {

namespace {

Api g_api;
const Api* g_loaded = nullptr;
std::string g_reason;

template <typename F>
bool bind(void* lib, F& slot, const char* name) {
  slot = reinterpret_cast<F>(dlsym(lib, name));
  if (!slot) g_reason = libraryName() + " lacks " + name + " (libcurl older than 7.68?)";
  return slot != nullptr;
}

void load() {
  const std::string name = libraryName();
  void* lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* why = dlerror();
    g_reason = name + " did not load (" + (why ? why : "not found") + ")";
    return;
  }
  Api a{};
  bool ok = bind(lib, a.global_init, "curl_global_init") && bind(lib, a.easy_init, "curl_easy_init") &&
            bind(lib, a.easy_setopt, "curl_easy_setopt") && bind(lib, a.easy_getinfo, "curl_easy_getinfo") &&
            bind(lib, a.easy_cleanup, "curl_easy_cleanup") && bind(lib, a.easy_strerror, "curl_easy_strerror") &&
            bind(lib, a.multi_init, "curl_multi_init") && bind(lib, a.multi_setopt, "curl_multi_setopt") &&
            bind(lib, a.multi_add_handle, "curl_multi_add_handle") &&
            bind(lib, a.multi_remove_handle, "curl_multi_remove_handle") &&
            bind(lib, a.multi_perform, "curl_multi_perform") && bind(lib, a.multi_poll, "curl_multi_poll") &&
            bind(lib, a.multi_wakeup, "curl_multi_wakeup") && bind(lib, a.multi_info_read, "curl_multi_info_read") &&
            bind(lib, a.multi_cleanup, "curl_multi_cleanup") && bind(lib, a.slist_append, "curl_slist_append") &&
            bind(lib, a.slist_free_all, "curl_slist_free_all") && bind(lib, a.version, "curl_version");
  if (!ok) return;
  if (a.global_init(kGlobalAll) != kOk) {
    g_reason = "curl_global_init failed";
    return;
  }
  g_api = a;
  g_loaded = &g_api;
}

}  // namespace

std::string libraryName() {
  const char* env = std::getenv("EC_LIBCURL");
  return env && *env ? env : "libcurl.so.4";
}

const Api* curl(std::string* reason) {
  static std::once_flag once;
  std::call_once(once, load);
  if (!g_loaded && reason) *reason = g_reason;
  return g_loaded;
}

}  // namespace ec::curl
