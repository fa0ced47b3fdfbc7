// tilepick._core, dispatcher part: plan / check / operand_specs / select, and Plan.run over DLPack
// tensors (torch, cupy, jax, numpy ...) or plain (pointer, dtype, shape, strides, device) tuples.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "dispatch_module.hpp"
#include "tilepick/arch.hpp"
#include "tilepick/dispatch.hpp"
#include "tilepick/error.hpp"
#include "tilepick/problem.hpp"
#include "tilepick/selector.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace tilepick::py {
namespace {

using AnyArray = nb::ndarray<nb::ro>;  // any framework, device, dtype and strides
// (data pointer, dtype name, shape, strides in elements (empty = dense row-major), device; -1 = host)
using RawTensor = std::tuple<std::uintptr_t, std::string, std::vector<std::int64_t>, std::vector<std::int64_t>, int>;

nb::object json_to_py(const nlohmann::json& j) {
  return nb::module_::import_("json").attr("loads")(j.dump());
}

// The operand names of a plan's problem, in run() order, for error messages.
std::vector<std::string> operand_names(const Plan& plan) {
  std::vector<std::string> names;
  for (const auto& s : operand_specs(parse_problem(plan.info().problem))) names.push_back(s.name);
  return names;
}

std::string operand_label(const std::vector<std::string>& names, std::size_t i) {
  return "operand " + std::to_string(i) + (i < names.size() ? " '" + names[i] + "'" : std::string());
}

std::string dlpack_dtype_name(nb::dlpack::dtype t) {
  static const char* codes[] = {"int", "uint", "float", "opaque", "bfloat", "complex", "bool"};
  std::string name = t.code < 7 ? codes[t.code] : "code" + std::to_string(t.code) + "_";
  return name + std::to_string(t.bits) + (t.lanes > 1 ? "x" + std::to_string(t.lanes) : "");
}

std::optional<DType> from_dlpack(nb::dlpack::dtype t) {
  using C = nb::dlpack::dtype_code;
  if (t.lanes != 1) return std::nullopt;
  const auto code = static_cast<C>(t.code);
  if (code == C::Float && t.bits == 16) return DType::f16;
  if (code == C::Bfloat && t.bits == 16) return DType::bf16;
  if (code == C::Float && t.bits == 32) return DType::f32;
  if (code == C::Float8_E4M3FN && t.bits == 8) return DType::e4m3;
  if (code == C::Float8_E5M2 && t.bits == 8) return DType::e5m2;
  return std::nullopt;
}

TensorArg to_tensor_arg(const AnyArray& a, const std::string& label) {
  TensorArg t;
  const auto dtype = from_dlpack(a.dtype());
  if (!dtype)
    throw InvalidArgument(label + ": dtype " + dlpack_dtype_name(a.dtype()) +
                          " is not a tilepick dtype (f16, bf16, f32, e4m3fn, e5m2)");
  t.dtype = *dtype;
  t.data = const_cast<void*>(a.data());
  for (std::size_t d = 0; d < a.ndim(); ++d) {
    t.shape.push_back(static_cast<std::int64_t>(a.shape(d)));
    t.strides.push_back(a.stride(d));
  }
  switch (a.device_type()) {
    case nb::device::cuda::value:
    case nb::device::cuda_managed::value: t.device = a.device_id(); break;
    case nb::device::cpu::value:
    case nb::device::cuda_host::value:
      throw InvalidArgument(label + ": host memory (a numpy array or CPU tensor); tilepick runs on CUDA device "
                            "memory (torch: .cuda(), cupy: cupy.asarray)");
    default:
      throw InvalidArgument(label + ": DLPack device type " + std::to_string(a.device_type()) +
                            " is neither CUDA nor host memory");
  }
  return t;
}

// label() names the operand in an error (built only then: this is the per-call path of tilepick.torch).
template <class Label>
TensorArg to_tensor_arg(const RawTensor& r, const Label& label) {
  const auto& [ptr, dtype_name, shape, strides, device] = r;
  const auto dtype = parse_dtype(dtype_name);
  if (!dtype) throw InvalidArgument(label() + ": unknown dtype '" + dtype_name + "' (f16, bf16, f32, e4m3, e5m2)");
  if (!strides.empty() && strides.size() != shape.size())
    throw InvalidArgument(label() + ": " + std::to_string(shape.size()) + " sizes but " +
                          std::to_string(strides.size()) + " strides");
  return TensorArg{reinterpret_cast<void*>(ptr), *dtype, shape, strides, device};
}

// A stream given as None, an int (CUstream), an object with .cuda_stream (torch, cupy) or
// __cuda_stream__() (the CUDA stream protocol: (version, handle)).
void* stream_pointer(const nb::object& s) {
  if (s.is_none()) return nullptr;
  if (nb::isinstance<nb::int_>(s)) return reinterpret_cast<void*>(nb::cast<std::uintptr_t>(s));
  if (nb::hasattr(s, "cuda_stream")) return reinterpret_cast<void*>(nb::cast<std::uintptr_t>(s.attr("cuda_stream")));
  if (nb::hasattr(s, "__cuda_stream__")) {
    nb::tuple t = nb::cast<nb::tuple>(s.attr("__cuda_stream__")());
    return reinterpret_cast<void*>(nb::cast<std::uintptr_t>(t[1]));
  }
  throw InvalidArgument("stream: expected None, an int (CUstream) or an object with .cuda_stream, got " +
                        nb::cast<std::string>(nb::str(s.type())));
}

// A workspace given as None, an int (device pointer) or a DLPack array.
void* workspace_pointer(const nb::object& w, const Plan& plan) {
  if (w.is_none()) return nullptr;
  if (nb::isinstance<nb::int_>(w)) return reinterpret_cast<void*>(nb::cast<std::uintptr_t>(w));
  AnyArray a;
  if (!nb::try_cast(w, a)) throw InvalidArgument("workspace: expected None, an int (device pointer) or a DLPack array");
  std::size_t bytes = a.nbytes();
  if (bytes < plan.workspace_bytes())
    throw InvalidArgument("workspace: " + std::to_string(bytes) + " bytes given, the plan needs " +
                          std::to_string(plan.workspace_bytes()));
  if (a.device_type() != nb::device::cuda::value && a.device_type() != nb::device::cuda_managed::value)
    throw InvalidArgument("workspace: must be device memory (got DLPack device type " +
                          std::to_string(a.device_type()) + ")");
  return const_cast<void*>(a.data());
}

// Runs f without the GIL; an error is rethrown only after the GIL is taken back, so that nanobind
// translates it with the GIL held.
template <class F>
void without_gil(const F& f) {
  std::exception_ptr error;
  {
    nb::gil_scoped_release unlocked;
    try {
      f();
    } catch (...) {
      error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
}

void run_checked(const Plan& plan, const std::vector<TensorArg>& args, void* workspace, void* stream) {
  without_gil([&] { plan.run(args, workspace, stream); });
}

void run_arrays(const Plan& plan, const std::vector<nb::object>& tensors, const nb::object& workspace,
                const nb::object& stream) {
  const auto names = operand_names(plan);
  std::vector<TensorArg> args;
  args.reserve(tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const std::string label = operand_label(names, i);
    AnyArray a;
    if (!nb::try_cast(tensors[i], a))
      throw InvalidArgument(label + ": " + nb::cast<std::string>(nb::str(tensors[i].type())) +
                            " is not a DLPack tensor (torch, cupy, jax, numpy arrays are)");
    args.push_back(to_tensor_arg(a, label));
  }
  run_checked(plan, args, workspace_pointer(workspace, plan), stream_pointer(stream));
}

void run_raw(const Plan& plan, const std::vector<RawTensor>& tensors, std::uintptr_t workspace, const nb::object& stream) {
  std::vector<TensorArg> args;
  args.reserve(tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i)
    args.push_back(to_tensor_arg(tensors[i], [&] { return operand_label(operand_names(plan), i); }));
  run_checked(plan, args, reinterpret_cast<void*>(workspace), stream_pointer(stream));
}

void run_pointers(const Plan& plan, const std::vector<std::uintptr_t>& pointers, std::uintptr_t workspace,
                  std::uintptr_t stream) {
  std::vector<const void*> p(pointers.size());
  for (std::size_t i = 0; i < p.size(); ++i) p[i] = reinterpret_cast<const void*>(pointers[i]);
  without_gil([&] { plan.run_pointers(p, reinterpret_cast<void*>(workspace), reinterpret_cast<void*>(stream)); });
}

PlanOptions make_options(const std::string& strategy, int k, const std::string& config,
                         const std::optional<std::string>& vendor, int device, const std::string& offline_arch,
                         std::optional<double> auto_time_us, const std::optional<std::string>& policy) {
  PlanOptions o;
  if (policy) o.policy = parse_policy(*policy);
  const auto s = parse_strategy(strategy);
  if (!s) throw InvalidArgument("strategy '" + strategy + "' is not one of " + strategy_names());
  o.strategy = *s;
  if (k < 1) throw InvalidArgument("k must be >= 1, got " + std::to_string(k));
  o.k = k;
  o.config = config;
  if (vendor) {
    const auto v = parse_vendor_mode(*vendor);
    if (!v) throw InvalidArgument("vendor '" + *vendor + "' is not one of off, auto, only");
    o.vendor = *v;
  }
  o.device = device;
  o.offline_arch = offline_arch;
  o.auto_time_us = auto_time_us;  // checked by the dispatcher
  return o;
}

std::shared_ptr<const Plan> plan_py(const std::string& problem, const std::string& strategy, int k,
                                    const std::string& config, const std::optional<std::string>& vendor, int device,
                                    const std::string& offline_arch, std::optional<double> auto_time_us,
                                    const std::optional<std::string>& policy) {
  const Problem p = parse_problem(problem);
  const PlanOptions o = make_options(strategy, k, config, vendor, device, offline_arch, auto_time_us, policy);
  std::shared_ptr<const Plan> plan;
  std::exception_ptr error;
  {
    nb::gil_scoped_release unlocked;  // timing and compiling take long; other Python threads go on
    try {
      plan = Dispatcher::default_dispatcher().plan(p, o);
    } catch (...) {
      error = std::current_exception();
    }
  }
  if (error) std::rethrow_exception(error);
  return plan;
}

nb::dict check_py(const std::string& problem, const std::string& strategy, int k, const std::string& config,
                  const std::optional<std::string>& vendor, int device, const std::string& offline_arch,
                  std::optional<double> auto_time_us, const std::optional<std::string>& policy) {
  const Problem p = parse_problem(problem);
  const Applicability a = Dispatcher::default_dispatcher().check(
      p, make_options(strategy, k, config, vendor, device, offline_arch, auto_time_us, policy));
  nb::dict d;
  d["ok"] = a.ok;
  d["reason"] = a.reason;
  d["tilepick_candidates"] = a.tilepick_candidates;
  d["vendor_candidate"] = a.vendor_candidate;
  return d;
}

nb::list operand_specs_py(const std::string& problem) {
  nb::list out;
  for (const auto& s : operand_specs(parse_problem(problem))) {
    nb::dict d;
    d["name"] = s.name;
    d["slot"] = s.slot;
    d["dims"] = s.dims;
    d["dtype"] = std::string(to_string(s.dtype));
    d["shape"] = s.shape;
    d["output"] = s.output;
    out.append(d);
  }
  return out;
}

nb::dict select_py(const std::string& problem, const std::string& arch_name, int k, const std::string& mode) {
  const Problem p = parse_problem(problem);
  const ArchSpec& arch = find_arch(default_arch_specs(), arch_name);
  if (mode != "fast" && mode != "full")
    throw Error(Status::invalid_argument, "select: mode '" + mode + "' is not fast or full");
  Selection s;
  {
    nb::gil_scoped_release unlocked;
    s = Selector::default_selector().select(p, arch, k, mode == "full" ? ScoreMode::full : ScoreMode::fast);
  }
  nb::list top;
  for (const auto& r : s.top) {
    nb::dict d;
    d["config"] = r.text;
    d["score"] = r.score;
    d["source"] = r.source;
    top.append(d);
  }
  nb::dict d;
  d["problem"] = to_string(p);
  d["arch"] = arch.name;
  d["top"] = top;
  d["pool_size"] = s.pool_size;
  d["pruned"] = s.pruned;  // pool_size counts the model's candidates.txt configs
  d["fast"] = s.fast;      // scored by the model's fast/ student (top 16 re-scored by the model)
  d["from_model"] = s.from_model;
  d["source"] = s.source;
  d["reason"] = s.reason;
  d["confidence"] = s.confidence;
  d["units"] = s.units;
  d["vendor_first"] = s.vendor_first;
  d["vendor_chosen"] = s.vendor_chosen;        // per-problem vendor choice (docs/selection.md "Vendor choice")
  d["vendor_log_ratio"] = s.vendor_log_ratio;  // its predicted ln(vendor time / pick time); NaN without one
  return d;
}

nb::dict stats_py() {
  const Dispatcher& disp = Dispatcher::default_dispatcher();
  const PlanCacheStats s = disp.stats();
  nb::dict d;
  d["new_plans"] = s.new_plans;
  d["memory_hits"] = s.memory_hits;
  d["file_hits"] = s.file_hits;
  d["file_entries"] = s.file_entries;
  d["rejected_entries"] = s.rejected_entries;
  d["cache_file"] = disp.cache_file();
  return d;
}

}  // namespace

void bind_dispatch(nb::module_& m) {
  nb::class_<Plan>(m, "Plan", "A planned kernel for one problem (from plan()); run it on device tensors.")
      .def_prop_ro("info", [](const Plan& p) { return json_to_py(to_json(p.info())); },
                   "Everything about the choice: problem, kernel, strategy, candidates, cache, timings (dict).")
      .def_prop_ro("problem", [](const Plan& p) { return p.info().problem; })
      .def_prop_ro("kernel", [](const Plan& p) { return p.info().kernel; })
      .def_prop_ro("vendor", [](const Plan& p) { return p.info().vendor; })
      .def_prop_ro("workspace_bytes", &Plan::workspace_bytes)
      .def_prop_ro("runnable", &Plan::runnable, "False for offline plans (selection only).")
      .def("alignment", [](const Plan& p, const std::string& slot) { return p.alignment(slot); }, "slot"_a,
           "Required base alignment in bytes of an operand slot (a, b, c, d, bias).")
      .def("run", &run_arrays, "tensors"_a, "workspace"_a = nb::none(), "stream"_a = nb::none(),
           "Runs on DLPack tensors in operand_specs order (a, b, [c], d, [bias]); workspace: None, a device "
           "pointer or a device array of at least workspace_bytes; stream: None, a CUstream int or an object "
           "with .cuda_stream. Each tensor is checked (dtype, shape, dense layout, device, alignment).")
      .def("run_raw", &run_raw, "tensors"_a, "workspace"_a = 0, "stream"_a = nb::none(),
           "Like run, with tensors as (data_ptr, dtype, shape, strides, device) tuples (device -1 = host); "
           "checked the same way, no DLPack round trip.")
      .def("run_pointers", &run_pointers, "pointers"_a, "workspace"_a = 0, "stream"_a = 0,
           "Device pointers in operand_specs order; only their count, device and alignment are checked: for "
           "callers that checked the same shapes and layouts with run / run_raw before.")
      .def("__repr__", [](const Plan& p) {
        return "<tilepick.Plan " + p.info().problem + " -> " + p.info().kernel + (p.runnable() ? "" : " (offline)") +
               ">";
      });

  m.def("plan", &plan_py, "problem"_a, "strategy"_a = "auto", "k"_a = 4, "config"_a = "",
        "vendor"_a = nb::none(), "device"_a = -1, "offline_arch"_a = "", "auto_time_us"_a = nb::none(),
        "policy"_a = nb::none(),
        "Plans a problem with the default dispatcher (cached by problem, device, model, policy). policy: a policy "
        "string (docs/dispatch.md) instead of strategy, k, vendor and auto_time_us. "
        "offline_arch ('h200', 'sm_90'): selection without a GPU; such a plan does not run.");
  m.def("check", &check_py, "problem"_a, "strategy"_a = "auto", "k"_a = 4, "config"_a = "",
        "vendor"_a = nb::none(), "device"_a = -1, "offline_arch"_a = "", "auto_time_us"_a = nb::none(),
        "policy"_a = nb::none(),
        "{ok, reason, tilepick_candidates, vendor_candidate}: whether plan() can succeed.");
  m.def("operand_specs", &operand_specs_py, "problem"_a,
        "The operands in run() order: dicts {name, slot, dims, dtype, shape (memory order), output}.");
  m.def("select", &select_py, "problem"_a, "arch"_a = "h200", "k"_a = 4, "mode"_a = "fast",
        "The selector's ranking (no GPU; mode fast: a model's student, best 16 re-scored, or full: the model): "
        "{problem, arch, top: [{config, score, source}], pool_size, from_model, source, reason, confidence, units}.");
  m.def("dispatcher_stats", &stats_py, "Plan-cache counters of the default dispatcher and its cache file.");
  m.def("save_plan_cache", [] { Dispatcher::default_dispatcher().save(); },
        "Writes persistable plans to TILEPICK_PLAN_CACHE (no-op without one).");
  m.def("clear_plan_memory", [] { Dispatcher::default_dispatcher().clear_memory(); },
        "Forgets the plans kept in memory (the cache file is untouched).");
}

}  // namespace tilepick::py
