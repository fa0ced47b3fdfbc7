// Selector: model folders -> one usable model per (op, dtype family, arch); ranking of candidates
// by the model or by the analytic fallback.
#include "tilepick/selector.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <tuple>
#include <variant>
#include <sstream>

#include "core/hash.hpp"
#include "core/text_file.hpp"
#include "select/model_files.hpp"
#include "tilepick/env.hpp"
#include "tilepick/features.hpp"
#include "tilepick/legality.hpp"
#include "tilepick/registry.hpp"

namespace tilepick {
namespace fs = std::filesystem;

std::string read_file_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw NotFound("cannot open " + path.string());
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

nlohmann::json read_json_file(const fs::path& path) {
  try {
    return nlohmann::json::parse(read_file_bytes(path));
  } catch (const nlohmann::json::exception& e) {
    throw ParseError("", path.string() + ": not JSON: " + e.what());
  }
}

void check_score_direction(const nlohmann::json& spec, const fs::path& path) {
  if (!spec.contains("score")) return;
  const nlohmann::json& s = spec.at("score");
  if (!s.is_string() || s.get<std::string>() != "higher_is_better")
    throw ParseError("score", path.string() + ": 'score' is " + s.dump() +
                                  "; tilepick models score higher_is_better (tilepick.train negates a lower-is-better "
                                  "objective's leaves), so no other direction is read");
}

void check_text_hash(const std::string& got, const std::string& want, const std::string& file, const char* key) {
  if (got != want)
    throw ModelMismatch(file + ": its text hashes to " + got + " but the feature_spec's " + key + " is " + want +
                        " (the file was edited or replaced after training: restore it or retrain)");
}

namespace {

// `parent`: the key of the object j is in ("vendor_choice"), named in errors as "parent.key".
template <class T>
T required(const nlohmann::json& j, const char* key, const fs::path& path, const std::string& parent = "") {
  const std::string name = parent.empty() ? std::string(key) : parent + "." + key;
  if (!parent.empty() && !j.is_object())
    throw ParseError(parent, path.string() + ": key '" + parent + "' has the wrong type");
  if (!j.contains(key)) throw ParseError(name, path.string() + ": missing key '" + name + "'");
  try {
    return j.at(key).get<T>();
  } catch (const nlohmann::json::exception&) {
    throw ParseError(name, path.string() + ": key '" + name + "' has the wrong type");
  }
}

// feature_spec "vendor_choice": {"model_file", "threshold"}; the file is checked when it is loaded.
VendorChoiceSpec parse_vendor_choice(const nlohmann::json& j, const fs::path& dir, const fs::path& path) {
  const nlohmann::json& v = j.at("vendor_choice");
  VendorChoiceSpec out;
  out.model_file = (dir / required<std::string>(v, "model_file", path, "vendor_choice")).lexically_normal().string();
  out.threshold = required<double>(v, "threshold", path, "vendor_choice");
  out.model_text_fnv = required<std::string>(v, "model_text_fnv", path, "vendor_choice");
  if (!v.at("threshold").is_number())  // nlohmann reads true as 1
    throw ParseError("vendor_choice.threshold", path.string() + ": key 'vendor_choice.threshold' has the wrong type");
  if (!std::isfinite(out.threshold))
    throw ParseError("vendor_choice.threshold", path.string() + ": key 'vendor_choice.threshold' is not finite");
  return out;
}

std::string model_file_in(const nlohmann::json& spec, const fs::path& dir) {
  const std::string name = dir.filename().string();
  if (spec.contains("model_file")) {
    const std::string file =
        (dir / required<std::string>(spec, "model_file", dir / "feature_spec.json")).lexically_normal().string();
    if (!fs::exists(file))
      throw NotFound("model " + name + ": its feature_spec.json names model_file '" + file + "', which is missing");
    return file;
  }
  const fs::path gz = dir / "model.txt.gz", txt = dir / "model.txt";
  if (!fs::exists(gz) && !fs::exists(txt)) throw NotFound("model " + name + ": no model.txt.gz or model.txt");
  return (fs::exists(gz) ? gz : txt).string();
}

ModelSpec parse_spec(const fs::path& dir) {
  const fs::path path = dir / "feature_spec.json";
  const nlohmann::json j = read_json_file(path);
  ModelSpec s;
  s.name = dir.filename().string();
  s.dir = dir.string();
  s.op = required<std::string>(j, "op", path);
  s.dtype_family = required<std::string>(j, "dtype_family", path);
  s.arch = required<std::string>(j, "arch", path);
  s.schema_hash = required<std::string>(j, "schema_hash", path);
  s.space_hash = required<std::string>(j, "space_hash", path);
  s.feature_names = required<std::vector<std::string>>(j, "feature_names", path);
  s.feature_version = j.value("feature_version", 0);
  s.objective = j.value("objective", std::string());
  check_score_direction(j, path);
  s.model_text_fnv = required<std::string>(j, "model_text_fnv", path);
  if (fs::exists(dir / "manifest.json")) s.manifest = read_json_file(dir / "manifest.json");
  s.model_file = model_file_in(j, dir);
  s.serves = j.contains("serves") ? required<std::vector<std::string>>(j, "serves", path) : std::vector<std::string>{};
  s.spaces = j.contains("spaces") ? required<std::vector<std::string>>(j, "spaces", path) : std::vector<std::string>{};
  s.vendor_first = j.contains("vendor_first") && required<bool>(j, "vendor_first", path);
  if (j.contains("vendor_choice")) s.vendor_choice = parse_vendor_choice(j, dir, path);
  for (const auto& arch : s.serves)
    if (std::none_of(default_arch_specs().begin(), default_arch_specs().end(),
                     [&](const ArchSpec& a) { return a.name == arch; }))
      throw ParseError(arch, path.string() + ": 'serves' names '" + arch + "', which is not an arch spec (tilepick arch list)");
  return s;
}

// The parsed model of a file's bytes, shared by every folder (and Selector) that names the same file
// with the same contents while one of them holds it.
std::shared_ptr<const GbdtModel> shared_model(const std::string& file, const std::string& text, const std::string& text_hash) {
  static std::mutex mutex;
  static std::map<std::pair<std::string, std::string>, std::weak_ptr<const GbdtModel>> loaded;
  std::error_code ec;
  const fs::path canonical = fs::weakly_canonical(file, ec);
  const std::pair<std::string, std::string> key{ec ? file : canonical.string(), text_hash};
  std::lock_guard<std::mutex> lock(mutex);
  if (auto live = loaded[key].lock()) return live;
  auto model = std::make_shared<const GbdtModel>(GbdtModel::parse(text, file));
  loaded[key] = model;
  return model;
}

// Loads a usable folder's vendor choice model; what keeps it from being used goes to vendor_error.
void load_vendor_choice(ModelEntry& e) {
  const std::string& file = e.spec.vendor_choice->model_file;
  try {
    if (!fs::exists(file))
      throw NotFound("its feature_spec.json names vendor_choice model_file '" + file + "', which is missing");
    const std::string text = read_text_file(file, "vendor choice model");
    const std::string hash = hex16(fnv1a64(text));
    check_text_hash(hash, e.spec.vendor_choice->model_text_fnv, file, "vendor_choice.model_text_fnv");
    std::shared_ptr<const GbdtModel> model = shared_model(file, text, hash);
    const FeatureSchema& schema = feature_schema();
    try {
      model->check_feature_names(std::span(schema.names).first(schema.problem_columns));
    } catch (const ModelMismatch& err) {
      throw ModelMismatch("vendor_choice model_file '" + file + "' must read the first " +
                          std::to_string(schema.problem_columns) + " features of the schema (the problem columns): " +
                          err.what());
    }
    e.vendor_model = std::move(model);
    e.vendor_version = "vendor_choice@" + hash;
  } catch (const Error& err) {
    e.vendor_error = err.what();
  }
}

// The reason a parsed folder cannot serve this build, or "".
std::string mismatch(const ModelEntry& e) {
  const FeatureSchema& schema = feature_schema();
  const ModelSpec& s = e.spec;
  if (s.schema_hash != schema.hash)
    return "model " + s.dir + ": feature schema hash " + s.schema_hash + " != this build's " + schema.hash +
           " (retrain the model)";
  if (s.feature_version != schema.version)
    return "model " + s.dir + ": feature version " + std::to_string(s.feature_version) + " != this build's " +
           std::to_string(schema.version);
  if (s.feature_names != schema.names)
    return "model " + s.dir + ": feature_spec.json feature_names differ from this build's schema";
  try {
    e.model->check_schema(schema);
  } catch (const ModelMismatch& err) {
    return "model " + s.dir + ": " + err.what();
  }
  std::string space;
  try {
    space = config_space_hash(s.op, s.spaces);
  } catch (const Error& err) {
    return "model " + s.dir + ": " + err.what();
  }
  if (s.space_hash != space)
    return "model " + s.dir + ": config space hash " + s.space_hash + " != this build's " + space + " for " + s.op +
           " (the spaces changed since training)";
  // The folder is named by what its spec says it serves: a spec copied from another folder, or a
  // folder renamed, is caught here.
  const std::string want = s.op + "_" + s.dtype_family + "_" + s.arch;
  if (s.name != want)
    return "model " + s.dir + ": its feature_spec.json describes " + want + " (op, dtype_family, arch), but the folder is " +
           s.name + " (a renamed folder or a spec from another one)";
  return "";
}

// Indices best first: NaN last, higher score first, ties by config string. Only the order of the
// first `keep` is exact; config strings are made (into texts) only for the tied runs that reach them.
std::vector<std::size_t> ranked_order(const std::vector<KernelConfig>& configs, const std::vector<double>& scores,
                                      std::size_t keep, std::vector<std::string>& texts) {
  std::vector<std::size_t> order(scores.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto before = [&](std::size_t a, std::size_t b) {  // by score alone
    const bool an = std::isnan(scores[a]), bn = std::isnan(scores[b]);
    if (an != bn) return bn;
    return !an && scores[a] > scores[b];
  };
  // Only the first `keep` need their order: sort those, then bring the rest of a tied run that
  // reaches position keep - 1 right after them (the tie-break below orders the whole run).
  const auto mid = order.begin() + static_cast<std::ptrdiff_t>(keep);
  std::partial_sort(order.begin(), mid, order.end(), before);
  if (keep > 0 && keep < order.size()) {
    const std::size_t last = order[keep - 1];
    std::partition(mid, order.end(), [&](std::size_t i) { return !before(last, i); });
  }
  for (std::size_t begin = 0; begin < keep;) {
    std::size_t end = begin + 1;
    while (end < order.size() && !before(order[begin], order[end])) ++end;  // a run of equal scores
    if (end - begin > 1) {
      for (std::size_t r = begin; r < end; ++r) texts[order[r]] = to_string(configs[order[r]]);
      std::sort(order.begin() + static_cast<std::ptrdiff_t>(begin), order.begin() + static_cast<std::ptrdiff_t>(end),
                [&](std::size_t a, std::size_t b) { return texts[a] < texts[b]; });
    }
    begin = end;
  }
  return order;
}

// Runs m's vendor choice model on p's problem columns (one row) and sets s's vendor fields.
void vendor_choice(const ModelEntry& m, const Problem& p, const ArchSpec& arch, Selection& s) {
  const std::vector<double> row = problem_features(p, arch);
  double y = 0;
  m.vendor_model->predict(row.data(), 1, row.size(), &y);
  const bool faster = m.spec.vendor_choice->vendor_faster(y);
  s.vendor_log_ratio = y;
  s.vendor_first = m.spec.vendor_first || faster;
  s.vendor_chosen = !m.spec.vendor_first && faster;
}

}  // namespace

std::string dtype_family(const Problem& p) {
  const DType t = input_dtype(p);
  return is_fp8(t) ? "fp8" : t == DType::f32 ? "tf32" : "half";  // f16 and bf16 share one model
}

std::string config_space_hash(const std::string& op, const std::vector<ConfigSpace>& spaces) {
  std::vector<const ConfigSpace*> covering;
  for (const auto& s : spaces)
    if (s.has_op(op)) covering.push_back(&s);
  std::sort(covering.begin(), covering.end(), [](auto* a, auto* b) { return a->name < b->name; });
  std::string text;
  for (const auto* s : covering) text += s->name + " " + s->hash + "\n";
  return hex16(fnv1a64(text));
}

std::string config_space_hash(const std::string& op) { return config_space_hash(op, default_spaces()); }

std::vector<std::string> config_space_names(const std::string& op) {
  std::vector<std::string> names;
  for (const auto& s : default_spaces())
    if (s.has_op(op)) names.push_back(s.name);
  std::sort(names.begin(), names.end());
  return names;
}

std::string config_space_hash(const std::string& op, const std::vector<std::string>& names) {
  if (names.empty()) return config_space_hash(op);
  std::vector<ConfigSpace> chosen;
  for (const auto& n : names) chosen.push_back(find_space(n));
  return config_space_hash(op, chosen);
}

bool ModelSpec::covers(const std::string& space) const {
  return spaces.empty() || std::find(spaces.begin(), spaces.end(), space) != spaces.end();
}

bool warn_fallback_once(const std::string& op, const std::string& reason) {
  static std::mutex mutex;
  static std::set<std::string> seen;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (!seen.insert(op + '\n' + reason).second) return false;
  }
  if (env::log_level() < 1) return false;
  std::cerr << "tilepick: warning: " + op + " selection uses the analytic fallback: " + reason + "\n";
  return true;
}

std::string model_file_of(const std::string& dir) {
  return model_file_in(read_json_file(fs::path(dir) / "feature_spec.json"), fs::path(dir));
}

ModelEntry load_model_folder(const std::string& dir) {
  ModelEntry e;
  e.spec.name = fs::path(dir).filename().string();
  e.spec.dir = dir;
  try {
    e.spec = parse_spec(dir);
    // the version hashes the model's text, not the file's bytes: recompressing keeps it
    const std::string text = read_text_file(e.spec.model_file, "model");
    const std::string hash = hex16(fnv1a64(text));
    check_text_hash(hash, e.spec.model_text_fnv, e.spec.model_file, "model_text_fnv");
    e.model = shared_model(e.spec.model_file, text, hash);
    e.spec.version = e.spec.name + "@" + hash;
    e.rejected = mismatch(e);
  } catch (const Error& err) {
    e.rejected = std::string("model folder ") + dir + " cannot be used: " + err.what();
  }
  if (!e.rejected.empty()) e.model.reset();
  if (e.usable() && e.spec.vendor_choice) load_vendor_choice(e);
  const fs::path candidates = fs::path(dir) / "candidates.txt";
  if (e.usable() && fs::exists(candidates)) {
    try {
      CandidateSet set = load_candidates(candidates.string());
      if (set.empty()) e.candidates_error = candidates.string() + " lists no config";
      else e.candidates = std::move(set);
    } catch (const Error& err) {
      e.candidates_error = err.what();
    }
  }
  return e;
}

struct Selector::PoolCache {
  struct Pool {
    std::vector<KernelConfig> configs;  // registry candidates in the set, registry order
    bool unique_pool_forms = true;      // then resolving them per problem needs no dedupe
  };
  std::mutex mutex;
  std::map<std::tuple<const ModelEntry*, const CandidateSet*, std::string, DType>, std::unique_ptr<Pool>> pools;
};

Selector::Selector(std::string models_dir, int threads, bool prune, ScoreMode mode)
    : dir_(std::move(models_dir)), threads_(threads), prune_(prune), mode_(resolve_score_mode(mode)),
      cache_(std::make_shared<PoolCache>()) {
  std::error_code ec;
  if (dir_.empty() || !fs::is_directory(dir_, ec)) return;
  std::vector<fs::path> folders;
  for (const auto& d : fs::directory_iterator(dir_, ec))
    if (d.is_directory() && fs::exists(d.path() / "feature_spec.json")) folders.push_back(d.path());
  std::sort(folders.begin(), folders.end());
  for (const auto& f : folders) models_.push_back(load_model_folder(f.string()));
  for (const auto& m : models_)
    if (prune_ && !m.candidates_error.empty() && env::log_level() >= 1)
      std::cerr << "tilepick: warning: model " + m.spec.name + " scores every legal config, its candidates.txt is not used: " +
                       m.candidates_error + "\n";
  for (const auto& m : models_)
    if (!m.vendor_error.empty() && env::log_level() >= 1)
      std::cerr << "tilepick: warning: model " + m.spec.name + " decides without its vendor choice: " + m.vendor_error + "\n";
  if (mode_ != ScoreMode::fast) return;
  for (auto& m : models_) {
    if (!m.usable()) continue;
    const bool present = fs::is_directory(fs::path(m.spec.dir) / "fast");
    try {
      m.fast = load_fast_folder(m.spec);
      m.spec.version += "+" + m.fast->version;  // plans made with the student are keyed on it too
    } catch (const Error& err) {
      m.fast_error = err.what();
      if (present && env::log_level() >= 1)
        std::cerr << "tilepick: warning: model " + m.spec.name + " selects with its full model, its fast/ student is not used: " +
                         m.fast_error + "\n";
    }
  }
}

const Selector& Selector::default_selector() {
  static const Selector selector(env::models_dir());
  return selector;
}

const ModelEntry* Selector::model_for(const Problem& p, const ArchSpec& arch, std::string* why) const {
  const std::string op = op_name(p), family = dtype_family(p);
  const ModelEntry* refused = nullptr;
  for (const bool own : {true, false}) {
    for (const auto& m : models_) {
      const bool fits = own ? m.spec.arch == arch.name
                            : std::find(m.spec.serves.begin(), m.spec.serves.end(), arch.name) != m.spec.serves.end();
      if (m.spec.op != op || m.spec.dtype_family != family || !fits) continue;
      if (m.usable()) return &m;  // folders are in name order: the first usable one wins
      if (!refused) refused = &m;
    }
  }
  if (why)
    *why = refused ? refused->rejected
                   : "no model for " + op + " " + family + " " + arch.name + " in '" + dir_ + "'";
  return nullptr;
}

std::vector<Ranked> Selector::score(const Problem& p, const ArchSpec& arch, std::vector<KernelConfig> configs,
                                    int k, bool allow_model, bool use_fast, std::string* reason) const {
  const std::size_t n = configs.size();
  std::vector<double> scores(n);
  std::string why = "fallback requested", source = "fallback";
  const ModelEntry* m = allow_model ? model_for(p, arch, &why) : nullptr;
  std::size_t rescored = 0;  // the first `rescored` of the order carry teacher scores
  std::vector<std::size_t> order;
  std::vector<std::string> texts(n);
  const std::size_t keep = k > 0 ? std::min(n, static_cast<std::size_t>(k)) : n;
  if (m) {
    const std::size_t width = feature_schema().size();
    thread_local std::vector<double> rows;  // reused: a conv pool's rows are ~1.5 MB
    rows.resize(n * width);
    features_batch(p, configs, arch, rows.data(), threads_);
    const FastModel* fast = use_fast && m->fast ? &*m->fast : nullptr;
    const GbdtModel& model = fast ? fast->model : *m->model;
    model.predict(rows.data(), n, width, scores.data());
    if (fast && fast->rescore_top > 0 && n > 1) {
      // The student's best M, re-scored by the teacher and ranked by it ahead of the rest.
      rescored = std::min(n, static_cast<std::size_t>(fast->rescore_top));
      order = ranked_order(configs, scores, std::max(keep, rescored), texts);
      std::vector<double> top_rows(rescored * width), top_scores(rescored);
      std::vector<KernelConfig> top_configs(rescored);
      for (std::size_t r = 0; r < rescored; ++r) {
        std::copy_n(rows.data() + order[r] * width, width, top_rows.data() + r * width);
        top_configs[r] = configs[order[r]];
      }
      m->model->predict(top_rows.data(), rescored, width, top_scores.data());
      std::vector<std::string> top_texts(rescored);
      const std::vector<std::size_t> top_order = ranked_order(top_configs, top_scores, rescored, top_texts);
      std::vector<std::size_t> head(rescored);
      for (std::size_t r = 0; r < rescored; ++r) {
        head[r] = order[top_order[r]];
        scores[head[r]] = top_scores[top_order[r]];
      }
      std::copy(head.begin(), head.end(), order.begin());
    }
    source = "model:" + m->spec.name;
    why.clear();
  } else {
    if (allow_model && n > 0) warn_fallback_once(op_name(p), why);
    for (std::size_t i = 0; i < n; ++i) scores[i] = heuristic_score(p, configs[i], arch);
  }
  if (reason) *reason = why;
  if (rescored == 0) order = ranked_order(configs, scores, keep, texts);
  std::vector<Ranked> out(keep);
  for (std::size_t r = 0; r < keep; ++r) {
    const std::size_t i = order[r];
    out[r].config = configs[i];
    out[r].text = texts[i].empty() ? to_string(configs[i]) : std::move(texts[i]);
    out[r].score = scores[i];
    out[r].source = source;
  }
  return out;
}

const std::vector<KernelConfig>& Selector::set_candidates(const ModelEntry& m, const CandidateSet* set,
                                                          const ArchSpec& arch, DType input, bool* unique_pool_forms) const {
  std::lock_guard<std::mutex> lock(cache_->mutex);
  auto& slot = cache_->pools[{&m, set, arch.sm, input}];
  if (!slot) {
    slot = std::make_unique<PoolCache::Pool>();
    std::set<KernelConfig> forms;
    for (const auto& e : Registry::default_registry().candidates(m.spec.op, arch)) {
      if (!m.spec.covers(e.space) || (set && !set->contains(e.config)) || !legal_on_arch(e.config, arch, input))
        continue;
      slot->configs.push_back(e.config);
      slot->unique_pool_forms = forms.insert(pool_form(e.config)).second && slot->unique_pool_forms;
    }
  }
  *unique_pool_forms = slot->unique_pool_forms;
  return slot->configs;
}

std::vector<KernelConfig> Selector::set_pool(const ModelEntry& m, const CandidateSet* set, const Problem& p,
                                             const ArchSpec& arch) const {
  std::vector<KernelConfig> out;
  bool unique = true;
  const std::vector<KernelConfig>& candidates = set_candidates(m, set, arch, input_dtype(p), &unique);
  out.reserve(candidates.size());
  // legal() without its problem-independent half (checked above, once) and without messages.
  const ProblemLegality legality(p, arch);
  for (const auto& c : candidates) {
    if (!family_runs(c.fam(), p)) continue;
    const KernelConfig r = legality.resolve(c);
    if (legality.check<false>(r).ok) out.push_back(r);
  }
  // Distinct pool forms resolve to distinct configs; otherwise dedupe as Registry::lookup does.
  if (!unique) {
    std::set<KernelConfig> seen;
    std::erase_if(out, [&](const KernelConfig& c) { return !seen.insert(c).second; });
  }
  return out;
}

std::vector<KernelConfig> Selector::pool_impl(const Problem& p, const ArchSpec& arch, bool* pruned, bool* fast,
                                              bool use_student) const {
  const ModelEntry* m = model_for(p, arch);
  *fast = false;
  if (m && m->fast && use_student) {
    // The student's own set; when none of it is legal the teacher scores its usual pool.
    if (!m->fast->candidates) *fast = true;
    else if (std::vector<KernelConfig> out = set_pool(*m, &*m->fast->candidates, p, arch); !out.empty()) {
      *pruned = *fast = true;
      return out;
    }
  }
  if (prune_ && m && m->candidates) {
    std::vector<KernelConfig> out = set_pool(*m, &*m->candidates, p, arch);
    *pruned = !out.empty();
    if (!out.empty()) return out;
  }
  *pruned = false;
  // The model's whole legal pool: Registry::lookup_configs' configs in its order, over the cached
  // candidates (no dedupe when their pool forms are distinct).
  return m ? set_pool(*m, nullptr, p, arch) : Registry::default_registry().lookup_configs(p, arch);
}

std::vector<KernelConfig> Selector::pool(const Problem& p, const ArchSpec& arch, bool* pruned) const {
  bool is_pruned = false, fast = false;
  std::vector<KernelConfig> out = pool_impl(p, arch, &is_pruned, &fast);
  if (pruned) *pruned = is_pruned;
  return out;
}

std::vector<KernelConfig> Selector::prune(const Problem& p, const ArchSpec& arch,
                                          std::span<const KernelConfig> configs, bool* pruned) const {
  std::vector<KernelConfig> out;
  const ModelEntry* m = model_for(p, arch);
  if (m && m->fast && m->fast->candidates) {
    for (const auto& c : configs)
      if (m->fast->candidates->contains(c)) out.push_back(c);
    if (pruned) *pruned = !out.empty();
    if (!out.empty()) return out;
  }
  if (!prune_) m = nullptr;
  if (m && m->candidates)
    for (const auto& c : configs)
      if (m->candidates->contains(c)) out.push_back(c);
  if (pruned) *pruned = !out.empty();
  if (out.empty()) out.assign(configs.begin(), configs.end());
  return out;
}

std::vector<Ranked> Selector::rank(const Problem& p, const ArchSpec& arch, int k) const {
  bool pruned = false, fast = false;
  std::vector<KernelConfig> configs = pool_impl(p, arch, &pruned, &fast);
  return score(p, arch, std::move(configs), k, true, fast, nullptr);
}

std::vector<Ranked> Selector::rank_configs(const Problem& p, const ArchSpec& arch,
                                           std::span<const KernelConfig> configs, int k) const {
  std::vector<KernelConfig> resolved;
  for (const auto& c : configs) resolved.push_back(resolve(c, p));
  const ModelEntry* m = model_for(p, arch);
  const bool fast = m && m->fast &&
                    (!m->fast->candidates || std::all_of(resolved.begin(), resolved.end(), [&](const KernelConfig& c) {
                       return m->fast->candidates->contains(c);
                     }));
  return score(p, arch, std::move(resolved), k, true, fast, nullptr);
}

std::vector<Ranked> Selector::rank_fallback(const Problem& p, const ArchSpec& arch,
                                            std::span<const KernelConfig> configs, int k) const {
  std::vector<KernelConfig> resolved;
  for (const auto& c : configs) resolved.push_back(resolve(c, p));
  return score(p, arch, std::move(resolved), k, false, false, nullptr);
}

Selection Selector::select(const Problem& p, const ArchSpec& arch, int k, ScoreMode mode) const {
  Selection s;
  std::vector<KernelConfig> configs = pool_impl(p, arch, &s.pruned, &s.fast, mode != ScoreMode::full);
  s.pool_size = configs.size();
  const int need = k > 0 ? std::max(k, 2) : 0;  // the confidence needs the runner-up
  std::vector<Ranked> all = score(p, arch, std::move(configs), need, true, s.fast, &s.reason);
  s.fast = s.fast && s.reason.empty();
  s.from_model = s.reason.empty();
  s.source = all.empty() ? (s.from_model ? "" : "fallback") : all.front().source;
  if (s.from_model) {
    const ModelEntry* m = model_for(p, arch);
    s.units = "model:" + (m && !m->spec.objective.empty() ? m->spec.objective : std::string("score"));
    s.vendor_first = m && m->spec.vendor_first;
    if (m && m->vendor_model) vendor_choice(*m, p, arch, s);
  } else {
    s.units = "ln_ratio";
  }
  if (all.size() == 1) s.confidence = std::numeric_limits<double>::infinity();
  if (all.size() >= 2) {
    const double a = all[0].score, b = all[1].score;
    if (s.from_model) s.confidence = a - b;
    else if (a > 0) s.confidence = b > 0 ? std::log(a / b) : std::numeric_limits<double>::infinity();
  }
  if (k > 0 && all.size() > static_cast<std::size_t>(k)) all.resize(static_cast<std::size_t>(k));
  s.top = std::move(all);
  return s;
}

Shortlist resolve_shortlist(Shortlist how) { return how == Shortlist::automatic ? Shortlist::varied : how; }

const char* shortlist_name(Shortlist how) {
  switch (resolve_shortlist(how)) {
    case Shortlist::first: return "first";
    default: return "varied";
  }
}

std::array<int, 6> tile_shape(const KernelConfig& c) {
  if (c.direct()) return {c.family, c.dw_tile_h, c.dw_tile_w, c.dw_tile_c, 0, 0};
  return {c.family, c.tile_m, c.tile_n, c.tile_k, c.warps_m, c.warps_n};
}

Selection Selector::shortlist(const Problem& p, const ArchSpec& arch, int k, Shortlist how) const {
  const bool varied = resolve_shortlist(how) == Shortlist::varied && k > 1 && std::holds_alternative<ConvProblem>(p);
  Selection s = select(p, arch, varied ? std::max(k, kShortlistWindow) : k, ScoreMode::full);
  if (!varied) return s;
  const std::size_t want = static_cast<std::size_t>(k);
  std::vector<bool> taken(s.top.size(), false);
  std::set<std::array<int, 6>> shapes;
  std::vector<Ranked> out;
  for (std::size_t i = 0; i < s.top.size() && out.size() < want; ++i)
    if (shapes.insert(tile_shape(s.top[i].config)).second) out.push_back(s.top[i]), taken[i] = true;
  for (std::size_t i = 0; i < s.top.size() && out.size() < want; ++i)  // too few shapes: fill in rank order
    if (!taken[i]) out.push_back(s.top[i]);
  s.top = std::move(out);
  return s;
}

}  // namespace tilepick
