// Header-only C++ wrapper over the C API (tilepick.h): RAII handles (move-only) and exceptions.
// For programs that link libtilepick_c.so only; inside tilepick use dispatch.hpp directly.
//
//   tp::Problem p("gemm rcr m4096 n4096 k4096 bf16");
//   tp::PlanOptions o;  o.offline_arch = "h200";
//   tp::Plan plan = tp::plan(p, o);          // throws tp::Error (status + message)
//   std::string k = plan.kernel();
#pragma once
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "tilepick/tilepick.h"

namespace tp {

class Error : public std::runtime_error {
 public:
  Error(tp_status status, const std::string& msg) : std::runtime_error(msg), status_(status) {}
  tp_status status() const noexcept { return status_; }
  const char* status_name() const noexcept { return tp_status_name(status_); }

 private:
  tp_status status_;
};

// Throws the thread's last error when `s` is not ok.
inline void check(tp_status s) {
  if (s != tp_status_ok) throw Error(s, tp_last_error());
}

inline std::string version() { return tp_version(); }

namespace detail {

// A move-only owner of a C handle with its destroy function.
template <class T, void (*Destroy)(T*)>
class Handle {
 public:
  Handle() = default;
  explicit Handle(T* h) noexcept : h_(h) {}
  Handle(Handle&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  Handle& operator=(Handle&& o) noexcept {
    if (this != &o) {
      Destroy(h_);
      h_ = std::exchange(o.h_, nullptr);
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { Destroy(h_); }
  T* get() const noexcept { return h_; }
  explicit operator bool() const noexcept { return h_ != nullptr; }

 private:
  T* h_ = nullptr;
};

}  // namespace detail

struct OperandSpec {
  std::string name, slot, dims;
  tp_dtype dtype = tp_dtype_f16;
  std::vector<std::int64_t> shape;
  bool output = false;
};

class Problem {
 public:
  explicit Problem(const std::string& text) {
    tp_problem* p = nullptr;
    check(tp_problem_parse(text.c_str(), &p));
    h_ = Handle(p);
  }
  std::string str() const { return get_string(tp_problem_string); }
  std::string op() const { return get_string(tp_problem_op); }
  std::size_t operand_count() const {
    std::size_t n = 0;
    check(tp_problem_operand_count(h_.get(), &n));
    return n;
  }
  OperandSpec operand(std::size_t i) const {
    tp_operand_spec s{};
    check(tp_problem_operand(h_.get(), i, &s));
    return {s.name, s.slot, s.dims, s.dtype, std::vector<std::int64_t>(s.shape, s.shape + s.ndim), s.output != 0};
  }
  std::vector<OperandSpec> operands() const {
    std::vector<OperandSpec> out;
    for (std::size_t i = 0, n = operand_count(); i < n; ++i) out.push_back(operand(i));
    return out;
  }
  const tp_problem* get() const noexcept { return h_.get(); }

 private:
  using Handle = detail::Handle<tp_problem, tp_problem_destroy>;
  std::string get_string(tp_status (*f)(const tp_problem*, const char**)) const {
    const char* s = nullptr;
    check(f(h_.get(), &s));
    return s;
  }
  Handle h_;
};

// Plan options with owned strings (tp_plan_options points into them for one call).
struct PlanOptions {
  tp_strategy strategy = tp_strategy_auto;
  int k = 4;
  std::string config;
  tp_vendor_mode vendor = tp_vendor_default;
  int device = -1;
  std::string offline_arch;
  double auto_time_us = -1;  // auto's threshold; < 0: TILEPICK_POLICY's, else 100
  std::string policy;        // a policy string instead of the fields above ("": those fields)

  tp_plan_options c() const {
    tp_plan_options o;
    check(tp_plan_options_init(&o));
    o.strategy = strategy, o.k = k, o.vendor = vendor, o.device = device, o.auto_time_us = auto_time_us;
    o.config = config.empty() ? nullptr : config.c_str();
    o.offline_arch = offline_arch.empty() ? nullptr : offline_arch.c_str();
    o.policy = policy.empty() ? nullptr : policy.c_str();
    return o;
  }
};

struct Applicability {
  bool ok = false;
  std::string reason;
  std::size_t tilepick_candidates = 0;
  bool vendor_candidate = false;
};

class Plan {
 public:
  explicit Plan(tp_plan* p) noexcept : h_(p) {}
  std::string kernel() const { return get_string(tp_plan_kernel); }
  std::string info_json() const { return get_string(tp_plan_info_json); }
  std::size_t workspace_bytes() const {
    std::size_t n = 0;
    check(tp_plan_workspace_bytes(h_.get(), &n));
    return n;
  }
  bool runnable() const {
    int r = 0;
    check(tp_plan_runnable(h_.get(), &r));
    return r != 0;
  }
  std::size_t alignment(const std::string& slot) const {
    std::size_t n = 0;
    check(tp_plan_alignment(h_.get(), slot.c_str(), &n));
    return n;
  }
  void run(const void* a, const void* b, const void* c, void* d, const void* bias = nullptr,
           void* workspace = nullptr, void* stream = nullptr) const {
    check(tp_plan_run(h_.get(), a, b, c, d, bias, workspace, stream));
  }
  void run(const std::vector<tp_tensor>& tensors, void* workspace = nullptr, void* stream = nullptr) const {
    check(tp_plan_run_tensors(h_.get(), tensors.data(), tensors.size(), workspace, stream));
  }
  const tp_plan* get() const noexcept { return h_.get(); }

 private:
  std::string get_string(tp_status (*f)(const tp_plan*, const char**)) const {
    const char* s = nullptr;
    check(f(h_.get(), &s));
    return s;
  }
  detail::Handle<tp_plan, tp_plan_destroy> h_;
};

namespace detail {
inline Applicability to_applicability(const tp_applicability& a) {
  return {a.ok != 0, a.reason ? a.reason : "", a.tilepick_candidates, a.vendor_candidate != 0};
}
}  // namespace detail

// With the default dispatcher.
inline Applicability check_problem(const Problem& p, const PlanOptions& o = {}) {
  const tp_plan_options c = o.c();
  tp_applicability a{};
  check(tp_check(p.get(), &c, &a));
  return detail::to_applicability(a);
}

inline Plan plan(const Problem& p, const PlanOptions& o = {}) {
  const tp_plan_options c = o.c();
  tp_plan* out = nullptr;
  check(tp_plan_create(p.get(), &c, &out));
  return Plan(out);
}

// A dispatcher with its own plan cache (file "" = memory only).
class Dispatcher {
 public:
  explicit Dispatcher(const std::string& cache_file = "") {
    tp_dispatcher* d = nullptr;
    check(tp_dispatcher_create(cache_file.c_str(), &d));
    h_ = Handle(d);
  }
  Plan plan(const Problem& p, const PlanOptions& o = {}) {
    const tp_plan_options c = o.c();
    tp_plan* out = nullptr;
    check(tp_dispatcher_plan(h_.get(), p.get(), &c, &out));
    return Plan(out);
  }
  Applicability check_problem(const Problem& p, const PlanOptions& o = {}) const {
    const tp_plan_options c = o.c();
    tp_applicability a{};
    check(tp_dispatcher_check(h_.get(), p.get(), &c, &a));
    return detail::to_applicability(a);
  }
  tp_cache_stats stats() const {
    tp_cache_stats s{};
    check(tp_dispatcher_stats(h_.get(), &s));
    return s;
  }
  void save() { check(tp_dispatcher_save(h_.get())); }
  void clear_memory() { check(tp_dispatcher_clear_memory(h_.get())); }
  tp_dispatcher* get() const noexcept { return h_.get(); }

 private:
  using Handle = detail::Handle<tp_dispatcher, tp_dispatcher_destroy>;
  Handle h_;
};

}  // namespace tp
