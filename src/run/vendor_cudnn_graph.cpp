// cuDNN backend-API execution plans for one convolution (see vendor_cudnn_graph.hpp).
#include "run/vendor_internal.hpp"

#if defined(TILEPICK_HAVE_CUDNN_H)

#include "run/vendor_cudnn_graph.hpp"

#include <algorithm>
#include <cstdint>

#include "run/vendor_cudnn_api.hpp"
#include "tilepick/error.hpp"

namespace tilepick::run::vendor::detail {
namespace {

// Tensor unique ids in the graph and the variant pack.
constexpr std::int64_t kX = 'x', kW = 'w', kY = 'y', kBias = 'b';
constexpr std::int64_t kConvOut = 'c', kAddOut = 'a';  // virtual (in-kernel) tensors of a fused epilogue

// Builds descriptors and keeps them for destruction; a failed call is reported as (call, status).
struct Builder {
  const CudnnApi& api;
  std::vector<cudnnBackendDescriptor_t>& keep;
  std::string failed;  // the first failing call, "" while all succeed

  bool ok(cudnnStatus_t s, const char* call) {
    if (s != CUDNN_STATUS_SUCCESS && failed.empty()) failed = std::string(call) + ": " + api.status_text(s);
    return failed.empty();
  }
  cudnnBackendDescriptor_t make(cudnnBackendDescriptorType_t t) {
    cudnnBackendDescriptor_t d = nullptr;
    if (!ok(api.be_create(t, &d), "cudnnBackendCreateDescriptor")) return nullptr;
    keep.push_back(d);
    return d;
  }
  template <class T>
  void set(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t a, cudnnBackendAttributeType_t t, const T* v,
           std::int64_t n = 1) {
    if (failed.empty()) ok(api.be_set(d, a, t, n, v), "cudnnBackendSetAttribute");
  }
  void finalize(cudnnBackendDescriptor_t d, const char* what) {
    if (failed.empty()) ok(api.be_finalize(d), what);
  }
  // Channels-last tensor: dims in N C [D] H W order (as map_conv gives them), C innermost in memory.
  cudnnBackendDescriptor_t tensor(std::int64_t uid, const std::vector<int>& dims_in, cudnnDataType_t type,
                                  bool is_virtual = false) {
    const std::size_t n = dims_in.size();
    const std::vector<std::int64_t> dims(dims_in.begin(), dims_in.end()), strides = channels_last_strides(dims_in);
    const std::int64_t align = 16;  // dispatch's vendor_alignment for conv operands
    auto d = make(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    set(d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, &type);
    set(d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, dims.data(), static_cast<std::int64_t>(n));
    set(d, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, strides.data(), static_cast<std::int64_t>(n));
    set(d, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, &uid);
    set(d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, &align);
    if (is_virtual) set(d, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, &is_virtual);
    finalize(d, "cudnnBackendFinalize(tensor)");
    return d;
  }
  // y = mode(x) or y = mode(x, b), in fp32.
  cudnnBackendDescriptor_t pointwise(cudnnPointwiseMode_t mode, cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t b,
                                     cudnnBackendDescriptor_t y) {
    const auto D = CUDNN_TYPE_BACKEND_DESCRIPTOR;
    const cudnnDataType_t prec = CUDNN_DATA_FLOAT;
    auto pw = make(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
    set(pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, &mode);
    set(pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, &prec);
    finalize(pw, "cudnnBackendFinalize(pointwise)");
    auto op = make(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
    set(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, D, &pw);
    set(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, D, &x);
    if (b) set(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, D, &b);
    set(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, D, &y);
    finalize(op, "cudnnBackendFinalize(pointwise operation)");
    return op;
  }
};

cudnnDataType_t cudnn_type(DType t) {
  return t == DType::f16 ? CUDNN_DATA_HALF : t == DType::bf16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT;
}

// "eng12" and "knobs=3:1,5:0" of an engine config.
void describe(Builder& b, cudnnBackendDescriptor_t cfg, std::string* engine, std::string* knobs) {
  auto eng = b.make(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
  std::int64_t n = 0, index = -1;
  b.ok(b.api.be_get(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &eng), "engine of config");
  b.ok(b.api.be_get(eng, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n, &index), "engine global index");
  *engine = "eng" + std::to_string(index);
  std::vector<cudnnBackendDescriptor_t> choices(CUDNN_KNOB_TYPE_COUNTS);
  for (auto& c : choices) c = b.make(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR);
  std::int64_t count = 0;
  if (!b.ok(b.api.be_get(cfg, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                         static_cast<std::int64_t>(choices.size()), &count, choices.data()),
            "knob choices"))
    return;
  *knobs = "knobs=";
  for (std::int64_t i = 0; i < count; ++i) {
    cudnnBackendKnobType_t type{};
    std::int64_t value = 0;
    b.api.be_get(choices[static_cast<std::size_t>(i)], CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE, CUDNN_TYPE_KNOB_TYPE, 1, &n, &type);
    b.api.be_get(choices[static_cast<std::size_t>(i)], CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE, CUDNN_TYPE_INT64, 1, &n, &value);
    *knobs += (i ? "," : "") + std::to_string(static_cast<int>(type)) + ":" + std::to_string(value);
  }
}

}  // namespace

std::unique_ptr<CudnnGraph> CudnnGraph::create(const CudnnApi& api, cudnnHandle_t h, const ConvProblem& p,
                                               const CudnnConv& map, std::size_t max_workspace, std::string* why) {
  std::unique_ptr<CudnnGraph> g(new CudnnGraph(api, p.dir));
  Builder b{api, g->keep_, ""};
  const cudnnDataType_t t = cudnn_type(p.x);
  auto x = b.tensor(kX, map.x.dims, t), y = b.tensor(kY, map.y.dims, t), w = b.tensor(kW, map.w_dims, t);
  // A fwd epilogue (bias, relu) runs as pointwise operations on the convolution's fp32 result, in the same kernel.
  const bool bias = p.dir == ConvDir::fwd && p.epilogue.bias;
  const bool relu = p.dir == ConvDir::fwd && p.epilogue.act == Activation::relu;
  g->bias_ = bias;
  auto conv_out = bias || relu ? b.tensor(kConvOut, map.y.dims, CUDNN_DATA_FLOAT, true) : y;

  auto conv = b.make(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  const cudnnDataType_t comp = CUDNN_DATA_FLOAT;
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  const std::int64_t nd = map.spatial;
  std::vector<std::int64_t> dil(map.dilation.begin(), map.dilation.end()), stride(map.stride.begin(), map.stride.end()),
      pad(map.pad.begin(), map.pad.end());
  b.set(conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, &comp);
  b.set(conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, &mode);
  b.set(conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, &nd);
  b.set(conv, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, dil.data(), nd);
  b.set(conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, stride.data(), nd);
  b.set(conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, pad.data(), nd);
  b.set(conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, pad.data(), nd);
  b.finalize(conv, "cudnnBackendFinalize(convolution)");

  // The operation's attributes per direction: its x, w and y tensors (dx / dw / dy where they are the
  // gradients), the convolution, alpha and beta.
  struct OpAttrs {
    cudnnBackendDescriptorType_t type;
    cudnnBackendAttributeName_t x, w, y, conv, alpha, beta;
  };
  static const OpAttrs fwd{CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
                           CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
                           CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
                           CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA};
  static const OpAttrs bwd_data{
      CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA};
  static const OpAttrs bwd_filter{
      CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
      CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA};
  const OpAttrs& at = p.dir == ConvDir::fwd ? fwd : p.dir == ConvDir::bwd_data ? bwd_data : bwd_filter;
  const float alpha = 1.0f, beta = 0.0f;
  const auto D = CUDNN_TYPE_BACKEND_DESCRIPTOR;
  auto op = b.make(at.type);
  b.set(op, at.x, D, &x);
  b.set(op, at.w, D, &w);
  b.set(op, at.y, D, p.dir == ConvDir::fwd ? &conv_out : &y);
  b.set(op, at.conv, D, &conv);
  b.set(op, at.alpha, CUDNN_TYPE_FLOAT, &alpha);
  b.set(op, at.beta, CUDNN_TYPE_FLOAT, &beta);
  b.finalize(op, "cudnnBackendFinalize(operation)");
  std::vector<cudnnBackendDescriptor_t> ops{op};
  if (bias) {
    auto bias_t = b.tensor(kBias, map.bias.dims, t);
    auto sum = relu ? b.tensor(kAddOut, map.y.dims, CUDNN_DATA_FLOAT, true) : y;
    ops.push_back(b.pointwise(CUDNN_POINTWISE_ADD, conv_out, bias_t, sum));
    if (relu) ops.push_back(b.pointwise(CUDNN_POINTWISE_RELU_FWD, sum, nullptr, y));
  } else if (relu) {
    ops.push_back(b.pointwise(CUDNN_POINTWISE_RELU_FWD, conv_out, nullptr, y));
  }
  auto graph = b.make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  b.set(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, D, ops.data(), static_cast<std::int64_t>(ops.size()));
  b.set(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, &h);
  b.finalize(graph, "cudnnBackendFinalize(operation graph)");
  auto heur = b.make(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  const cudnnBackendHeurMode_t heur_mode = CUDNN_HEUR_MODE_A;
  b.set(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, D, &graph);
  b.set(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, &heur_mode);
  b.finalize(heur, "cudnnBackendFinalize(engine heuristics)");
  std::int64_t count = 0;
  if (b.failed.empty()) b.ok(api.be_get(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, D, 0, &count, nullptr), "heuristic count");
  std::vector<cudnnBackendDescriptor_t> cfgs(static_cast<std::size_t>(std::max<std::int64_t>(count, 0)));
  for (auto& c : cfgs) c = b.make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
  if (count > 0) b.ok(api.be_get(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, D, count, &count, cfgs.data()), "heuristic results");
  if (!b.failed.empty()) {
    *why = "cuDNN graph API: " + b.failed;
    return nullptr;
  }
  std::string skipped;
  for (std::int64_t i = 0; i < count; ++i) {
    cudnnBackendDescriptor_t plan = nullptr;
    if (api.be_create(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan) != CUDNN_STATUS_SUCCESS) break;
    std::int64_t n = 0, ws = 0;
    const bool ok = api.be_set(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &h) == CUDNN_STATUS_SUCCESS &&
                    api.be_set(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, D, 1, &cfgs[static_cast<std::size_t>(i)]) ==
                        CUDNN_STATUS_SUCCESS &&
                    api.be_finalize(plan) == CUDNN_STATUS_SUCCESS &&
                    api.be_get(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n, &ws) ==
                        CUDNN_STATUS_SUCCESS;
    if (!ok || ws < 0 || static_cast<std::size_t>(ws) > max_workspace) {
      skipped += ok ? " (workspace " + std::to_string(ws >> 20) + " MiB)" : " (did not finalize)";
      api.be_destroy(plan);
      continue;
    }
    g->plan_ = plan;
    g->workspace_ = static_cast<std::size_t>(ws);
    std::string knobs;
    describe(b, cfgs[static_cast<std::size_t>(i)], &g->engine_, &knobs);
    g->detail_ = "graph " + g->engine_ + " " + knobs + " heur_a_rank=" + std::to_string(i);
    return g;
  }
  *why = "cuDNN graph API: none of " + std::to_string(count) + " heuristic engine configs usable" + skipped;
  return nullptr;
}

CudnnGraph::~CudnnGraph() {
  if (plan_) api_.be_destroy(plan_);
  for (auto it = keep_.rbegin(); it != keep_.rend(); ++it)
    if (*it) api_.be_destroy(*it);
}

void CudnnGraph::run(cudnnHandle_t h, const Operands& ops, void* workspace, const std::string& name,
                     const std::string& what) const {
  // Operands by direction (kernel_plan.hpp): fwd x, w -> y; bwd_data dy, w -> dx; bwd_weight x, dy -> dw.
  void* x = const_cast<void*>(dir_ == ConvDir::bwd_data ? static_cast<const void*>(ops.d) : ops.a);
  void* w = const_cast<void*>(dir_ == ConvDir::bwd_weight ? static_cast<const void*>(ops.d) : ops.b);
  void* y = const_cast<void*>(dir_ == ConvDir::fwd ? static_cast<const void*>(ops.d)
                                                   : dir_ == ConvDir::bwd_data ? ops.a : ops.b);
  const std::int64_t uids[4] = {kX, kW, kY, kBias};
  void* ptrs[4] = {x, w, y, const_cast<void*>(ops.bias)};
  const std::int64_t n = bias_ ? 4 : 3;
  cudnnBackendDescriptor_t pack = nullptr;
  auto fail = [&](cudnnStatus_t s, const char* call) {
    if (pack) api_.be_destroy(pack);
    throw Error(Status::cuda_error, std::string(call) + " failed for " + name + " on " + what + ": " + api_.status_text(s));
  };
  if (auto s = api_.be_create(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &pack); s != CUDNN_STATUS_SUCCESS)
    fail(s, "cudnnBackendCreateDescriptor(variant pack)");
  if (auto s = api_.be_set(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n, uids); s != CUDNN_STATUS_SUCCESS)
    fail(s, "cudnnBackendSetAttribute(variant pack ids)");
  if (auto s = api_.be_set(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, n, ptrs); s != CUDNN_STATUS_SUCCESS)
    fail(s, "cudnnBackendSetAttribute(variant pack pointers)");
  if (auto s = api_.be_set(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace);
      s != CUDNN_STATUS_SUCCESS)
    fail(s, "cudnnBackendSetAttribute(variant pack workspace)");
  if (auto s = api_.be_finalize(pack); s != CUDNN_STATUS_SUCCESS) fail(s, "cudnnBackendFinalize(variant pack)");
  if (auto s = api_.be_execute(h, plan_, pack); s != CUDNN_STATUS_SUCCESS) fail(s, "cudnnBackendExecute");
  api_.be_destroy(pack);
}

}  // namespace tilepick::run::vendor::detail

#endif
