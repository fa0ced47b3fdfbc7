// Vendor baselines measured in the same run as tilepick's kernels: cuBLASLt for GEMM, cuDNN 9 for grouped
// convolution, all directions, 2-D and 3-D (its graph API's heuristic first engine, then the legacy API's
// algorithms; vendor_cudnn_graph.hpp).
//
// Both libraries are loaded with dlopen on first use and never linked, so the library and CLI work
// where they are absent: a VendorSet is then simply unavailable, with the reason. Search order per
// library: TILEPICK_CUBLASLT_LIB / TILEPICK_CUDNN_LIB (a full path; when set, nothing else is tried),
// the default loader path, the CUDA toolkit's lib dirs, then python site-packages' nvidia/*/lib.
//
// Semantics are those of the CPU references (src/ref): GEMM D = act(alpha A x B + beta C + bias[j])
// with row/col layouts and contiguous batches, fp8 block scales (scale=block) as in problem.hpp; conv
// x NHWGC, w GKYXC, y NHWGK (3-D NDHWGC, GKZYXC, NDHWGK), cross-correlation, fp32 accumulation, f32
// inputs on tf32 tensor cores.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tilepick/kernel_plan.hpp"
#include "tilepick/problem.hpp"

namespace tilepick::run::vendor {

// ---- library discovery --------------------------------------------------------------------------

enum class Lib { cublaslt, cudnn };
const char* lib_name(Lib lib);                    // "cuBLASLt", "cuDNN"
std::vector<std::string> lib_sonames(Lib lib);    // libcublasLt.so.13 .so.12 .so | libcudnn.so.9

// Candidate paths in search order. `env_override` non-empty: only it. Otherwise each soname bare
// (the loader path), then <dir>/<soname> for each CUDA lib dir, then every existing
// <site-packages>/nvidia/*/lib/<soname>.
std::vector<std::string> library_candidates(Lib lib, const std::string& env_override,
                                            const std::vector<std::string>& cuda_lib_dirs,
                                            const std::vector<std::string>& site_packages);
// Existing directories matching the default site-packages globs (venvs under /opt, /usr/local,
// /usr, ~/.local), each once, in that order.
std::vector<std::string> python_site_packages();
// The CUDA toolkit lib dirs of this build, then /usr/local/cuda/lib64 and /usr/local/cuda/lib.
std::vector<std::string> cuda_lib_dirs();

struct LibraryInfo {
  bool loaded = false;
  std::string path;     // the candidate that loaded
  std::string version;  // "13.0.2" (cuBLASLt), "9.10.2" (cuDNN)
  std::string error;    // why not loaded: every candidate tried and its dlerror
  void* handle = nullptr;
};
// dlopens the candidates in order and keeps the first whose symbols and version check out; the
// error lists every candidate tried and why it failed. Uncached (library() caches).
LibraryInfo open_library(Lib lib, const std::vector<std::string>& candidates);
// Loaded once per process (thread-safe), from library_candidates(); never throws.
const LibraryInfo& library(Lib lib);
// False when the library's header was missing at build time: it is then not even looked for.
bool compiled_with(Lib lib);

// ---- algorithm sets ----------------------------------------------------------------------------

struct Algo {
  std::string name;    // unique in its set: "cublaslt:algo3" (heuristic rank), "cudnn:fwd:implicit_precomp_gemm"
  std::string detail;  // library ids: "id=21 tile=128x128 stages=... splitk=1", "algo=1 math=tensor_op"
  std::size_t workspace_bytes = 0;
};

// Every usable algorithm of one library for one problem on the current device (context of the
// thread, see cuda::init_device). Operands are those of kernel_plan.hpp (GEMM a, b, c, d, bias;
// conv fwd x, w -> y; bwd_data dy, w -> dx; bwd_weight x, dy -> dw).
class VendorSet {
 public:
  virtual ~VendorSet() = default;
  // nullptr and *why_not (the library, the problem feature and the rule) when the problem is not
  // expressible in the library, the library is absent, or it offers no algorithm. Throws
  // Error(cuda_error) only for unexpected library failures. `cudnn_find`: a cuDNN set also runs
  // cudnnFind*Ex to name its pick (find_index, a note in sweep records). Dispatch passes false: the
  // search runs every algorithm on zero-filled copies of the operands, seconds and gigabytes for large
  // convolutions, and the set's algorithms are the same either way.
  static std::unique_ptr<VendorSet> create(const Problem& p, std::string* why_not, bool cudnn_find = true);

  virtual const char* library_name() const = 0;
  const std::vector<Algo>& algos() const { return algos_; }
  int heuristic_index() const { return heuristic_; }   // the library's heuristic first choice
  int find_index() const { return find_; }             // cuDNN: cudnnFind*Ex's first (-1 for cuBLASLt)
  // The heuristic choice of a cuDNN set is its graph-API engine where there is one.
  std::size_t max_workspace_bytes() const;
  // Runs algorithm i on `stream` (CUstream; nullptr = the default stream). `workspace` holds at
  // least algos()[i].workspace_bytes. Throws Error(cuda_error) naming the algorithm on failure.
  virtual void run(int i, const Operands& ops, void* workspace, void* stream) = 0;

 protected:
  std::vector<Algo> algos_;
  int heuristic_ = 0, find_ = -1;
};

// ---- pure problem -> descriptor mappings (unit-tested without a GPU) ----------------------------

// cuBLASLt is column-major. With bias or row-major D the product is computed transposed,
// D^T = B^T A^T (swap_ab), so that tilepick's per-column bias runs along cuBLASLt's D rows and a
// row-major D is a column-major D^T. Each operand is then either column-major (trans false) or the
// column-major storage of its transpose (trans true).
struct LtMatrix {
  std::uint64_t rows = 0, cols = 0;  // of the stored column-major matrix
  std::int64_t ld = 0, batch_stride = 0;
  bool row_order = false;            // CUBLASLT_ORDER_ROW (only D/C of a col-major D with bias)
};
struct LtGemm {
  bool swap_ab = false;        // cuBLAS A = tilepick B, cuBLAS B = tilepick A
  bool trans_a = false, trans_b = false;
  std::uint64_t m = 0, n = 0, k = 0;
  int batch = 1;
  LtMatrix a, b, cd;           // cuBLAS's A (m x k after op), B (k x n after op), C and D (m x n)
};
LtGemm map_gemm(const GemmProblem& p);

// cuDNN Nd descriptors (dims in N C [D] H W order, as cuDNN takes them) for channels-last grouped
// tensors: x/y are NHWC with C = G*Cg (group g owns channels g*Cg ..), w is a KCRS filter of
// K = G*Kg filters of Cg channels in NHWC format ([K][Z][Y][X][Cg] in memory).
struct CudnnTensor {
  std::vector<int> dims, strides;
};
struct CudnnConv {
  int spatial = 2;                   // 2 or 3
  CudnnTensor x, y;                  // y has the derived output size
  std::vector<int> w_dims;           // K, Cg, [Z,] Y, X
  std::vector<int> pad, stride, dilation;
  int groups = 1;
  CudnnTensor bias;                  // 1, K, 1, 1[, 1]
};
// Throws Unsupported when a size does not fit cuDNN's int dims/strides.
CudnnConv map_conv(const ConvProblem& p);
// Strides of a dense channels-last tensor given in cuDNN's dims order (N C [D] H W, or K Cg [Z] Y X for
// a filter): C innermost, then the spatial dims from the last, N (K) outermost. The graph API's x, y and
// w tensors (vendor_cudnn_graph.cpp).
std::vector<std::int64_t> channels_last_strides(const std::vector<int>& dims);

// Empty when the library can express the problem, else the reason (no library calls).
std::string cublaslt_unsupported(const GemmProblem& p);
std::string cudnn_unsupported(const ConvProblem& p);

}  // namespace tilepick::run::vendor
