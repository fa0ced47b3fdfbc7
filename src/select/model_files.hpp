// Reading a model folder's files (selector.cpp, fast_model.cpp): errors name the file.
#pragma once
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

namespace tilepick {

std::string read_file_bytes(const std::filesystem::path& path);       // NotFound when it cannot be opened
nlohmann::json read_json_file(const std::filesystem::path& path);     // + ParseError when it is not JSON

}  // namespace tilepick
