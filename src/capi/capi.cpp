// The C API (include/tilepick/tilepick.h) over the dispatcher. Every entry point runs its body in
// guarded(): exceptions become a tp_status and the thread-local last error; success clears it.
#include "tilepick/tilepick.h"

#include <cmath>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "tilepick/dispatch.hpp"
#include "tilepick/error.hpp"
#include "tilepick/selector.hpp"

#ifndef TILEPICK_VERSION
#define TILEPICK_VERSION "unknown"
#endif

struct tp_problem {
  tilepick::Problem problem;
  std::string text, op;
  std::vector<tilepick::TensorSpec> specs;
};

struct tp_plan {
  std::shared_ptr<const tilepick::Plan> plan;
  mutable std::once_flag json_once;
  mutable std::string json;
};

struct tp_dispatcher {
  std::unique_ptr<tilepick::Dispatcher> dispatcher;
};

namespace {

using tilepick::Error;
using tilepick::Status;

thread_local std::string last_error;
thread_local std::string check_reason;

// A NULL argument: guarded() prefixes the function's name.
[[noreturn]] void null_argument(const char* arg) {
  throw tilepick::InvalidArgument(std::string("argument '") + arg + "' is NULL");
}

template <class T>
void need(const T* p, const char* arg) {
  if (!p) null_argument(arg);
}

void set_error(const char* fn, const char* what, const char* detail = "") noexcept {
  try {
    last_error.assign(fn).append(": ").append(what).append(detail);
  } catch (...) {
    last_error.clear();
  }
}

// Runs `body`; the message of a failure is "<function>: <what went wrong>".
template <class F>
tp_status guarded(const char* fn, F&& body) noexcept {
  try {
    body();
    last_error.clear();
    return tp_status_ok;
  } catch (const Error& e) {
    set_error(fn, e.what());
    return e.status() == Status::ok ? tp_status_internal : static_cast<tp_status>(e.status());
  } catch (const std::bad_alloc&) {
    set_error(fn, "out of host memory");
  } catch (const std::exception& e) {
    set_error(fn, "internal error: ", e.what());
  } catch (...) {
    set_error(fn, "internal error: unknown exception");
  }
  return tp_status_internal;
}

tilepick::PlanOptions to_options(const tp_plan_options* o) {
  tilepick::PlanOptions out;
  if (!o) return out;
  switch (static_cast<int>(o->strategy)) {
    case tp_strategy_heuristic: out.strategy = tilepick::Strategy::heuristic; break;
    case tp_strategy_top_k: out.strategy = tilepick::Strategy::top_k; break;
    case tp_strategy_exhaustive: out.strategy = tilepick::Strategy::exhaustive; break;
    case tp_strategy_fixed: out.strategy = tilepick::Strategy::fixed; break;
    case tp_strategy_race: out.strategy = tilepick::Strategy::race; break;
    case tp_strategy_auto: out.strategy = tilepick::Strategy::automatic; break;
    default:
      throw tilepick::InvalidArgument("options.strategy " + std::to_string(static_cast<int>(o->strategy)) +
                                      " is not a tp_strategy (heuristic 0, top_k 1, exhaustive 2, fixed 3, race 4, auto 5)");
  }
  switch (static_cast<int>(o->vendor)) {
    case tp_vendor_default: break;
    case tp_vendor_off: out.vendor = tilepick::VendorMode::off; break;
    case tp_vendor_auto: out.vendor = tilepick::VendorMode::automatic; break;
    case tp_vendor_only: out.vendor = tilepick::VendorMode::only; break;
    default:
      throw tilepick::InvalidArgument("options.vendor " + std::to_string(static_cast<int>(o->vendor)) +
                                      " is not a tp_vendor_mode (default -1, off 0, auto 1, only 2)");
  }
  if (o->device < -1)
    throw tilepick::InvalidArgument("options.device " + std::to_string(static_cast<int>(o->device)) +
                                    " is not a CUDA ordinal (or -1 for the current device)");
  out.k = o->k;
  if (o->config) out.config = o->config;
  if (o->offline_arch) out.offline_arch = o->offline_arch;
  if (std::isnan(o->auto_time_us))
    throw tilepick::InvalidArgument("options.auto_time_us is NaN (< 0: the default, INFINITY: never time)");
  if (o->auto_time_us >= 0) out.auto_time_us = o->auto_time_us;
  if (o->policy && *o->policy) out.policy = tilepick::parse_policy(o->policy);
  return out;
}

tilepick::DType to_dtype(int d, const std::string& who) {
  if (d < tp_dtype_f16 || d > tp_dtype_f32)
    throw tilepick::InvalidArgument(who + ".dtype " + std::to_string(d) + " is not a tp_dtype (f16 0 .. f32 4)");
  return static_cast<tilepick::DType>(d);
}

tilepick::Dispatcher& default_dispatcher() { return tilepick::Dispatcher::default_dispatcher(); }

void fill_applicability(const tilepick::Applicability& a, tp_applicability* out) {
  check_reason = a.reason;
  out->ok = a.ok ? 1 : 0;
  out->reason = check_reason.c_str();
  out->tilepick_candidates = a.tilepick_candidates;
  out->vendor_candidate = a.vendor_candidate ? 1 : 0;
}

tp_status make_plan(const char* fn, tilepick::Dispatcher* d, const tp_problem* problem,
                    const tp_plan_options* options, tp_plan** out) {
  if (out) *out = nullptr;
  return guarded(fn, [&] {
    need(problem, "problem");
    need(out, "out");
    const tilepick::PlanOptions opt = to_options(options);
    auto h = std::make_unique<tp_plan>();
    h->plan = (d ? *d : default_dispatcher()).plan(problem->problem, opt);
    *out = h.release();
  });
}

}  // namespace

extern "C" {

const char* tp_version(void) { return TILEPICK_VERSION; }

const char* tp_status_name(tp_status s) {
  switch (s) {
    case tp_status_ok: return "ok";
    case tp_status_parse_error: return "parse_error";
    case tp_status_invalid_problem: return "invalid_problem";
    case tp_status_unsupported: return "unsupported";
    case tp_status_not_found: return "not_found";
    case tp_status_io_error: return "io_error";
    case tp_status_cuda_error: return "cuda_error";
    case tp_status_internal: return "internal";
    case tp_status_invalid_argument: return "invalid_argument";
  }
  return "unknown";
}

const char* tp_dtype_name(tp_dtype d) {
  switch (d) {
    case tp_dtype_f16: return "f16";
    case tp_dtype_bf16: return "bf16";
    case tp_dtype_e4m3: return "e4m3";
    case tp_dtype_e5m2: return "e5m2";
    case tp_dtype_f32: return "f32";
  }
  return nullptr;
}

const char* tp_last_error(void) { return last_error.c_str(); }

// ---- problems ----

tp_status tp_problem_parse(const char* text, tp_problem** out) {
  if (out) *out = nullptr;
  return guarded(__func__, [&] {
    need(text, "text");
    need(out, "out");
    auto h = std::make_unique<tp_problem>();
    h->problem = tilepick::parse_problem(text);
    h->text = tilepick::to_string(h->problem);
    h->op = tilepick::op_name(h->problem);
    h->specs = tilepick::operand_specs(h->problem);
    *out = h.release();
  });
}

void tp_problem_destroy(tp_problem* problem) { delete problem; }

tp_status tp_problem_string(const tp_problem* problem, const char** out) {
  return guarded(__func__, [&] {
    need(problem, "problem");
    need(out, "out");
    *out = problem->text.c_str();
  });
}

tp_status tp_problem_op(const tp_problem* problem, const char** out) {
  return guarded(__func__, [&] {
    need(problem, "problem");
    need(out, "out");
    *out = problem->op.c_str();
  });
}

tp_status tp_problem_operand_count(const tp_problem* problem, size_t* out) {
  return guarded(__func__, [&] {
    need(problem, "problem");
    need(out, "out");
    *out = problem->specs.size();
  });
}

tp_status tp_problem_operand(const tp_problem* problem, size_t index, tp_operand_spec* out) {
  return guarded(__func__, [&] {
    need(problem, "problem");
    need(out, "out");
    if (index >= problem->specs.size())
      throw tilepick::InvalidArgument("index " + std::to_string(index) + " is out of range ('" +
                                      problem->text + "' has " + std::to_string(problem->specs.size()) + " operands)");
    const tilepick::TensorSpec& s = problem->specs[index];
    out->name = s.name.c_str();
    out->slot = s.slot.c_str();
    out->dims = s.dims.c_str();
    out->dtype = static_cast<tp_dtype>(s.dtype);
    out->ndim = static_cast<int>(s.shape.size());
    out->shape = s.shape.data();
    out->output = s.output ? 1 : 0;
  });
}

// ---- options ----

tp_status tp_plan_options_init(tp_plan_options* options) {
  return guarded(__func__, [&] {
    need(options, "options");
    const tilepick::PlanOptions d;
    options->strategy = tp_strategy_auto;
    options->k = d.k;
    options->config = nullptr;
    options->vendor = tp_vendor_default;
    options->device = d.device;
    options->offline_arch = nullptr;
    options->auto_time_us = -1;
    options->policy = nullptr;
  });
}

// ---- dispatchers ----

tp_status tp_dispatcher_create(const char* cache_file, tp_dispatcher** out) {
  if (out) *out = nullptr;
  return guarded(__func__, [&] {
    need(out, "out");
    auto h = std::make_unique<tp_dispatcher>();
    h->dispatcher = std::make_unique<tilepick::Dispatcher>(tilepick::Selector::default_selector(),
                                                           cache_file ? cache_file : "");
    *out = h.release();
  });
}

void tp_dispatcher_destroy(tp_dispatcher* dispatcher) {
  try {
    delete dispatcher;
  } catch (...) {  // a destructor that throws must not cross the boundary
  }
}

tp_status tp_dispatcher_save(tp_dispatcher* dispatcher) {
  return guarded(__func__, [&] {
    need(dispatcher, "dispatcher");
    dispatcher->dispatcher->save();
  });
}

tp_status tp_dispatcher_clear_memory(tp_dispatcher* dispatcher) {
  return guarded(__func__, [&] {
    need(dispatcher, "dispatcher");
    dispatcher->dispatcher->clear_memory();
  });
}

tp_status tp_dispatcher_stats(const tp_dispatcher* dispatcher, tp_cache_stats* out) {
  return guarded(__func__, [&] {
    need(out, "out");
    const tilepick::PlanCacheStats s = (dispatcher ? *dispatcher->dispatcher : default_dispatcher()).stats();
    *out = {s.new_plans, s.memory_hits, s.file_hits, s.file_entries, s.rejected_entries};
  });
}

// ---- applicability ----

tp_status tp_check(const tp_problem* problem, const tp_plan_options* options, tp_applicability* out) {
  return guarded(__func__, [&] {
    need(problem, "problem");
    need(out, "out");
    fill_applicability(default_dispatcher().check(problem->problem, to_options(options)), out);
  });
}

tp_status tp_dispatcher_check(const tp_dispatcher* dispatcher, const tp_problem* problem,
                              const tp_plan_options* options, tp_applicability* out) {
  return guarded(__func__, [&] {
    need(dispatcher, "dispatcher");
    need(problem, "problem");
    need(out, "out");
    fill_applicability(dispatcher->dispatcher->check(problem->problem, to_options(options)), out);
  });
}

// ---- plans ----

tp_status tp_plan_create(const tp_problem* problem, const tp_plan_options* options, tp_plan** out) {
  return make_plan(__func__, nullptr, problem, options, out);
}

tp_status tp_dispatcher_plan(tp_dispatcher* dispatcher, const tp_problem* problem, const tp_plan_options* options,
                             tp_plan** out) {
  if (!dispatcher) {
    if (out) *out = nullptr;
    return guarded(__func__, [&] { null_argument("dispatcher"); });
  }
  return make_plan(__func__, dispatcher->dispatcher.get(), problem, options, out);
}

void tp_plan_destroy(tp_plan* plan) { delete plan; }

tp_status tp_plan_kernel(const tp_plan* plan, const char** out) {
  return guarded(__func__, [&] {
    need(plan, "plan");
    need(out, "out");
    *out = plan->plan->info().kernel.c_str();
  });
}

tp_status tp_plan_workspace_bytes(const tp_plan* plan, size_t* out) {
  return guarded(__func__, [&] {
    need(plan, "plan");
    need(out, "out");
    *out = plan->plan->workspace_bytes();
  });
}

tp_status tp_plan_runnable(const tp_plan* plan, int* out) {
  return guarded(__func__, [&] {
    need(plan, "plan");
    need(out, "out");
    *out = plan->plan->runnable() ? 1 : 0;
  });
}

tp_status tp_plan_alignment(const tp_plan* plan, const char* slot, size_t* out) {
  return guarded(__func__, [&] {
    need(plan, "plan");
    need(slot, "slot");
    need(out, "out");
    *out = plan->plan->alignment(slot);
  });
}

tp_status tp_plan_info_json(const tp_plan* plan, const char** out) {
  return guarded(__func__, [&] {
    need(plan, "plan");
    need(out, "out");
    std::call_once(plan->json_once, [plan] { plan->json = tilepick::to_json(plan->plan->info()).dump(); });
    *out = plan->json.c_str();
  });
}

tp_status tp_plan_run(const tp_plan* plan, const void* a, const void* b, const void* c, void* d, const void* bias,
                      void* workspace, void* stream) {
  return guarded(__func__, [&] {
    need(plan, "plan");
    tilepick::Operands ops;
    ops.a = a, ops.b = b, ops.c = c, ops.d = d, ops.bias = bias, ops.workspace = workspace;
    plan->plan->run(ops, stream);
  });
}

tp_status tp_plan_run_tensors(const tp_plan* plan, const tp_tensor* tensors, size_t count, void* workspace,
                              void* stream) {
  return guarded(__func__, [&] {
    need(plan, "plan");
    if (count > 0) need(tensors, "tensors");
    constexpr size_t kMaxTensors = 16;  // a plan takes at most 6 (a, b, c, d, bias, workspace)
    if (count > kMaxTensors)
      throw tilepick::InvalidArgument("count " + std::to_string(count) + " exceeds the " + std::to_string(kMaxTensors) +
                                      " tensors a plan could take (tp_problem_operand_count gives the number)");
    std::vector<tilepick::TensorArg> args(count);
    for (size_t i = 0; i < count; ++i) {
      const tp_tensor& t = tensors[i];
      const std::string who = "tensors[" + std::to_string(i) + "]";
      if (t.ndim < 0 || t.ndim > 8)
        throw tilepick::InvalidArgument(who + ".ndim " + std::to_string(t.ndim) + " is outside 0..8");
      if (t.ndim > 0 && !t.shape) throw tilepick::InvalidArgument(who + ".shape is NULL with ndim " + std::to_string(t.ndim));
      tilepick::TensorArg& a = args[i];
      a.data = t.data;
      a.dtype = to_dtype(t.dtype, who);
      a.shape.assign(t.shape, t.shape + t.ndim);
      if (t.strides) a.strides.assign(t.strides, t.strides + t.ndim);
      a.device = t.device;
    }
    plan->plan->run(args, workspace, stream);
  });
}

}  // extern "C"
