// Host time per cuDNN convolution call (GPU machine; a probe, not part of the build): the legacy API as
// tilepick's vendor set calls it (stream and math type set on every call, stream reset after) and with
// those settings made once, against the backend API with a finalized execution plan and a new variant
// pack per call. bf16 NHWC forward convolutions of ResNet-50 sizes, heuristic first choice, 200 async
// calls each (fewer than the launch queue holds), then one sync; output: one line per (shape, variant) with us per call.
//   g++ -O2 -std=c++20 -I<cudnn include> experiments/2026-11-25-host-cost/cudnn_host_cost.cpp -L<cudnn lib> -lcudnn -lcudart -o probe
#include <cuda_runtime.h>
#include <cudnn.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#define CK(x) do { auto s_ = (x); if (s_ != CUDNN_STATUS_SUCCESS) { std::printf("%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudnnGetErrorString(s_)); std::exit(1); } } while (0)
#define CU(x) do { auto e_ = (x); if (e_ != cudaSuccess) { std::printf("%s: %s\n", #x, cudaGetErrorString(e_)); std::exit(1); } } while (0)

struct Shape { int n, c, h, w, k, r, s, stride, pad; };

double us_per_call(const std::function<void()>& f, cudaStream_t st, int calls = 200) {  // well under the launch queue's depth: host time, not GPU time
  for (int i = 0; i < 50; ++i) f();
  CU(cudaStreamSynchronize(st));
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) f();
  auto t1 = std::chrono::steady_clock::now();
  CU(cudaStreamSynchronize(st));
  return std::chrono::duration<double, std::micro>(t1 - t0).count() / calls;
}

cudnnBackendDescriptor_t make(cudnnBackendDescriptorType_t t) {
  cudnnBackendDescriptor_t d;
  CK(cudnnBackendCreateDescriptor(t, &d));
  return d;
}

cudnnBackendDescriptor_t tensor(int64_t uid, std::vector<int64_t> dims, std::vector<int64_t> strides) {
  auto d = make(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  cudnnDataType_t t = CUDNN_DATA_BFLOAT16;
  int64_t align = 16;
  CK(cudnnBackendSetAttribute(d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &t));
  CK(cudnnBackendSetAttribute(d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims.data()));
  CK(cudnnBackendSetAttribute(d, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides.data()));
  CK(cudnnBackendSetAttribute(d, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid));
  CK(cudnnBackendSetAttribute(d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align));
  CK(cudnnBackendFinalize(d));
  return d;
}

int main() {
  const std::vector<Shape> shapes = {{32, 64, 56, 56, 64, 3, 3, 1, 1}, {32, 256, 56, 56, 64, 1, 1, 1, 0},
                                     {32, 512, 28, 28, 128, 1, 1, 1, 0}, {32, 256, 14, 14, 256, 3, 3, 1, 1}};
  cudnnHandle_t h;
  CK(cudnnCreate(&h));
  cudaStream_t st;
  CU(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  std::printf("cudnn %zu\n", cudnnGetVersion());
  for (const Shape& p : shapes) {
    const int P = (p.h + 2 * p.pad - p.r) / p.stride + 1, Q = (p.w + 2 * p.pad - p.s) / p.stride + 1;
    void *x, *w, *y, *ws;
    CU(cudaMalloc(&x, size_t(p.n) * p.c * p.h * p.w * 2));
    CU(cudaMalloc(&w, size_t(p.k) * p.c * p.r * p.s * 2));
    CU(cudaMalloc(&y, size_t(p.n) * p.k * P * Q * 2));
    const size_t ws_bytes = size_t(256) << 20;
    CU(cudaMalloc(&ws, ws_bytes));
    // Legacy descriptors.
    cudnnTensorDescriptor_t xd, yd;
    cudnnFilterDescriptor_t wd;
    cudnnConvolutionDescriptor_t cd;
    CK(cudnnCreateTensorDescriptor(&xd)); CK(cudnnCreateTensorDescriptor(&yd));
    CK(cudnnCreateFilterDescriptor(&wd)); CK(cudnnCreateConvolutionDescriptor(&cd));
    CK(cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NHWC, CUDNN_DATA_BFLOAT16, p.n, p.c, p.h, p.w));
    CK(cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NHWC, CUDNN_DATA_BFLOAT16, p.n, p.k, P, Q));
    CK(cudnnSetFilter4dDescriptor(wd, CUDNN_DATA_BFLOAT16, CUDNN_TENSOR_NHWC, p.k, p.c, p.r, p.s));
    CK(cudnnSetConvolution2dDescriptor(cd, p.pad, p.pad, p.stride, p.stride, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    CK(cudnnSetConvolutionMathType(cd, CUDNN_TENSOR_OP_MATH));
    cudnnConvolutionFwdAlgoPerf_t perf[8];
    int got = 0;
    CK(cudnnGetConvolutionForwardAlgorithm_v7(h, xd, wd, cd, yd, 8, &got, perf));
    const auto algo = perf[0].algo;
    const auto math = perf[0].mathType;
    const float one = 1, zero = 0;
    auto conv = [&] { CK(cudnnConvolutionForward(h, &one, xd, x, wd, w, cd, algo, ws, ws_bytes, &zero, yd, y)); };
    char name[96];
    std::snprintf(name, sizeof name, "n%d c%d %dx%d k%d %dx%d s%d", p.n, p.c, p.h, p.w, p.k, p.r, p.s, p.stride);
    const double as_tilepick = us_per_call([&] {
      CK(cudnnSetStream(h, st));
      CK(cudnnSetConvolutionMathType(cd, math));
      conv();
      CK(cudnnSetStream(h, nullptr));
    }, st);
    CK(cudnnSetStream(h, st));
    CK(cudnnSetConvolutionMathType(cd, math));
    const double set_stream_each = us_per_call([&] { CK(cudnnSetStream(h, st)); conv(); }, st);
    const double math_each = us_per_call([&] { CK(cudnnSetConvolutionMathType(cd, math)); conv(); }, st);
    const double legacy_only = us_per_call(conv, st);

    // Backend API: one graph, heuristic mode A's first engine config, a finalized plan.
    auto bx = tensor('x', {p.n, p.c, p.h, p.w}, {int64_t(p.c) * p.h * p.w, 1, int64_t(p.w) * p.c, p.c});
    auto bw = tensor('w', {p.k, p.c, p.r, p.s}, {int64_t(p.c) * p.r * p.s, 1, int64_t(p.s) * p.c, p.c});
    auto by = tensor('y', {p.n, p.k, P, Q}, {int64_t(p.k) * P * Q, 1, int64_t(Q) * p.k, p.k});
    auto bc = make(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
    {
      cudnnDataType_t comp = CUDNN_DATA_FLOAT;
      cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
      int64_t dims = 2, dil[2] = {1, 1}, str[2] = {p.stride, p.stride}, pad[2] = {p.pad, p.pad};
      CK(cudnnBackendSetAttribute(bc, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp));
      CK(cudnnBackendSetAttribute(bc, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode));
      CK(cudnnBackendSetAttribute(bc, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &dims));
      CK(cudnnBackendSetAttribute(bc, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dil));
      CK(cudnnBackendSetAttribute(bc, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, str));
      CK(cudnnBackendSetAttribute(bc, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pad));
      CK(cudnnBackendSetAttribute(bc, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, pad));
      CK(cudnnBackendFinalize(bc));
    }
    auto op = make(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
    {
      float a = 1, b = 0;
      CK(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &bx));
      CK(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &bw));
      CK(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &by));
      CK(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &bc));
      CK(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &a));
      CK(cudnnBackendSetAttribute(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &b));
      CK(cudnnBackendFinalize(op));
    }
    auto graph = make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    CK(cudnnBackendSetAttribute(graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &op));
    CK(cudnnBackendSetAttribute(graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &h));
    CK(cudnnBackendFinalize(graph));
    auto heur = make(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    cudnnBackendHeurMode_t hm = CUDNN_HEUR_MODE_A;
    CK(cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph));
    CK(cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &hm));
    CK(cudnnBackendFinalize(heur));
    std::vector<cudnnBackendDescriptor_t> cfgs(8);
    for (auto& c : cfgs) c = make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    int64_t n_cfg = 0;
    CK(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 8, &n_cfg, cfgs.data()));
    cudnnBackendDescriptor_t plan = nullptr;
    int64_t plan_ws = 0;
    for (int64_t i = 0; i < n_cfg && !plan; ++i) {
      auto pl = make(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
      CK(cudnnBackendSetAttribute(pl, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &h));
      CK(cudnnBackendSetAttribute(pl, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfgs[i]));
      if (cudnnBackendFinalize(pl) == CUDNN_STATUS_SUCCESS) {
        int64_t c = 0;
        CK(cudnnBackendGetAttribute(pl, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &c, &plan_ws));
        if (size_t(plan_ws) <= ws_bytes) plan = pl;
      }
    }
    double backend = -1, backend_pack_once = -1;
    if (plan) {
      int64_t uids[3] = {'x', 'w', 'y'};
      void* ptrs[3] = {x, w, y};
      cudnnBackendDescriptor_t kept = nullptr;
      auto execute = [&](bool new_pack) {
        cudnnBackendDescriptor_t vp = kept;
        if (new_pack || !vp) {
          vp = make(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
          CK(cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, 3, uids));
          CK(cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, 3, ptrs));
          CK(cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws));
          CK(cudnnBackendFinalize(vp));
        }
        CK(cudnnBackendExecute(h, plan, vp));
        if (new_pack) CK(cudnnBackendDestroyDescriptor(vp)); else kept = vp;
      };
      backend = us_per_call([&] { execute(true); }, st);
      backend_pack_once = us_per_call([&] { execute(false); }, st);
      backend = us_per_call([&] { CK(cudnnSetStream(h, st)); execute(true); }, st);
    }
    std::printf("%-32s legacy algo %d math %d: as tilepick %.1f us, set_stream+conv %.1f, set_math+conv %.1f, conv only %.1f | "
                "backend (%lld cfgs, ws %lld): set_stream+new pack+execute %.1f, execute with a kept pack %.1f\n",
                name, int(algo), int(math), as_tilepick, set_stream_each, math_each, legacy_only, (long long)n_cfg,
                (long long)plan_ws, backend, backend_pack_once);
    std::fflush(stdout);
    cudaFree(x), cudaFree(w), cudaFree(y), cudaFree(ws);
  }
  return 0;
}
