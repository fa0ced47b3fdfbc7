// Plan: runs the chosen kernel (or vendor algorithm) after checking where and what it runs on.
#include <algorithm>
#include <cstdint>
#include <sstream>

#include "dispatch/plan_impl.hpp"
#include "tilepick/selector.hpp"
#include "tilepick/env.hpp"
#include "tilepick/error.hpp"
#include "tilepick/features.hpp"

namespace tilepick {

nlohmann::json to_json(const PlanInfo& i) {
  nlohmann::json cands = nlohmann::json::array();
  for (const auto& c : i.candidates) {
    nlohmann::json j{{"kernel", c.kernel}, {"vendor", c.vendor}, {"score", c.score}};
    if (c.time_us >= 0) j["time_us"] = c.time_us;
    if (!c.status.empty()) j["status"] = c.status;
    cands.push_back(std::move(j));
  }
  return {{"problem", i.problem},
          {"kernel", i.kernel},
          {"vendor", i.vendor},
          {"strategy", to_string(i.strategy)},
          {"vendor_mode", to_string(i.vendor_mode)},
          {"policy", i.policy},
          {"arch", i.arch},
          {"device", i.device},
          {"device_name", i.device_name},
          {"selection_source", i.selection_source},
          {"model_version", i.model_version},
          {"pool_size", i.pool_size},
          {"cache", i.cache},
          {"plan_seconds", i.plan_seconds},
          {"workspace_bytes", i.workspace_bytes},
          {"candidates", cands}};
}

std::size_t slot_index(std::string_view slot) {
  static constexpr std::string_view names[kOperandSlots] = {"a", "b", "c", "d", "bias", "scale_a", "scale_b"};
  for (std::size_t i = 0; i < kOperandSlots; ++i)
    if (slot == names[i]) return i;
  throw InvalidArgument("unknown operand slot '" + std::string(slot) + "' (a, b, c, d, bias, scale_a or scale_b)");
}

std::array<std::size_t, kOperandSlots> kernel_alignment(const Problem& p, const KernelConfig& c) {
  std::array<std::size_t, kOperandSlots> out{1, 1, 1, 1, 1, 1, 1};
  for (const auto& s : operand_specs(p)) {
    const std::size_t i = slot_index(s.slot), bytes = static_cast<std::size_t>(size_bytes(s.dtype));
    int elems = 1;
    if (i >= 4) elems = 1;  // bias and block scales: scalar loads
    else if (c.fam() == Family::dw) elems = c.dw_cpt;
    else if (c.fam() == Family::grp) elems = 16 / static_cast<int>(bytes);  // 16-byte staging copies
    else if (i == 0) elems = c.align_a;
    else if (i == 1) elems = c.align_b;
    else if (i == 2 || i == 3) elems = c.align_c;
    out[i] = bytes * static_cast<std::size_t>(std::max(elems, 1));
  }
  return out;
}

std::array<std::size_t, kOperandSlots> vendor_alignment(const Problem& p) {
  // cuBLASLt's heuristic assumes 256-byte aligned buffers unless told otherwise (its default
  // CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_*_BYTES); cuDNN's tensor-core paths need 16 bytes.
  const std::size_t a = std::holds_alternative<GemmProblem>(p) ? 256 : 16;
  return {a, a, a, a, 16, 16, 16};
}

Plan::Plan(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
const PlanInfo& Plan::info() const { return impl_->info; }
std::size_t Plan::workspace_bytes() const { return impl_->workspace_bytes; }
bool Plan::runnable() const { return impl_->exe || impl_->vendor_set; }
std::size_t Plan::alignment(std::string_view slot) const { return impl_->align[slot_index(slot)]; }

namespace {

std::string hex(const void* p) {
  std::ostringstream s;
  s << p;
  return s.str();
}

void check_pointer(const char* name, const void* p, int device, std::size_t align) {
  auto who = [&] { return std::string("operand ") + name + ": "; };  // built only for an error
  const cuda::PointerInfo info = cuda::pointer_info(p);
  if (!info.device_memory)
    throw InvalidArgument(who() + "pointer " + hex(p) + " is not device memory (a host pointer?)");
  if (info.device >= 0 && info.device != device)
    throw InvalidArgument(who() + "pointer is memory of device " + std::to_string(info.device) +
                          ", the plan runs on device " + std::to_string(device));
  if (align > 1 && reinterpret_cast<std::uintptr_t>(p) % align != 0)
    throw InvalidArgument(who() + "pointer " + hex(p) + " is not aligned to " + std::to_string(align) + " bytes");
}

// Puts an operand's pointer into its Operands slot ("a", "b", "c", "d", "bias", "scale_a", "scale_b").
void set_slot(Operands& ops, std::string_view slot, const void* p) {
  switch (slot_index(slot)) {
    case 0: ops.a = p; break;
    case 1: ops.b = p; break;
    case 2: ops.c = p; break;
    case 3: ops.d = const_cast<void*>(p); break;
    case 4: ops.bias = p; break;
    case 5: ops.scale_a = static_cast<const float*>(p); break;
    default: ops.scale_b = static_cast<const float*>(p); break;
  }
}

}  // namespace

const void* operand(const Operands& ops, std::string_view slot) {
  const void* members[kOperandSlots] = {ops.a, ops.b, ops.c, ops.d, ops.bias, ops.scale_a, ops.scale_b};
  return members[slot_index(slot)];
}

void Plan::run(const Operands& ops, void* stream) const {
  const Impl& im = *impl_;
  if (!runnable())
    throw Error(Status::unsupported, "plan for '" + im.info.problem + "' was made offline for arch " + im.info.arch +
                                         " (selection only); plan it on a GPU to run it");
  const int cur = cuda::current_device();
  if (cur < 0) cuda::init_device(im.info.device);
  else if (cur != im.info.device)
    throw InvalidArgument("plan for device " + std::to_string(im.info.device) + " (" + im.info.device_name +
                          ") run while device " + std::to_string(cur) + " is current; plan again for that device");
  for (const auto& s : im.specs) {
    const void* ptr = operand(ops, s.slot);
    if (!ptr) throw InvalidArgument("operand " + s.name + " (Operands::" + s.slot + ") is null");
    check_pointer(s.name.c_str(), ptr, im.info.device, im.align[slot_index(s.slot)]);
  }
  if (im.workspace_bytes > 0) {
    if (!ops.workspace)
      throw InvalidArgument("the plan needs a workspace of " + std::to_string(im.workspace_bytes) +
                            " bytes (Plan::workspace_bytes) and none was given");
    check_pointer("workspace", ops.workspace, im.info.device, 16);
  }
  if (im.exe) {
    im.exe->run(ops, stream);
    return;
  }
  std::lock_guard lock(impl_->vendor_mutex);
  impl_->vendor_set->run(im.vendor_index, ops, ops.workspace, stream);
}

void Plan::run(const std::vector<TensorArg>& tensors, void* workspace, void* stream) const {
  const Impl& im = *impl_;
  if (tensors.size() != im.specs.size()) {
    std::string names;
    for (const auto& s : im.specs) names += (names.empty() ? "" : ", ") + s.name;
    throw InvalidArgument("plan for '" + im.info.problem + "' takes " + std::to_string(im.specs.size()) +
                          " tensors (" + names + "), got " + std::to_string(tensors.size()));
  }
  if (!runnable()) run(Operands{}, stream);  // throws the offline error
  Operands ops;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    check_tensor(im.specs[i], tensors[i], im.info.device, im.align[slot_index(im.specs[i].slot)]);
    set_slot(ops, im.specs[i].slot, tensors[i].data);
  }
  ops.workspace = workspace;
  run(ops, stream);
}

void Plan::run_pointers(const std::vector<const void*>& pointers, void* workspace, void* stream) const {
  const Impl& im = *impl_;
  if (pointers.size() != im.specs.size())
    throw InvalidArgument("plan for '" + im.info.problem + "' takes " + std::to_string(im.specs.size()) +
                          " pointers, got " + std::to_string(pointers.size()));
  Operands ops;
  for (std::size_t i = 0; i < pointers.size(); ++i) set_slot(ops, im.specs[i].slot, pointers[i]);
  ops.workspace = workspace;
  run(ops, stream);
}

}  // namespace tilepick
