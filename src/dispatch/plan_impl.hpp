// Plan internals shared by the dispatcher (which builds plans) and plan.cpp (which runs them).
#pragma once
#include <array>
#include <memory>
#include <mutex>
#include <optional>

#include "run/vendor.hpp"
#include "tilepick/dispatch.hpp"
#include "tilepick/jit.hpp"

namespace tilepick {

// Operands members a tensor can go to: a, b, c, d, bias, scale_a, scale_b.
inline constexpr std::size_t kOperandSlots = 7;

struct Plan::Impl {
  PlanInfo info;
  Problem problem;
  std::vector<TensorSpec> specs;
  std::optional<KernelConfig> config;           // the tilepick kernel (resolved), when not vendor
  std::unique_ptr<cuda::Executable> exe;        // compiled and loaded (online plans)
  std::unique_ptr<run::vendor::VendorSet> vendor_set;
  int vendor_index = -1;
  std::mutex vendor_mutex;                      // library handles are not shared across threads
  std::size_t workspace_bytes = 0;
  std::array<std::size_t, kOperandSlots> align{};  // bytes per slot a, b, c, d, bias, scale_a, scale_b
};

// Slot index of "a" "b" "c" "d" "bias" "scale_a" "scale_b" (throws InvalidArgument otherwise).
std::size_t slot_index(std::string_view slot);
// Base alignment each slot needs for a tilepick kernel config or a vendor library.
std::array<std::size_t, kOperandSlots> kernel_alignment(const Problem& p, const KernelConfig& resolved);
std::array<std::size_t, kOperandSlots> vendor_alignment(const Problem& p);

}  // namespace tilepick
