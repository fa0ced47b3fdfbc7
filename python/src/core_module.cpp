// tilepick._core: the Python face of the C++ library. Training computes features here, through the
// one C++ feature function (features.hpp); nothing in Python re-implements a feature.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/array.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/hash.hpp"
#include "dispatch_module.hpp"
#include "select/selector_eval.hpp"
#include "tilepick/arch.hpp"
#include "tilepick/config.hpp"
#include "tilepick/error.hpp"
#include "tilepick/features.hpp"
#include "tilepick/gbdt.hpp"
#include "tilepick/jit.hpp"
#include "tilepick/selector.hpp"
#include "tilepick/legality.hpp"
#include "tilepick/problem.hpp"
#include "tilepick/registry.hpp"
#include "tilepick/space.hpp"
#include "tilepick/tilepick.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace tilepick::py {
namespace {

using Matrix = nb::ndarray<nb::numpy, double, nb::ndim<2>>;
using Vector = nb::ndarray<nb::numpy, double, nb::ndim<1>>;
using InputRows = nb::ndarray<const double, nb::ndim<2>, nb::c_contig, nb::device::cpu>;

// A numpy array that owns `values` (moved onto the heap, freed with the array).
template <class Array, std::size_t N>
Array to_numpy(std::vector<double> values, const std::size_t (&shape)[N]) {
  auto* owned = new std::vector<double>(std::move(values));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<std::vector<double>*>(p); });
  return Array(owned->data(), N, shape, owner);
}

const ArchSpec& arch_named(const std::string& name) { return find_arch(default_arch_specs(), name); }

// Configs resolved against their problem, as `tilepick features` does (align=auto -> widths).
std::vector<KernelConfig> parse_configs(const std::vector<std::string>& texts, const Problem& p) {
  std::vector<KernelConfig> out;
  out.reserve(texts.size());
  for (const auto& t : texts) out.push_back(resolve(parse_config(t), p));
  return out;
}

Matrix features_batch_py(const std::vector<std::string>& problem_texts,
                         const std::vector<std::string>& config_texts, const std::string& arch_name,
                         int threads) {
  if (problem_texts.size() != config_texts.size())
    throw nb::value_error(("features_batch: " + std::to_string(problem_texts.size()) + " problems but " +
                           std::to_string(config_texts.size()) + " configs (one config per problem)")
                              .c_str());
  const ArchSpec& arch = arch_named(arch_name);
  const std::size_t n_features = feature_schema().size();
  std::vector<Problem> problems;
  std::vector<KernelConfig> configs;
  std::vector<double> rows;
  {
    nb::gil_scoped_release unlocked;  // the strings are C++ copies already
    problems.reserve(problem_texts.size());
    configs.reserve(config_texts.size());
    for (std::size_t i = 0; i < problem_texts.size(); ++i) {
      problems.push_back(parse_problem(problem_texts[i]));
      configs.push_back(resolve(parse_config(config_texts[i]), problems.back()));
    }
    rows.resize(problems.size() * n_features);
    if (!problems.empty()) features_batch(problems, configs, arch, rows.data(), threads);
  }
  return to_numpy<Matrix>(std::move(rows), {problems.size(), n_features});
}

// The leading problem columns (problem_features) of each problem, as features_batch's arch.
Matrix problem_features_batch_py(const std::vector<std::string>& problem_texts, const std::string& arch_name) {
  const ArchSpec& arch = arch_named(arch_name);
  const std::size_t width = feature_schema().problem_columns;
  std::vector<double> rows;
  {
    nb::gil_scoped_release unlocked;  // the strings are C++ copies already
    rows.reserve(problem_texts.size() * width);
    for (const auto& text : problem_texts) {
      const std::vector<double> row = problem_features(parse_problem(text), arch);
      rows.insert(rows.end(), row.begin(), row.end());
    }
  }
  return to_numpy<Matrix>(std::move(rows), {problem_texts.size(), width});
}

std::vector<std::string> legal_configs_py(const std::string& problem_text, const std::string& arch_name) {
  const Problem p = parse_problem(problem_text);
  std::vector<std::string> out;
  for (const auto& e : Registry::default_registry().lookup(p, arch_named(arch_name)))
    out.push_back(to_string(e.config));
  return out;
}

// f(problem, config, arch) of each config, as a numpy vector (the GIL released while it runs).
template <class F>
Vector per_config(const std::string& problem_text, const std::vector<std::string>& config_texts,
                  const std::string& arch_name, F f) {
  const Problem p = parse_problem(problem_text);
  const ArchSpec& arch = arch_named(arch_name);
  const auto configs = parse_configs(config_texts, p);
  std::vector<double> out(configs.size());
  {
    nb::gil_scoped_release unlocked;
    for (std::size_t i = 0; i < configs.size(); ++i) out[i] = f(p, configs[i], arch);
  }
  return to_numpy<Vector>(std::move(out), {configs.size()});
}

Vector estimated_times_py(const std::string& problem, const std::vector<std::string>& configs, const std::string& arch) {
  return per_config(problem, configs, arch, estimated_time_us);
}

Vector heuristic_scores_py(const std::string& problem, const std::vector<std::string>& configs, const std::string& arch) {
  return per_config(problem, configs, arch, heuristic_score);
}

Vector gbdt_predict_py(const std::string& model_path, InputRows rows) {
  const std::size_t n = rows.shape(0), cols = rows.shape(1);
  std::vector<double> scores(n);
  {
    nb::gil_scoped_release unlocked;
    const GbdtModel model = GbdtModel::load(model_path);
    model.predict(rows.data(), n, cols, scores.data());
  }
  return to_numpy<Vector>(std::move(scores), {n});
}

// The identity of the configs a model of `op` was trained over (tilepick::config_space_hash, which
// the selector checks); unknown ops are an error here rather than a hash of nothing.
std::string config_space_hash_py(const std::string& op) {
  if (config_space_names(op).empty())
    throw NotFound("no config space covers op '" + op + "'");
  return config_space_hash(op);
}

// (name, canonical problem) of each line of a problem file.
std::vector<std::tuple<std::string, std::string>> problem_file_py(const std::string& path) {
  std::vector<std::tuple<std::string, std::string>> out;
  for (const auto& np : load_problem_file(path)) out.emplace_back(np.name, to_string(np.problem));
  return out;
}

// One Selector per (models dir, mode), loaded on first use and kept for the process.
const Selector& selector_for(const std::string& models_dir, const std::string& mode) {
  static std::mutex mutex;
  static std::map<std::pair<std::string, std::string>, std::unique_ptr<Selector>> selectors;
  if (mode != "full" && mode != "fast") throw nb::value_error(("mode '" + mode + "' is not full or fast").c_str());
  std::lock_guard<std::mutex> lock(mutex);
  auto& s = selectors[{models_dir, mode}];
  if (!s) s = std::make_unique<Selector>(models_dir, 1, true, mode == "full" ? ScoreMode::full : ScoreMode::fast);
  return *s;
}

// The configs the selector scores for one problem (resolved), and whether the fast student scores them.
std::tuple<std::vector<std::string>, bool> selector_pool_py(const std::string& problem, const std::string& arch_name,
                                                            const std::string& models_dir, const std::string& mode) {
  const Problem p = parse_problem(problem);
  const Selector& sel = selector_for(models_dir, mode);
  std::vector<std::string> out;
  bool fast = false;
  {
    nb::gil_scoped_release unlocked;
    const Selection s = sel.select(p, arch_named(arch_name), 1);
    fast = s.fast;
    for (const auto& c : sel.pool(p, arch_named(arch_name))) out.push_back(to_string(c));
  }
  return {out, fast};
}

// The selector's best k (config, score) for one problem.
std::vector<std::tuple<std::string, double>> selector_rank_py(const std::string& problem, const std::string& arch_name,
                                                              const std::string& models_dir, const std::string& mode,
                                                              int k) {
  const Problem p = parse_problem(problem);
  const Selector& sel = selector_for(models_dir, mode);
  std::vector<std::tuple<std::string, double>> out;
  nb::gil_scoped_release unlocked;
  for (const auto& r : sel.rank(p, arch_named(arch_name), k)) out.emplace_back(r.text, r.score);
  return out;
}

}  // namespace
}  // namespace tilepick::py

NB_MODULE(_core, m) {
  using namespace tilepick;
  using namespace tilepick::py;
  m.doc() = "tilepick C++ core: problems, configs, the feature function, the GBDT evaluator, the dispatcher.";

  // tilepick errors keep their message: parse errors, invalid problems, unknown names (NotFound) and
  // model mismatches are ValueError; Unsupported is NotImplementedError; I/O errors are OSError.
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const ModelMismatch& e) {  // rows that do not fit the model: a bad argument
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const Error& e) {
      switch (e.status()) {
        case Status::unsupported: PyErr_SetString(PyExc_NotImplementedError, e.what()); break;
        case Status::invalid_argument: PyErr_SetString(PyExc_ValueError, e.what()); break;
        case Status::io_error: PyErr_SetString(PyExc_OSError, e.what()); break;
        case Status::cuda_error:
        case Status::internal: PyErr_SetString(PyExc_RuntimeError, e.what()); break;
        default: PyErr_SetString(PyExc_ValueError, e.what()); break;  // parse, invalid, not_found
      }
    }
  });

#ifdef TILEPICK_WHEEL_DATA
  // An installed wheel has data/arch, data/spaces and models/ inside the package;
  // TILEPICK_DATA_DIR and TILEPICK_MODELS_DIR still win.
  for (nb::handle dir : nb::module_::import_("tilepick").attr("__path__")) {
    nb::object environ = nb::module_::import_("os").attr("environ");
    environ.attr("setdefault")("TILEPICK_DATA_DIR", nb::cast<std::string>(dir) + "/data");
    environ.attr("setdefault")("TILEPICK_MODELS_DIR", nb::cast<std::string>(dir) + "/models");
    break;
  }
#endif

  m.def("feature_names", [] { return feature_schema().names; }, "Ordered feature names of this build.");
  m.def("feature_schema_hash", [] { return feature_schema().hash; }, "16 hex digits; stored with every model.");
  m.def("problem_feature_count", [] { return feature_schema().problem_columns; },
        "How many leading features depend on the problem and device alone (the same in every row of a problem).");
  m.def("feature_version", [] { return feature_schema().version; });
  m.def("features_batch", &features_batch_py, "problems"_a, "configs"_a, "arch"_a = "h200", "threads"_a = 0,
        "Feature rows (float64, n x n_features) of the pairs (problems[i], configs[i]); "
        "threads <= 0: TILEPICK_NUM_THREADS, else the hardware concurrency.");
  m.def("problem_features_batch", &problem_features_batch_py, "problems"_a, "arch"_a = "h200",
        "The leading problem_feature_count() features (float64, n x problem_feature_count()) of each problem: "
        "what a vendor_choice model reads, equal to those columns of features_batch.");
  m.def("canonical_problem", [](const std::string& s) { return to_string(parse_problem(s)); }, "text"_a);
  m.def("canonical_config", [](const std::string& s) { return to_string(parse_config(s)); }, "text"_a);
  m.def("problem_op", [](const std::string& s) { return op_name(parse_problem(s)); }, "text"_a,
        "gemm, conv_fwd, conv_bwd_data or conv_bwd_weight.");
  m.def("dtype_family", [](const std::string& s) { return dtype_family(parse_problem(s)); }, "text"_a,
        "The dtype family that keys models: half (f16, bf16), tf32 or fp8.");
  m.def("legal_configs", &legal_configs_py, "problem"_a, "arch"_a = "h200",
        "Canonical strings of the registry's legal configs for the problem (align resolved).");
  m.def("heuristic_scores", &heuristic_scores_py, "problem"_a, "configs"_a, "arch"_a = "h200",
        "Analytic fallback score of each config (estimated TFLOP/s; higher is better).");
  m.def("estimated_times", &estimated_times_py, "problem"_a, "configs"_a, "arch"_a = "h200",
        "The analytic model's time estimate of each config in us (estimated_time_us; NaN: none).");
  m.def("selector_pool", &selector_pool_py, "problem"_a, "arch"_a, "models_dir"_a, "mode"_a = "full",
        "(configs the Selector of models_dir scores for the problem, resolved; whether its fast student scores them). "
        "mode: full (the models) or fast (their fast/ students).");
  m.def("selector_rank", &selector_rank_py, "problem"_a, "arch"_a, "models_dir"_a, "mode"_a = "full", "k"_a = 1,
        "The best k (config, score) of the Selector of models_dir (mode full or fast).");
  m.def("model_version", [](const std::string& dir) { return load_model_folder(dir).spec.version; }, "dir"_a,
        "'<name>@<hash of the model's text>' of a model folder: the key plan caches and fast/ students use.");
  m.def("model_file", &model_file_of, "dir"_a,
        "The teacher file of a model folder: feature_spec.json 'model_file' (relative to it), else model.txt.gz, else model.txt.");
  m.def("tile_shape", [](const std::string& s) { return tile_shape(parse_config(s)); }, "config"_a,
        "The shape a varied top_k shortlist keeps one config of (Selector::shortlist): family, tile and warps, or dw tile.");
  m.def("pool_form", [](const std::string& s) { return to_string(pool_form(parse_config(s))); }, "config"_a,
        "A config with align reset to auto: the form of candidates.txt lines.");
  m.def("gbdt_predict", &gbdt_predict_py, "model_path"_a, "rows"_a,
        "Raw scores of a LightGBM text model (.txt or .txt.gz) on rows (n x num_features).");
  m.def("config_space_hash", &config_space_hash_py, "op"_a,
        "FNV-1a 64 of 'name=hash\\n' of the default spaces covering op (sorted by name); models record it.");
  m.def("config_spaces", &config_space_names, "op"_a,
        "Names of the default spaces covering op, sorted: a model's pool (feature_spec 'spaces').");
  m.def(
      "match_arch",
      [](const std::string& name, int cc_major, int cc_minor, int sm_count) {
        DeviceProps dev;
        dev.name = name, dev.cc_major = cc_major, dev.cc_minor = cc_minor, dev.sm_count = sm_count;
        const ArchSpec a = match_arch(default_arch_specs(), dev);
        nb::dict out;
        out["name"] = a.name, out["source"] = a.source, out["device_name"] = a.device_name;
        out["sm_count"] = a.sm_count, out["mem_bw_gbps"] = a.mem_bw_gbps;
        out["peak_f16"] = a.peak_f16, out["peak_bf16"] = a.peak_bf16, out["peak_tf32"] = a.peak_tf32;
        out["peak_fp8"] = a.peak_fp8;
        return out;
      },
      "name"_a, "cc_major"_a, "cc_minor"_a, "sm_count"_a = 0,
      "The data/arch spec of a device (match_arch in include/tilepick/arch.hpp: compute capability, the longest "
      "name match; peaks scaled by sm_count / the spec's): name, source, device_name, sm_count, mem_bw_gbps, "
      "peak_f16, peak_bf16, peak_tf32, peak_fp8. ValueError when no spec has that compute capability.");
  // `tilepick eval`'s tie band: a time within (1 + tie_band) of the best counts as the best (top-1 / top-k hits).
  m.attr("tie_band") = eval::kTieBand;
  m.def("fnv_hex16", [](nb::bytes data) { return hex16(fnv1a64(std::string_view(data.c_str(), data.size()))); },
        "data"_a, "FNV-1a 64 of the bytes in hex: the hash of model versions and feature_spec model_text_fnv.");
  m.def("version", [] { return std::string(tp_version()); }, "The library's version (tilepick.__version__).");
  m.def("models_summary", [] {
    std::vector<std::tuple<std::string, bool, std::string>> out;
    for (const auto& e : Selector::default_selector().models()) out.emplace_back(e.spec.name, e.usable(), e.rejected);
    return out;
  }, "(folder name, usable, why not) of every model folder the default selector found (tilepick.info).");
  m.def("device_summary", [](int ordinal) {
    std::string why;
    const auto d = query_device(ordinal, &why);
    if (!d) return "none (" + why + ")";
    return d->name + ", sm_" + std::to_string(d->cc_major) + std::to_string(d->cc_minor) + ", " +
           std::to_string(d->sm_count) + " SMs, driver " + std::to_string(d->driver_version / 1000) + "." +
           std::to_string(d->driver_version % 1000 / 10);
  }, "ordinal"_a = 0, "The live device in one line, or why there is none (tilepick.info).");
  m.def("jit_cache_dir", [] { return jit::cache_dir(); }, "Where compiled kernels are kept (TILEPICK_CACHE_DIR or the default).");
  m.def("arch_names", [] {
    std::vector<std::string> names;
    for (const auto& a : default_arch_specs()) names.push_back(a.name);
    return names;
  }, "Names of the arch specs (data/arch), e.g. h200, h100_sxm.");
  m.def("problem_file", &problem_file_py, "path"_a, "(name, canonical problem) of each problem in the file.");
  m.def("problem_json", [](const std::string& s) { return to_json_text(parse_problem(s)); }, "text"_a,
        "All fields of a problem plus derived sizes (out, gemm view, flops) as JSON text.");
  bind_dispatch(m);
}
