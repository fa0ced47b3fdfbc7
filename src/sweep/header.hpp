// The build and run facts every sweep file records (DESIGN: measurement rules).
#pragma once
#include <nlohmann/json.hpp>

namespace tilepick::sweep {

// {date (UTC ISO 8601), host, commit, versions: {tilepick, nvrtc, cuda_headers}, options}
nlohmann::json sweep_header(const nlohmann::json& options);

}  // namespace tilepick::sweep
