// GPU references for sweeps: random normal inputs, naive fp64 reference kernels and an output
// check reduced on the GPU, for problems far too large for the CPU references (src/ref/*.cpp).
// Every program goes through jit::compile (NVRTC, disk-cached); the device code is kernels/ref/.
//
// Semantics and layouts are those of the CPU references (include/tilepick/ref.hpp): the GPU
// reference reads the inputs in their real dtypes, accumulates in fp64 in the same order as the
// CPU (conv bwd_weight over few outputs: in runs, the same to rounding) and writes the fp64 result
// (before rounding to the output dtype). Streams are CUstream passed as void* (null = the legacy
// default stream).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tilepick/jit.hpp"
#include "tilepick/kernel_plan.hpp"
#include "tilepick/problem.hpp"

namespace tilepick::ref::gpu {

// ---- inputs ----

// Which Operands member an input tensor goes to.
enum class Slot : std::uint8_t { a, b, c, bias, scale_a, scale_b };
inline constexpr int kSlots = 6;
// The Operands member's name ("a", "scale_b"), for messages.
const char* slot_name(Slot s);
// The fp8 block scales (scale_a, scale_b): filled with fill_random_scale, not fill_random_normal.
inline bool is_scale(Slot s) { return s == Slot::scale_a || s == Slot::scale_b; }

struct InputTensor {
  Slot slot;
  DType dtype;
  std::size_t elems;
};

// The inputs of a problem, in order a, b, [c when beta != 0], [bias when the epilogue has one],
// [scale_a, scale_b with scale=block]:
//   GEMM a = A, b = B, c = C (C's dtype), bias [N] (C's dtype), scale_a SA and scale_b SB (f32,
//   layouts in problem.hpp);
//   conv fwd a = x, b = w, bias [K] (y's dtype); bwd_data a = dy, b = w; bwd_weight a = x, b = dy.
std::vector<InputTensor> input_tensors(const Problem& p);
// The output: dtype and element count (GEMM D, conv y / dx / dw).
DType output_dtype(const Problem& p);
std::size_t output_elems(const Problem& p);
// Points the Operands member of `slot` at p.
void bind(Operands& ops, Slot slot, const void* p);
// The Operands member of `slot`.
const void* bound(const Operands& ops, Slot slot);
// The seed of one input slot, derived from a problem-level seed (distinct streams per slot).
std::uint64_t slot_seed(std::uint64_t seed, Slot s);

// Writes n values drawn from N(0, 1) and rounded to t (round to nearest even, as
// ref::round_to_dtype) to device memory dst. Deterministic in (seed, index): Philox4x32-10 and
// Box-Muller (kernels/ref/fill.cuh). Asynchronous on `stream`.
void fill_random_normal(void* dst, DType t, std::size_t n, std::uint64_t seed, void* stream = nullptr);
// Writes n positive fp32 block scales exp(z / 2) rounded to f32, z the normals fill_random_normal draws
// for (seed, index): e^-1.5 .. e^1.5 for |z| < 3, never 0. Asynchronous on `stream`.
void fill_random_scale(float* dst, std::size_t n, std::uint64_t seed, void* stream = nullptr);
// Fills one tensor of input_tensors(p) at dst: fill_random_scale for the block scales, else
// fill_random_normal, seeded with slot_seed(seed, t.slot).
void fill_input(void* dst, const InputTensor& t, std::uint64_t seed, void* stream = nullptr);

// ---- reference ----

// The fp64 reference of one problem, compiled once (for `target`, e.g. "sm_90a") and reusable.
class GpuReference {
 public:
  GpuReference(const Problem& p, const std::string& target);
  // Writes output_elems(p) doubles to ref_f64 (device). inputs: a, b, c, bias, scale_a, scale_b as
  // input_tensors() lists them (d and workspace are ignored). Asynchronous on `stream`, except a conv
  // bwd_weight whose long reduction over few outputs is summed in runs (kernels/ref/conv_ref.cuh): it
  // returns once done.
  void compute(const Operands& inputs, void* ref_f64, void* stream = nullptr) const;
  const Problem& problem() const { return problem_; }

 private:
  Problem problem_;
  std::size_t partials_bytes_ = 0;  // device scratch for those run sums
  std::unique_ptr<cuda::Executable> exe_;
};

// ---- check ----

// What the compare kernels reduce (kernels/ref/compare.cuh). Nonfinite outputs are counted and
// left out of the sums and maxima.
struct CompareSums {
  double err2 = 0, ref2 = 0;               // sum (o - r)^2, sum r^2
  double max_abs_err = 0, max_abs_ref = 0;  // max |o - r|, max |r|
  std::int64_t nonfinite = 0, count = 0;    // NaN/Inf outputs, elements compared
};

struct CheckResult {
  double rel_l2 = 0;       // sqrt(err2 / ref2) (sqrt(err2) when the reference is all zero)
  double max_rel_err = 0;  // max |o - r| / max |r| (max |o - r| when the reference is all zero)
  double tol = 0;
  std::int64_t nonfinite = 0;
  bool ok = false;         // nonfinite == 0 && rel_l2 <= tol && max_rel_err <= 8 tol
};

// Tolerance of a problem: run::tolerance(p) (dtypes) plus an fp32-accumulation term
// 2 u sqrt(L) for reduction length L = the implicit GEMM's K (u = 2^-24 for an f32 accumulator,
// 2^-11 for f16): the standard deviation of the rounding error of an L-term sum of random-sign
// terms grows like u sqrt(L) times the result's scale. It is below 1e-5 for L <= 2e4 and matters
// only for long reductions (bwd_weight over large batches, split-free deep K).
double tolerance(const Problem& p);
double accumulation_tolerance(const Problem& p);
// The CheckResult of reduced sums under tolerance tol (the rule of run::ProblemBench::run).
CheckResult check_result(const CompareSums& s, double tol);

// Reduces out (n elements of dtype t, device) against ref_f64 (device) on the GPU. Synchronizes
// the stream's context and returns the sums. Deterministic for a given n.
CompareSums compare(DType t, std::size_t n, const void* out, const void* ref_f64, void* stream = nullptr);
// compare() on the problem's output, then check_result() with tolerance(p).
CheckResult check(const Problem& p, const void* out, const void* ref_f64, void* stream = nullptr);

// ---- programs (no GPU needed: tests compile them) ----

// fill_random_normal's program for dtype t, or (scales) fill_random_scale's (t = f32).
KernelSource fill_source(DType t, bool scales = false);
// The reference program of a problem (one per problem specialization: op, direction, dtypes,
// beta, epilogue, block scales; sizes and layouts are runtime).
KernelSource reference_source(const Problem& p);
// Every program GpuReference(p) runs: reference_source(p), or for a conv bwd_weight summed in runs the runs' kernel
// and their sum.
std::vector<KernelSource> reference_sources(const Problem& p);
// compare_partial for the output dtype, then compare_final.
std::vector<KernelSource> compare_sources(DType out);

// ---- host helpers ----

// Element bytes of dtype t -> exact values (f16, bf16, e4m3, e5m2, f32), and back (round to
// nearest even, the rule of ref::round_to_dtype). Same code as the device (kernels/ref/numeric.cuh).
std::vector<double> decode(DType t, const void* bytes, std::size_t n);
std::vector<unsigned char> encode(DType t, const std::vector<double>& values);

}  // namespace tilepick::ref::gpu
