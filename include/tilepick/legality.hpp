// The one legality predicate: can `config` run `problem` on `arch`? Used by enumeration, the
// registry, selection, the sweep tool and the dispatcher alike.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "tilepick/arch.hpp"
#include "tilepick/config.hpp"
#include "tilepick/problem.hpp"

namespace tilepick {

struct Verdict {
  bool ok = true;
  std::string rule;    // short rule name: family_arch, dtype, smem, registers, align, ...
  std::string reason;  // human-readable, with the numbers
  explicit operator bool() const { return ok; }
};

// Resource estimate of a config for a given input element size (legality and features share it).
struct Resources {
  int threads = 0;
  int smem_bytes = 0;       // dynamic shared memory per block
  int regs_per_thread = 0;  // estimate (the compiled kernel reports the real number)
};
Resources estimate_resources(const KernelConfig& c, const Problem& p);

// Vector widths (elements) of the A, B, C accesses that the problem allows: the largest power of
// two <= 16 bytes that divides the contiguous extent of each tensor.
std::array<int, 3> max_alignment(const Problem& p);
// The config with align=auto replaced by max_alignment(p) (other configs unchanged); where a fam=sm80 config
// packs groups, the tensors read or written P groups at a time get the P times wider run's alignment.
KernelConfig resolve(const KernelConfig& c, const Problem& p);
// Groups that one fam=sm80 block of c runs together (packed groups, kernels/conv/igemm.cuh); 1 = one group.
// Needs c's align_b resolved (fwd).
int sm80_group_pack(const ConvProblem& p, const KernelConfig& c);

// The input element type that legal_on_arch takes: GEMM A, conv x.
DType input_dtype(const Problem& p);
// The rules that do not depend on the problem's sizes (family vs arch, threads, tile shapes,
// clusters); `input` sets the element size for the shared-memory budget.
Verdict legal_on_arch(const KernelConfig& c, const ArchSpec& arch, DType input);
Verdict legal(const Problem& p, const KernelConfig& c, const ArchSpec& arch);
// Rows a fam=sm90 consumer warpgroup owns (tile_m / warps_m): one or two wgmma m64 blocks, or a short tile of
// 16 / 32 rows (small M: the wgmma computes 64, the epilogue keeps the tile's).
constexpr bool sm90_consumer_rows_ok(int rows) { return rows == 64 || rows == 128 || rows == 16 || rows == 32; }
// Tiles a fam=sm90 kernel with fp8 block scales (scale=block) has: 64 rows per consumer and tile_n a multiple of 64
// (kernels/gemm/sm90.cuh, sm90_block_scaled_mainloop: two partial sets up to 128 columns, one beyond).
constexpr bool sm90_block_scale_tile_ok(int consumer_rows, int tile_n) { return consumer_rows == 64 && tile_n % 64 == 0; }
// Dynamic shared memory of a fam=sm90 GEMM block: alignment slack + stages x (A + B tiles + barriers)
// + with epi=smem the staged output columns (out_bytes per element) + with block scales (scale=block)
// stages x the k-tile's scales (tile_m of A's, two of B's, padded to 16 bytes).
int sm90_smem_bytes(const KernelConfig& c, int out_bytes, bool block_scale = false);
// epi=smem staging of a fam=sm90 GEMM: the whole output tile (tile_n columns, 1 buffer) when it fits
// beside the pipeline in kSm90SmemPerBlock; else two buffers of the widest part of the columns that
// fits, taking turns; else one buffer of one column block. Column blocks (the TMA store's box) are 128 bytes
// wide, or 64 where tile_n columns are no multiple of 128 bytes. cols = buffers = 0 for epi=direct.
inline constexpr int kSm90SmemPerBlock = 232448;  // sm_90's opt-in limit, H100 and H200 alike
struct Sm90Staging {
  int cols;
  int buffers;
  int block_bytes;
};
Sm90Staging sm90_staging(const KernelConfig& c, int out_bytes, bool block_scale = false);
// fam=sm90 convolutions that are not a plain GEMM (ConvProblem::pointwise_gemm) run by TMA im2col: one
// group, f16/bf16 GEMM inputs, within im2col's limits (box corners in [-128, 127] for 2-D, [-16, 15] for
// 3-D; strides <= 8); bwd_data of any stride (strided: one launch per stride phase, epi=direct); bwd_weight
// with C a multiple of 64.
// Empty when the family runs the problem that way, else why not.
std::string sm90_im2col_refusal(const ConvProblem& p);
// What the im2col loads of one launch of such a convolution walk (arrays (d, h, w)): the tensor they read (fwd,
// bwd_weight: x; bwd_data: dy), its channels and spatial sizes, the pixels walked (y's; for bwd_data the dx pixels
// phase + phase_stride x i of one stride phase), the traversal strides, the box corners -pad and upper, and
// the filter taps the k-tiles walk: tap v of each dim at im2col offset v x offset_step, weights of filter
// index tap0 + v x tap_step (fwd: every tap, offsets of the dilation; bwd_data: the phase's taps, the filter
// turned around: dx is the stride-1 convolution of dy over the taps that reach the phase's pixels).
struct Sm90Im2colWalk {
  std::int64_t channels;
  std::array<std::int64_t, 3> tensor, pixels, stride, pad, upper;
  std::array<std::int64_t, 3> taps, offset_step, tap0, tap_step;
  std::array<std::int64_t, 3> phase{0, 0, 0}, phase_stride{1, 1, 1};
};
// One walk (fwd, bwd_weight), or one per stride phase with pixels (bwd_data; a single one at stride 1). A phase
// no tap reaches has taps 0 (its pixels are zeros).
std::vector<Sm90Im2colWalk> sm90_im2col_walks(const ConvProblem& p);
// Strided bwd_data: one launch per stride phase, whose epilogue scatters the phase's dx rows (Cfg::phase_store).
bool sm90_phase_store(const ConvProblem& p);
// That convolution as the GEMM the sm90 rules and kernel see: fwd M = N x output pixels, N = K, K = C
// (per filter tap) rcr; bwd_data M = N x input pixels, N = C, K = K (per tap) rrr; bwd_weight M = K,
// N = taps x C, K = N x output pixels crr.
GemmProblem sm90_im2col_gemm(const ConvProblem& p);

// legal() for many configs of one problem: the problem's terms (alignment, extents, GEMM K, largest
// operand) computed once. check<false>(resolve(c)).ok == legal(problem, c, arch).ok for every c that
// passes legal_on_arch (callers filter those once per arch and dtype), without building the messages.
class ProblemLegality {
 public:
  ProblemLegality(const Problem& p, const ArchSpec& arch);  // keeps references to both
  KernelConfig resolve(const KernelConfig& c) const;        // == tilepick::resolve(c, problem)
  // The problem-dependent rules on a resolved config; kExplain: with the rule name and message.
  template <bool kExplain>
  Verdict check(const KernelConfig& resolved) const;

 private:
  template <bool kExplain>
  Verdict check_sm90(const KernelConfig& resolved) const;

  const Problem& problem_;
  const ArchSpec& arch_;
  const ConvProblem* conv_ = nullptr;
  const GemmProblem* gemm_ = nullptr;
  std::optional<GemmProblem> pointwise_;  // a conv that is a plain GEMM (ConvProblem::pointwise_gemm)
  std::optional<GemmProblem> im2col_;     // else a conv fam=sm90 runs by TMA im2col (sm90_im2col_gemm)
  std::string im2col_refusal_;            // else why not
  std::array<int, 3> allowed_;
  std::array<std::int64_t, 3> extents_;
  std::int64_t gemm_k_ = 0, largest_ = 0;
};
// Whether family `f` can run the problem's kind at all (fam=dw: depthwise convolution only); when
// false, legal() rejects every config of the family. Lookups use it to skip whole families.
bool family_runs(Family f, const Problem& p);

}  // namespace tilepick
