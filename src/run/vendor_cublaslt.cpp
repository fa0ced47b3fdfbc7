// cuBLASLt GEMM baseline: the heuristic's algorithms (up to 8) for one problem, run through
// cublasLtMatmul. The library is dlopen'ed (vendor_lib.cpp); cublasLt.h gives types and enums only.
#include "run/vendor_internal.hpp"

#if !defined(TILEPICK_HAVE_CUBLASLT_H)

namespace tilepick::run::vendor::detail {
std::string check_cublaslt(void*, std::string*) { return "cuBLASLt support was compiled out"; }
std::unique_ptr<VendorSet> create_cublaslt(const GemmProblem&, std::string* why_not) {
  *why_not = "cuBLASLt support was compiled out (cublasLt.h not found at build time)";
  return nullptr;
}
}  // namespace tilepick::run::vendor::detail

#else

#include <cublasLt.h>

#include <mutex>

#include "core/cuda_driver.hpp"
#include "tilepick/error.hpp"
#include "tilepick/jit.hpp"

// fp8 block scales (scale=block) need cuBLASLt 12.9's VEC128_32F / BLK128x128_32F scale modes.
#if defined(CUBLAS_VERSION) && CUBLAS_VERSION >= 120900
#define TILEPICK_LT_BLOCK_SCALES 1
#else
#define TILEPICK_LT_BLOCK_SCALES 0
#endif

namespace tilepick::run::vendor::detail {
namespace {

constexpr int kMaxAlgos = 8;
constexpr std::size_t kMinBlockScaleVersion = 120900;  // cublasLtGetVersion() of 12.9.0
constexpr std::size_t kWorkspaceBytes = std::size_t(32) << 20;

struct LtApi {
  decltype(&::cublasLtGetVersion) get_version = nullptr;
  decltype(&::cublasLtGetStatusName) status_name = nullptr;
  decltype(&::cublasLtCreate) create = nullptr;
  decltype(&::cublasLtMatmulDescCreate) desc_create = nullptr;
  decltype(&::cublasLtMatmulDescDestroy) desc_destroy = nullptr;
  decltype(&::cublasLtMatmulDescSetAttribute) desc_set = nullptr;
  decltype(&::cublasLtMatrixLayoutCreate) layout_create = nullptr;
  decltype(&::cublasLtMatrixLayoutDestroy) layout_destroy = nullptr;
  decltype(&::cublasLtMatrixLayoutSetAttribute) layout_set = nullptr;
  decltype(&::cublasLtMatmulPreferenceCreate) pref_create = nullptr;
  decltype(&::cublasLtMatmulPreferenceDestroy) pref_destroy = nullptr;
  decltype(&::cublasLtMatmulPreferenceSetAttribute) pref_set = nullptr;
  decltype(&::cublasLtMatmulAlgoGetHeuristic) heuristic = nullptr;
  decltype(&::cublasLtMatmulAlgoConfigGetAttribute) algo_get = nullptr;
  decltype(&::cublasLtMatmul) matmul = nullptr;
};
LtApi api;  // filled once by check_cublaslt (under library()'s call_once)

std::string status_text(cublasStatus_t s) {
  const char* n = api.status_name ? api.status_name(s) : nullptr;
  return n ? n : "cublasStatus " + std::to_string(static_cast<int>(s));
}

void check(cublasStatus_t s, const char* call, const std::string& subject) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw Error(Status::cuda_error, std::string(call) + " failed for " + subject + ": " + status_text(s));
}

cublasLtHandle_t handle() {
  static std::once_flag once;
  static cublasLtHandle_t h = nullptr;
  std::call_once(once, [] { check(api.create(&h), "cublasLtCreate", "the process handle"); });
  return h;
}

cudaDataType_t data_type(DType t) {
  switch (t) {
    case DType::f16: return CUDA_R_16F;
    case DType::bf16: return CUDA_R_16BF;
    case DType::f32: return CUDA_R_32F;
    case DType::e4m3: return CUDA_R_8F_E4M3;
    case DType::e5m2: return CUDA_R_8F_E5M2;
  }
  return CUDA_R_32F;
}

cublasLtEpilogue_t epilogue(const Epilogue& e) {
  switch (e.act) {
    case Activation::relu: return e.bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
    case Activation::gelu_tanh: return e.bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
    default: return e.bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
  }
}

template <class T>
void set_desc(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attr, const T& v, const std::string& what) {
  check(api.desc_set(d, attr, &v, sizeof v), "cublasLtMatmulDescSetAttribute", what);
}

class LtSet final : public VendorSet {
 public:
  explicit LtSet(const GemmProblem& p) : p_(p), map_(map_gemm(p)), what_(to_string(p)) {
    alpha_ = static_cast<float>(p.alpha), beta_ = static_cast<float>(p.beta);
    const bool tf32 = p.a == DType::f32;
    check(api.desc_create(&desc_, tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F, CUDA_R_32F),
          "cublasLtMatmulDescCreate", what_);
    set_desc(desc_, CUBLASLT_MATMUL_DESC_TRANSA, map_.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, what_);
    set_desc(desc_, CUBLASLT_MATMUL_DESC_TRANSB, map_.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, what_);
    set_desc(desc_, CUBLASLT_MATMUL_DESC_EPILOGUE, static_cast<std::uint32_t>(epilogue(p.epilogue)), what_);
    if (p.epilogue.bias)
      set_desc(desc_, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, static_cast<std::int32_t>(data_type(p.c)), what_);
    // fp8 with one scale per tensor: partial sums stay in the tensor cores' accumulators, as in fam=sm90's
    // kernels (so that times compare like with like). Block scales promote every 128-k block into fp32 on
    // both sides, and cuBLASLt has no FAST_ACCUM with them.
    if (is_fp8(p.a) && p.scale != GemmScale::block)
      set_desc(desc_, CUBLASLT_MATMUL_DESC_FAST_ACCUM, std::int8_t{1}, what_);
    if (p.scale == GemmScale::block) set_block_scales();
    a_ = layout(map_.a, map_.swap_ab ? p.b : p.a);
    b_ = layout(map_.b, map_.swap_ab ? p.a : p.b);
    cd_ = layout(map_.cd, p.c);

    cublasLtMatmulPreference_t pref = nullptr;
    check(api.pref_create(&pref), "cublasLtMatmulPreferenceCreate", what_);
    const std::uint64_t ws = kWorkspaceBytes;
    api.pref_set(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
    cublasLtMatmulHeuristicResult_t res[kMaxAlgos] = {};
    int returned = 0;
    heuristic_status_ = api.heuristic(handle(), desc_, a_, b_, cd_, cd_, pref, kMaxAlgos, res, &returned);
    api.pref_destroy(pref);
    if (heuristic_status_ != CUBLAS_STATUS_SUCCESS) returned = 0;
    for (int i = 0; i < returned; ++i) {
      if (res[i].state != CUBLAS_STATUS_SUCCESS) continue;
      results_.push_back(res[i]);
      algos_.push_back({"cublaslt:algo" + std::to_string(algos_.size()), describe(res[i]), res[i].workspaceSize});
    }
    heuristic_ = 0;
  }

  ~LtSet() override {
    for (auto l : {a_, b_, cd_})
      if (l) api.layout_destroy(l);
    if (desc_) api.desc_destroy(desc_);
  }

  const char* library_name() const override { return "cuBLASLt"; }

  // Why no algorithm came back (for create's why_not).
  std::string empty_reason() const {
    std::string s = "cuBLASLt has no algorithm for " + what_ + " (cublasLtMatmulAlgoGetHeuristic: " +
                    status_text(heuristic_status_) + ")";
    if (map_.cd.row_order)
      s += "; its bias runs along cuBLAS rows, so a column-major D with bias needs a row-ordered D^T, which it does "
           "not offer here";
    if (p_.scale == GemmScale::block)
      s += "; its fp8 block-scaled kernels (VEC128 x BLK128x128) take fewer shapes and epilogues than its other fp8 "
           "kernels (13.1 on an H200 refused odd M, M = 1, and f32 output with beta and bias+relu)";
    return s;
  }

  void run(int i, const Operands& ops, void* workspace, void* stream) override {
    const auto& r = results_.at(static_cast<std::size_t>(i));
    if (p_.epilogue.bias) set_desc(desc_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, ops.bias, what_);
    if (p_.scale == GemmScale::block) {
      if (!ops.scale_a || !ops.scale_b)
        throw Error(Status::invalid_argument, "cuBLASLt on " + what_ + ": Operands::scale_a and scale_b are required "
                                              "(scale=block)");
      set_scale_pointers(ops.scale_a, ops.scale_b);
    }
    const void* a = map_.swap_ab ? ops.b : ops.a;
    const void* b = map_.swap_ab ? ops.a : ops.b;
    const void* c = p_.beta != 0 ? ops.c : ops.d;
    check(api.matmul(handle(), desc_, &alpha_, a, a_, b, b_, &beta_, c, cd_, ops.d, cd_, &r.algo, workspace,
                     r.workspaceSize, reinterpret_cast<cudaStream_t>(stream)),
          "cublasLtMatmul", algos_[i].name + " on " + what_);
  }

 private:
  // DeepSeek-V3 block scales: our A (activations, M x K) has one fp32 scale per 1 x 128 block, VEC128_32F
  // with SA [K/128][M] (M contiguous); our B (weights, K x N stored as N rows of K) one per 128 x 128 block,
  // BLK128x128_32F with SB [N/128][K/128] (k-blocks contiguous). These are cuBLASLt's layouts for them
  // (PyTorch's scaled_mm passes the same; checked against the fp64 reference on an H200, cuBLASLt 13.1),
  // except that cuBLASLt pads SB's rows to a multiple of 4 k-blocks: cublaslt_unsupported refuses the
  // problems where that differs. cuBLASLt's A and B follow map_gemm: with swap_ab its A is our B.
  void set_block_scales() {
#if TILEPICK_LT_BLOCK_SCALES
    const std::int32_t act = CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
    const std::int32_t weight = CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F;
    set_desc(desc_, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, map_.swap_ab ? weight : act, what_);
    set_desc(desc_, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, map_.swap_ab ? act : weight, what_);
    // The heuristic wants scale pointers (it does not read them): a placeholder until run() sets the caller's.
    scale_placeholder_ = cuda::DeviceBuffer(256);
    set_scale_pointers(static_cast<const float*>(scale_placeholder_.get()),
                       static_cast<const float*>(scale_placeholder_.get()));
#else
    throw Error(Status::internal, "cuBLASLt block scales were compiled out (cublasLt.h older than 12.9)");
#endif
  }

  void set_scale_pointers(const float* scale_a, const float* scale_b) {
    const void* lt_a = map_.swap_ab ? scale_b : scale_a;
    const void* lt_b = map_.swap_ab ? scale_a : scale_b;
    set_desc(desc_, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, lt_a, what_);
    set_desc(desc_, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, lt_b, what_);
  }

  cublasLtMatrixLayout_t layout(const LtMatrix& m, DType t) {
    cublasLtMatrixLayout_t l = nullptr;
    check(api.layout_create(&l, data_type(t), m.rows, m.cols, m.ld), "cublasLtMatrixLayoutCreate", what_);
    auto set = [&](cublasLtMatrixLayoutAttribute_t attr, const auto& v) {
      check(api.layout_set(l, attr, &v, sizeof v), "cublasLtMatrixLayoutSetAttribute", what_);
    };
    if (m.row_order) set(CUBLASLT_MATRIX_LAYOUT_ORDER, static_cast<std::int32_t>(CUBLASLT_ORDER_ROW));
    if (map_.batch > 1) {
      set(CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, static_cast<std::int32_t>(map_.batch));
      set(CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, static_cast<std::int64_t>(m.batch_stride));
    }
    return l;
  }

  static std::string describe(const cublasLtMatmulHeuristicResult_t& r) {
    auto get = [&](cublasLtMatmulAlgoConfigAttributes_t attr) {
      std::uint32_t v = 0;
      std::size_t written = 0;
      if (api.algo_get(&r.algo, attr, &v, sizeof v, &written) != CUBLAS_STATUS_SUCCESS) return std::string("?");
      return std::to_string(v);
    };
    return "id=" + get(CUBLASLT_ALGO_CONFIG_ID) + " tile=" + get(CUBLASLT_ALGO_CONFIG_TILE_ID) +
           " stages=" + get(CUBLASLT_ALGO_CONFIG_STAGES_ID) + " splitk=" + get(CUBLASLT_ALGO_CONFIG_SPLITK_NUM) +
           " reduction=" + get(CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME) + " swizzle=" +
           get(CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING) + " custom=" + get(CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION) +
           " waves=" + std::to_string(r.wavesCount);
  }

  GemmProblem p_;
  LtGemm map_;
  std::string what_;
  float alpha_ = 1, beta_ = 0;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, cd_ = nullptr;
  cuda::DeviceBuffer scale_placeholder_;  // scale=block: the heuristic's scale pointers
  cublasStatus_t heuristic_status_ = CUBLAS_STATUS_SUCCESS;
  std::vector<cublasLtMatmulHeuristicResult_t> results_;
};

}  // namespace

std::string check_cublaslt(void* h, std::string* version) {
  struct Sym {
    const char* name;
    bool found;
  };
  const Sym syms[] = {
      {"cublasLtGetVersion", resolve(h, "cublasLtGetVersion", api.get_version)},
      {"cublasLtGetStatusName", resolve(h, "cublasLtGetStatusName", api.status_name)},
      {"cublasLtCreate", resolve(h, "cublasLtCreate", api.create)},
      {"cublasLtMatmulDescCreate", resolve(h, "cublasLtMatmulDescCreate", api.desc_create)},
      {"cublasLtMatmulDescDestroy", resolve(h, "cublasLtMatmulDescDestroy", api.desc_destroy)},
      {"cublasLtMatmulDescSetAttribute", resolve(h, "cublasLtMatmulDescSetAttribute", api.desc_set)},
      {"cublasLtMatrixLayoutCreate", resolve(h, "cublasLtMatrixLayoutCreate", api.layout_create)},
      {"cublasLtMatrixLayoutDestroy", resolve(h, "cublasLtMatrixLayoutDestroy", api.layout_destroy)},
      {"cublasLtMatrixLayoutSetAttribute", resolve(h, "cublasLtMatrixLayoutSetAttribute", api.layout_set)},
      {"cublasLtMatmulPreferenceCreate", resolve(h, "cublasLtMatmulPreferenceCreate", api.pref_create)},
      {"cublasLtMatmulPreferenceDestroy", resolve(h, "cublasLtMatmulPreferenceDestroy", api.pref_destroy)},
      {"cublasLtMatmulPreferenceSetAttribute", resolve(h, "cublasLtMatmulPreferenceSetAttribute", api.pref_set)},
      {"cublasLtMatmulAlgoGetHeuristic", resolve(h, "cublasLtMatmulAlgoGetHeuristic", api.heuristic)},
      {"cublasLtMatmulAlgoConfigGetAttribute", resolve(h, "cublasLtMatmulAlgoConfigGetAttribute", api.algo_get)},
      {"cublasLtMatmul", resolve(h, "cublasLtMatmul", api.matmul)},
  };
  for (const auto& s : syms)
    if (!s.found) return std::string("no symbol ") + s.name;
  const std::size_t v = api.get_version();
  *version = std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
  if (v < 110000) return "cuBLASLt " + *version + " is too old (11.0 or newer needed)";
  return "";
}

std::unique_ptr<VendorSet> create_cublaslt(const GemmProblem& p, std::string* why_not) {
  const auto& lib = library(Lib::cublaslt);
  if (!lib.loaded) {
    *why_not = lib.error;
    return nullptr;
  }
  if (p.scale == GemmScale::block) {
    if (!TILEPICK_LT_BLOCK_SCALES) {
      *why_not = "cuBLASLt fp8 block scales need cublasLt.h 12.9 or newer at build time";
      return nullptr;
    }
    if (api.get_version() < kMinBlockScaleVersion) {
      *why_not = "cuBLASLt " + lib.version + " has no fp8 block scales (VEC128 / BLK128x128: 12.9 or newer)";
      return nullptr;
    }
  }
  cuda::detail::ensure_context("cuBLASLt");
  auto set = std::make_unique<LtSet>(p);
  if (set->algos().empty()) {
    *why_not = set->empty_reason();
    return nullptr;
  }
  return set;
}

}  // namespace tilepick::run::vendor::detail

#endif
