// Internals of the JIT shared by headers.cpp, nvrtc.cpp, cache.cpp, compile.cpp and the tests.
#pragma once
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tilepick/jit.hpp"

namespace tilepick::jit::detail {

// One kernels/ header embedded at build time (cmake/bundle_headers.cmake); data is NUL-terminated.
struct BundledHeader {
  const char* path;  // relative to kernels/, e.g. "common/types.cuh"
  const unsigned char* data;
  std::size_t size;  // bytes, without the terminating NUL
};
std::span<const BundledHeader> bundled_headers();  // sorted by path

// Everything that determines a cubin. cache_key() fills it from the process; tests vary fields.
struct KeyInputs {
  std::string name, code, specialization, nvrtc_version, target, headers_hash;
  std::vector<std::string> options;
};
std::string cache_key(const KeyInputs& in);  // SHA-256 hex of a length-prefixed serialization

std::string sha256_hex(std::string_view data);
std::string nvrtc_version();  // "13.0"
// The NVRTC options that shape the cubin (and so enter the key). PCH flags only change compile
// time, not the output, and are added by nvrtc_compile() outside the key.
std::vector<std::string> codegen_options(const std::string& target);

// One NVRTC compile, no caching. Throws Error(cuda_error) naming kernel and target, with the log.
CompiledKernel nvrtc_compile(const KernelSource& src, const std::string& target);
// Reads registers, spills, stack and static shared memory from a ptxas -v log into k.
void parse_ptxas_log(const std::string& log, CompiledKernel& k);

// Disk entries (cache.cpp). load_entry removes a corrupt entry and reports it in *was_corrupt;
// store_entry never throws (an unwritable cache only costs a warning).
// The entry must be the requested kernel: its meta.json names `src`'s kernel, specialization and `target`
// (an entry copied from another kernel under this key is corrupt, however sound its checksums).
std::optional<CompiledKernel> load_entry(const std::string& dir, const std::string& key, const KernelSource& src,
                                         const std::string& target, bool* was_corrupt);
void store_entry(const std::string& dir, const CompiledKernel& k, const KernelSource& src);

void set_pch_enabled(bool on);  // automatic PCH (--pch); default off, see nvrtc.cpp
bool pch_enabled();
std::size_t pch_heap_size();  // NVRTC's process-wide PCH heap (tests)
void set_pch_heap_size(std::size_t bytes);

}  // namespace tilepick::jit::detail
