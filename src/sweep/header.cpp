#include "sweep/header.hpp"

#include <cuda.h>
#include <unistd.h>

#include <ctime>

#include "jit/jit_internal.hpp"

namespace tilepick::sweep {

nlohmann::json sweep_header(const nlohmann::json& options) {
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  std::time_t t = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return {{"date", date},
          {"host", host},
          {"commit", TILEPICK_COMMIT},
          {"versions",
           {{"tilepick", TILEPICK_VERSION},
            {"nvrtc", jit::detail::nvrtc_version()},
            {"cuda_headers", std::to_string(CUDA_VERSION / 1000) + "." + std::to_string(CUDA_VERSION % 1000 / 10)}}},
          {"options", options}};
}

}  // namespace tilepick::sweep
