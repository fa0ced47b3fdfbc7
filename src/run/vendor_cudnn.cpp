// cuDNN 9 convolution baseline (libcudnn.so.9, dlopen'ed): for a plain convolution first the graph API's
// heuristic first engine as a finalized execution plan (vendor_cudnn_graph.hpp; the set's heuristic choice:
// 9-15 us of host time per run on an H200 host against the legacy path's 41-99 us), then every algorithm the legacy cudnnGetConvolution*Algorithm_v7 reports
// usable (its first is the heuristic choice without the graph entry) and cudnnFindConvolution*AlgorithmEx's
// fastest. Fwd epilogues (bias, relu) go through the legacy cudnnConvolutionBiasActivationForward only.
// cudnn.h gives types and enums only.
#include "run/vendor_internal.hpp"

#if !defined(TILEPICK_HAVE_CUDNN_H)

namespace tilepick::run::vendor::detail {
std::string check_cudnn(void*, std::string*) { return "cuDNN support was compiled out"; }
std::unique_ptr<VendorSet> create_cudnn(const ConvProblem&, std::string* why_not, bool) {
  *why_not = "cuDNN support was compiled out (cudnn.h not found at build time)";
  return nullptr;
}
}  // namespace tilepick::run::vendor::detail

#else

#include <cudnn.h>

#include <algorithm>
#include <map>
#include <mutex>

#include "core/cuda_driver.hpp"
#include "run/vendor_cudnn_api.hpp"
#include "run/vendor_cudnn_graph.hpp"
#include "tilepick/env.hpp"
#include "tilepick/error.hpp"
#include "tilepick/jit.hpp"

namespace tilepick::run::vendor::detail {
namespace {

constexpr int kMaxAlgos = 16;
constexpr std::size_t kMaxWorkspace = std::size_t(1) << 30;  // algorithms needing more are left out

CudnnApi api;  // filled once by check_cudnn (under library()'s call_once)

void check(cudnnStatus_t s, const char* call, const std::string& subject) {
  if (s != CUDNN_STATUS_SUCCESS)
    throw Error(Status::cuda_error, std::string(call) + " failed for " + subject + ": " + api.status_text(s));
}

// One handle per device (a cuDNN handle is bound to the device current when it is made), made on
// first use and kept for the process. Handles hold the stream of their last call, so every call that
// sets a stream and launches holds handle_mutex() from the one to the other.
cudnnHandle_t handle() {
  static std::mutex mutex;
  static std::map<int, cudnnHandle_t> handles;
  const int device = cuda::current_device();
  std::lock_guard lock(mutex);
  cudnnHandle_t& h = handles[device];
  if (!h) check(api.create(&h), "cudnnCreate", "the handle of device " + std::to_string(device));
  return h;
}

std::mutex& handle_mutex() {
  static std::mutex m;
  return m;
}

cudnnDataType_t data_type(DType t) {
  switch (t) {
    case DType::f16: return CUDNN_DATA_HALF;
    case DType::bf16: return CUDNN_DATA_BFLOAT16;
    default: return CUDNN_DATA_FLOAT;
  }
}

const char* math_name(cudnnMathType_t m) {
  switch (m) {
    case CUDNN_DEFAULT_MATH: return "default";
    case CUDNN_TENSOR_OP_MATH: return "tensor_op";
    case CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION: return "tensor_op_allow_conversion";
    case CUDNN_FMA_MATH: return "fma";
  }
  return "?";
}

std::string algo_name(ConvDir dir, int algo) {
  static const char* fwd[] = {"implicit_gemm", "implicit_precomp_gemm", "gemm", "direct",
                              "fft", "fft_tiling", "winograd", "winograd_nonfused"};
  static const char* bwd_data[] = {"algo0", "algo1", "fft", "fft_tiling", "winograd", "winograd_nonfused"};
  static const char* bwd_filter[] = {"algo0", "algo1", "fft", "algo3", "winograd", "winograd_nonfused", "fft_tiling"};
  auto pick = [&](const char* const* names, int n) { return algo >= 0 && algo < n ? std::string(names[algo]) : "algo" + std::to_string(algo); };
  switch (dir) {
    case ConvDir::fwd: return pick(fwd, 8);
    case ConvDir::bwd_data: return pick(bwd_data, 6);
    case ConvDir::bwd_weight: return pick(bwd_filter, 7);
  }
  return "?";
}

constexpr int kGraphAlgo = -1;  // an Entry run through the graph API's execution plan

struct Entry {
  int algo;  // cudnnConvolution*Algo_t, or kGraphAlgo
  cudnnMathType_t math;
};

class CudnnSet final : public VendorSet {
 public:
  CudnnSet(const ConvProblem& p, bool find) : p_(p), map_(map_conv(p)), what_(to_string(p)), find_search_(find) {
    const cudnnDataType_t t = data_type(p.x);
    const int nd = 2 + map_.spatial;
    check(api.create_tensor(&x_), "cudnnCreateTensorDescriptor", what_);
    check(api.set_tensor(x_, t, nd, map_.x.dims.data(), map_.x.strides.data()), "cudnnSetTensorNdDescriptor(x)", what_);
    check(api.create_tensor(&y_), "cudnnCreateTensorDescriptor", what_);
    check(api.set_tensor(y_, t, nd, map_.y.dims.data(), map_.y.strides.data()), "cudnnSetTensorNdDescriptor(y)", what_);
    check(api.create_filter(&w_), "cudnnCreateFilterDescriptor", what_);
    check(api.set_filter(w_, t, CUDNN_TENSOR_NHWC, nd, map_.w_dims.data()), "cudnnSetFilterNdDescriptor(w)", what_);
    check(api.create_conv(&conv_), "cudnnCreateConvolutionDescriptor", what_);
    check(api.set_conv(conv_, map_.spatial, map_.pad.data(), map_.stride.data(), map_.dilation.data(),
                       CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
          "cudnnSetConvolutionNdDescriptor", what_);
    check(api.set_group_count(conv_, map_.groups), "cudnnSetConvolutionGroupCount", what_);
    check(api.set_math(conv_, CUDNN_TENSOR_OP_MATH), "cudnnSetConvolutionMathType", what_);
    fused_ = p.dir == ConvDir::fwd && !p.epilogue.is_none();
    if (fused_) {
      check(api.create_tensor(&bias_), "cudnnCreateTensorDescriptor", what_);
      check(api.set_tensor(bias_, t, nd, map_.bias.dims.data(), map_.bias.strides.data()),
            "cudnnSetTensorNdDescriptor(bias)", what_);
      check(api.create_activation(&act_), "cudnnCreateActivationDescriptor", what_);
      const bool relu = p.epilogue.act == Activation::relu;
      check(api.set_activation(act_, relu ? CUDNN_ACTIVATION_RELU : CUDNN_ACTIVATION_IDENTITY, CUDNN_NOT_PROPAGATE_NAN, 0.0),
            "cudnnSetActivationDescriptor", what_);
    }
    enumerate();
  }

  ~CudnnSet() override {
    for (auto d : {x_, y_, bias_})
      if (d) api.destroy_tensor(d);
    if (w_) api.destroy_filter(w_);
    if (conv_) api.destroy_conv(conv_);
    if (act_) api.destroy_activation(act_);
  }

  const char* library_name() const override { return "cuDNN"; }
  std::string empty_reason() const { return "cuDNN has no algorithm for " + what_ + empty_why_; }

  void run(int i, const Operands& ops, void* workspace, void* stream) override {
    const Entry& e = entries_.at(static_cast<std::size_t>(i));
    const std::string& name = algos_[static_cast<std::size_t>(i)].name;
    std::lock_guard lock(handle_mutex());
    cudnnHandle_t h = h_;
    // Set on every call (a few us): a stream the handle kept may be gone, e.g. a graph-capture stream.
    if (auto s = api.set_stream(h, reinterpret_cast<cudaStream_t>(stream)); s != CUDNN_STATUS_SUCCESS)
      check(s, "cudnnSetStream", name + " on " + what_);
    if (e.algo == kGraphAlgo) {  // the dispatch path: no strings built unless it fails
      graph_->run(h, ops, workspace, name, what_);
      return;
    }
    const std::string subject = name + " on " + what_;
    check(api.set_math(conv_, e.math), "cudnnSetConvolutionMathType", subject);
    const float one = 1.0f, zero = 0.0f;
    const std::size_t ws = algos_[i].workspace_bytes;
    switch (p_.dir) {
      case ConvDir::fwd:
        if (fused_) {
          const void* bias = p_.epilogue.bias ? ops.bias : zeros_.get();
          check(api.conv_bias_act_fwd(h, &one, x_, ops.a, w_, ops.b, conv_, static_cast<cudnnConvolutionFwdAlgo_t>(e.algo),
                                      workspace, ws, &zero, y_, zeros_.get(), bias_, bias, act_, y_, ops.d),
                "cudnnConvolutionBiasActivationForward", subject);
        } else {
          check(api.conv_fwd(h, &one, x_, ops.a, w_, ops.b, conv_, static_cast<cudnnConvolutionFwdAlgo_t>(e.algo),
                             workspace, ws, &zero, y_, ops.d),
                "cudnnConvolutionForward", subject);
        }
        break;
      case ConvDir::bwd_data:
        check(api.conv_bwd_data(h, &one, w_, ops.b, y_, ops.a, conv_, static_cast<cudnnConvolutionBwdDataAlgo_t>(e.algo),
                                workspace, ws, &zero, x_, ops.d),
              "cudnnConvolutionBackwardData", subject);
        break;
      case ConvDir::bwd_weight:
        check(api.conv_bwd_filter(h, &one, x_, ops.a, y_, ops.b, conv_,
                                  static_cast<cudnnConvolutionBwdFilterAlgo_t>(e.algo), workspace, ws, &zero, w_, ops.d),
              "cudnnConvolutionBackwardFilter", subject);
        break;
    }
  }

 private:
  // The graph API's heuristic first choice (unless off), then the legacy algorithms.
  void enumerate() {
    std::lock_guard lock(handle_mutex());
    cudnnHandle_t h = h_;
    check(api.set_stream(h, nullptr), "cudnnSetStream", what_);  // Find* runs on the default stream
    enumerate_legacy(h);
    std::string why;
    graph_ = CudnnGraph::create(api, h, p_, map_, kMaxWorkspace, &why);
    if (!graph_) {
      empty_why_ += "; " + why;
      return;
    }
    // The graph API's heuristic first choice leads and is the set's heuristic choice.
    algos_.insert(algos_.begin(), {"cudnn:" + std::string(to_string(p_.dir)) + ":graph_" + graph_->engine(),
                                   graph_->detail(), graph_->workspace_bytes()});
    entries_.insert(entries_.begin(), Entry{kGraphAlgo, CUDNN_TENSOR_OP_MATH});
    heuristic_ = 0;
    if (find_ >= 0) ++find_;
  }

  // The v7 heuristic's usable entries (in its order), then Find*Ex on scratch buffers.
  void enumerate_legacy(cudnnHandle_t h) {
    int n = 0;
    std::vector<Entry> found;
    switch (p_.dir) {
      case ConvDir::fwd: {
        cudnnConvolutionFwdAlgoPerf_t perf[kMaxAlgos];
        check(api.fwd_v7(h, x_, w_, conv_, y_, kMaxAlgos, &n, perf), "cudnnGetConvolutionForwardAlgorithm_v7", what_);
        collect(perf, n, [&](int algo, std::size_t* ws) {
          return api.fwd_ws(h, x_, w_, conv_, y_, static_cast<cudnnConvolutionFwdAlgo_t>(algo), ws);
        });
        if (fused_) keep_fusable();
        if (algos_.empty()) return;
        search<cudnnConvolutionFwdAlgoPerf_t>(
            "cudnnFindConvolutionForwardAlgorithmEx", [&](Scratch& s, auto* found, int* m) {
              return api.fwd_find(h, x_, s.a.get(), w_, s.b.get(), conv_, y_, s.d.get(), kMaxAlgos, m, found,
                                  s.ws.get(), s.ws.size());
            });
        if (fused_) {
          zeros_ = cuda::DeviceBuffer(std::max<std::size_t>(p_.y_elems(), p_.k) * size_bytes(p_.y));
          zeros_.fill_bytes(0);
        }
        break;
      }
      case ConvDir::bwd_data: {
        cudnnConvolutionBwdDataAlgoPerf_t perf[kMaxAlgos];
        check(api.bwd_data_v7(h, w_, y_, conv_, x_, kMaxAlgos, &n, perf), "cudnnGetConvolutionBackwardDataAlgorithm_v7", what_);
        collect(perf, n, [&](int algo, std::size_t* ws) {
          return api.bwd_data_ws(h, w_, y_, conv_, x_, static_cast<cudnnConvolutionBwdDataAlgo_t>(algo), ws);
        });
        if (algos_.empty()) return;
        search<cudnnConvolutionBwdDataAlgoPerf_t>(
            "cudnnFindConvolutionBackwardDataAlgorithmEx", [&](Scratch& s, auto* found, int* m) {
              return api.bwd_data_find(h, w_, s.b.get(), y_, s.a.get(), conv_, x_, s.d.get(), kMaxAlgos, m, found,
                                       s.ws.get(), s.ws.size());
            });
        break;
      }
      case ConvDir::bwd_weight: {
        cudnnConvolutionBwdFilterAlgoPerf_t perf[kMaxAlgos];
        check(api.bwd_filter_v7(h, x_, y_, conv_, w_, kMaxAlgos, &n, perf),
              "cudnnGetConvolutionBackwardFilterAlgorithm_v7", what_);
        collect(perf, n, [&](int algo, std::size_t* ws) {
          return api.bwd_filter_ws(h, x_, y_, conv_, w_, static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo), ws);
        });
        if (algos_.empty()) return;
        search<cudnnConvolutionBwdFilterAlgoPerf_t>(
            "cudnnFindConvolutionBackwardFilterAlgorithmEx", [&](Scratch& s, auto* found, int* m) {
              return api.bwd_filter_find(h, x_, s.a.get(), y_, s.b.get(), conv_, w_, s.d.get(), kMaxAlgos, m, found,
                                         s.ws.get(), s.ws.size());
            });
        break;
      }
    }
    check(api.set_math(conv_, CUDNN_TENSOR_OP_MATH), "cudnnSetConvolutionMathType", what_);
  }

  // Zero-filled device buffers of the problem's operand sizes and a workspace, for Find*Ex.
  struct Scratch {
    cuda::DeviceBuffer a, b, d, ws;
    Scratch(const ConvProblem& p, std::size_t ws_bytes) {
      const std::size_t e = size_bytes(p.x);
      std::size_t na = p.dir == ConvDir::bwd_data ? p.y_elems() : p.x_elems();
      std::size_t nb = p.dir == ConvDir::bwd_weight ? p.y_elems() : p.w_elems();
      std::size_t nd = p.dir == ConvDir::fwd ? p.y_elems() : p.dir == ConvDir::bwd_data ? p.x_elems() : p.w_elems();
      a = cuda::DeviceBuffer(na * e), b = cuda::DeviceBuffer(nb * e), d = cuda::DeviceBuffer(nd * e);
      a.fill_bytes(0), b.fill_bytes(0);
      if (ws_bytes) ws = cuda::DeviceBuffer(ws_bytes);
    }
  };

  // cudnnFind*Ex (`find` calls it on scratch operands) to note its pick, unless the set skips the search.
  template <class Perf, class Find>
  void search(const char* name, Find find) {
    if (!find_search_) return;
    Scratch s(p_, max_workspace_bytes());
    Perf found[kMaxAlgos];
    int n = 0;
    check(find(s, found, &n), name, what_);
    set_find(found, n);
  }

  template <class Perf, class WsFn>
  void collect(const Perf* perf, int n, WsFn ws_of) {
    for (int i = 0; i < n; ++i) {
      if (perf[i].status != CUDNN_STATUS_SUCCESS) continue;
      const Entry e{static_cast<int>(perf[i].algo), perf[i].mathType};
      if (index_of(e, true) >= 0) continue;
      // The workspace for this math type, as the run will set it.
      std::size_t ws = perf[i].memory;
      check(api.set_math(conv_, e.math), "cudnnSetConvolutionMathType", what_);
      std::size_t asked = 0;
      if (ws_of(e.algo, &asked) == CUDNN_STATUS_SUCCESS) ws = std::max(ws, asked);
      if (ws > kMaxWorkspace) {
        empty_why_ += "; " + algo_name(p_.dir, e.algo) + " needs " + std::to_string(ws >> 20) + " MiB of workspace";
        continue;
      }
      std::string name = "cudnn:" + std::string(to_string(p_.dir)) + ":" + algo_name(p_.dir, e.algo);
      if (e.math != CUDNN_TENSOR_OP_MATH) name += std::string(":") + math_name(e.math);
      algos_.push_back({name, "algo=" + std::to_string(e.algo) + " math=" + math_name(e.math) + " v7_rank=" + std::to_string(i), ws});
      entries_.push_back(e);
    }
    if (n == 0 || entries_.empty()) empty_why_ += " (no usable entry from cudnnGet*Algorithm_v7)";
    heuristic_ = 0;
    check(api.set_math(conv_, CUDNN_TENSOR_OP_MATH), "cudnnSetConvolutionMathType", what_);  // for Find*Ex
  }

  // cudnnConvolutionBiasActivationForward runs identity activation with IMPLICIT_PRECOMP_GEMM only.
  void keep_fusable() {
    if (p_.epilogue.act == Activation::relu) return;
    for (std::size_t i = entries_.size(); i-- > 0;)
      if (entries_[i].algo != CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM) {
        entries_.erase(entries_.begin() + static_cast<long>(i));
        algos_.erase(algos_.begin() + static_cast<long>(i));
      }
    if (algos_.empty()) empty_why_ += "; bias without relu (identity activation) needs IMPLICIT_PRECOMP_GEMM, not offered";
  }

  template <class Perf>
  void set_find(const Perf* perf, int n) {
    for (int i = 0; i < n; ++i)
      if (perf[i].status == CUDNN_STATUS_SUCCESS) {
        const Entry e{static_cast<int>(perf[i].algo), perf[i].mathType};
        find_ = index_of(e, true);
        if (find_ < 0) find_ = index_of(e, false);
        if (find_ >= 0) algos_[find_].detail += " find_ms=" + std::to_string(perf[i].time);
        return;
      }
  }

  int index_of(const Entry& e, bool match_math) const {
    for (std::size_t i = 0; i < entries_.size(); ++i)
      if (entries_[i].algo == e.algo && (!match_math || entries_[i].math == e.math)) return static_cast<int>(i);
    return -1;
  }

  ConvProblem p_;
  CudnnConv map_;
  std::string what_, empty_why_;
  bool fused_ = false;
  bool find_search_ = true;  // run cudnnFind*Ex to note its pick (VendorSet::create's cudnn_find)
  cudnnTensorDescriptor_t x_ = nullptr, y_ = nullptr, bias_ = nullptr;
  cudnnFilterDescriptor_t w_ = nullptr;
  cudnnConvolutionDescriptor_t conv_ = nullptr;
  cudnnActivationDescriptor_t act_ = nullptr;
  cudnnHandle_t h_ = handle();
  std::vector<Entry> entries_;
  std::unique_ptr<CudnnGraph> graph_;  // entries_ with algo kGraphAlgo run it
  cuda::DeviceBuffer zeros_;  // z (scaled by 0) and the bias of a bias-less relu
};

}  // namespace

std::string check_cudnn(void* h, std::string* version) {
  if (std::string missing = api.resolve_all(h); !missing.empty()) return "no symbol " + missing;
  const std::size_t v = api.get_version();
  // cuDNN 9 encodes major*10000 + minor*100 + patch.
  *version = std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
  if (v < 90000 || v >= 100000) return "cuDNN " + *version + " is not cuDNN 9";
  return "";
}

std::unique_ptr<VendorSet> create_cudnn(const ConvProblem& p, std::string* why_not, bool find) {
  const auto& lib = library(Lib::cudnn);
  if (!lib.loaded) {
    *why_not = lib.error;
    return nullptr;
  }
  cuda::detail::ensure_context("cuDNN");
  auto set = std::make_unique<CudnnSet>(p, find);
  if (set->algos().empty()) {
    *why_not = set->empty_reason();
    return nullptr;
  }
  return set;
}

}  // namespace tilepick::run::vendor::detail

#endif
