// Reading a model folder's files (selector.cpp, fast_model.cpp): errors name the file.
#pragma once
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

namespace tilepick {

std::string read_file_bytes(const std::filesystem::path& path);       // NotFound when it cannot be opened
nlohmann::json read_json_file(const std::filesystem::path& path);     // + ParseError when it is not JSON
// feature_spec "score": absent or "higher_is_better", else a ParseError naming the file.
void check_score_direction(const nlohmann::json& spec, const std::filesystem::path& path);
// A model file's text hash (hex FNV-1a 64) against the feature_spec's `key`: a ModelMismatch naming both.
void check_text_hash(const std::string& got, const std::string& want, const std::string& file, const char* key);

}  // namespace tilepick
