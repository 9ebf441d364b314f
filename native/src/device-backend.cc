#include "device-backend.h"

#include "errors.h"

namespace ec {

std::map<std::string, BackendFactory>& backendRegistry() {
  // Function-local so registrations from other translation units never run first.
  static std::map<std::string, BackendFactory> registry;
  return registry;
}

BackendRegistration::BackendRegistration(const std::string& name, BackendFactory factory) {
  backendRegistry()[name] = std::move(factory);
}

std::unique_ptr<DeviceBackend> createBackend(const DecoderOptions& options) {
  auto& registry = backendRegistry();
  auto it = registry.find(options.device);
  if (it == registry.end()) {
    std::string known;
    for (auto& [name, _] : registry) known += (known.empty() ? "" : ", ") + name;
    throw NativeException("ERR_DEVICE_UNAVAILABLE", "The \"" + options.device +
                                                        "\" decode backend is not in this build (built: " + known + ")");
  }
  return it->second(options);
}

std::vector<std::string> registeredBackends() {
  std::vector<std::string> names;
  for (auto& [name, _] : backendRegistry()) names.push_back(name);
  return names;
}

}  // namespace ec
