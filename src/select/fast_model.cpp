// A model folder's distilled student (models/<m>/fast/, python -m tilepick.distill): loading and the
// checks that tie it to this build and to the teacher it was distilled from.
#include <filesystem>

#include "core/hash.hpp"
#include "core/text_file.hpp"
#include "select/model_files.hpp"
#include "tilepick/env.hpp"
#include "tilepick/features.hpp"
#include "tilepick/selector.hpp"

namespace tilepick {
namespace fs = std::filesystem;

ScoreMode resolve_score_mode(ScoreMode mode) { return mode == ScoreMode::automatic ? kDefaultScoreMode : mode; }

const char* score_mode_name(ScoreMode mode) {
  switch (mode) {
    case ScoreMode::full: return "full";
    case ScoreMode::fast: return "fast";
    default: return "automatic";
  }
}

namespace {

// spec[key] as a string, or a ParseError naming the file and key.
std::string text_of(const nlohmann::json& spec, const char* key, const fs::path& path) {
  if (!spec.contains(key) || !spec.at(key).is_string())
    throw ParseError(key, path.string() + ": missing string key '" + key + "'");
  return spec.at(key).get<std::string>();
}

void expect_equal(const std::string& got, const std::string& want, const char* what, const fs::path& path) {
  if (got != want)
    throw ModelMismatch(path.string() + ": " + what + " " + got + " != " + want + " (re-run python -m tilepick.distill)");
}

}  // namespace

FastModel load_fast_folder(const ModelSpec& teacher) {
  const fs::path dir = fs::path(teacher.dir) / "fast", spec_path = dir / "feature_spec.json";
  if (!fs::is_directory(dir)) throw NotFound("no student folder " + dir.string());
  const nlohmann::json spec = read_json_file(spec_path);
  const FeatureSchema& schema = feature_schema();
  expect_equal(text_of(spec, "schema_hash", spec_path), schema.hash, "feature schema hash", spec_path);
  expect_equal(text_of(spec, "space_hash", spec_path), config_space_hash(teacher.op, teacher.spaces), "config space hash", spec_path);
  for (const char* key : {"op", "dtype_family", "arch"})
    expect_equal(text_of(spec, key, spec_path), key == std::string("op") ? teacher.op
                                                 : key == std::string("arch") ? teacher.arch : teacher.dtype_family,
                 key, spec_path);
  expect_equal(text_of(spec, "teacher_version", spec_path), teacher.version, "teacher_version (the model changed)",
               spec_path);
  if (!spec.contains("feature_names") || spec.at("feature_names") != nlohmann::json(schema.names))
    throw ModelMismatch(spec_path.string() + ": feature_names differ from this build's schema");
  FastModel f;
  f.dir = dir.string();
  check_score_direction(spec, spec_path);
  const nlohmann::json rescore = spec.value("rescore_top", nlohmann::json(0));
  if (!rescore.is_number_integer() || rescore.get<int>() < 0)
    throw ParseError("rescore_top", spec_path.string() + ": 'rescore_top' must be an integer >= 0");
  f.rescore_top = rescore.get<int>();
  const fs::path txt = dir / "model.txt", gz = dir / "model.txt.gz";
  const fs::path file = fs::exists(txt) ? txt : gz;
  const std::string text = read_text_file(file.string(), "model");  // NotFound when neither exists
  check_text_hash(hex16(fnv1a64(text)), text_of(spec, "model_text_fnv", spec_path), file.string(), "model_text_fnv");
  f.model = GbdtModel::parse(text, file.string());
  f.model.check_schema(schema);
  f.version = "fast@" + hex16(fnv1a64(text));
  if (fs::exists(dir / "candidates.txt")) {
    CandidateSet set = load_candidates((dir / "candidates.txt").string());
    if (set.empty()) throw ParseError("", (dir / "candidates.txt").string() + " lists no config");
    f.candidates = std::move(set);
  }
  if (fs::exists(dir / "manifest.json")) f.manifest = read_json_file(dir / "manifest.json");
  return f;
}

}  // namespace tilepick
