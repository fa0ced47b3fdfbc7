// The NVRTC JIT and its disk cache (no GPU needed), and the driver layer's behaviour without a driver.
#include <gtest/gtest.h>

#include <iostream>
#include <random>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "jit/jit_internal.hpp"
#include "tilepick/env.hpp"
#include "tilepick/error.hpp"
#include "tilepick/jit.hpp"

namespace fs = std::filesystem;
using namespace tilepick;

namespace {

// A tiny kernel using a bundled header; `tag` makes name and text unique.
KernelSource tiny(const std::string& tag, const std::string& body = "x[i] = tp::from_float<tp::bf16>(s * tp::to_float(x[i]));") {
  KernelSource s;
  s.name = "tp_test_" + tag;
  s.specialization = "test " + tag;
  s.threads = 128;
  s.code = "#include \"common/types.cuh\"\n"
           "extern \"C\" __global__ void __launch_bounds__(128) " + s.name + "(tp::bf16* x, float s, int n) {\n"
           "  int i = blockIdx.x * 128 + threadIdx.x;\n  if (i < n) { " + body + " }\n}\n";
  return s;
}

std::string read_bytes(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

void write_bytes(const fs::path& p, const std::string& s) { std::ofstream(p, std::ios::binary | std::ios::trunc) << s; }

// Each test gets its own TILEPICK_CACHE_DIR and an empty in-memory cache.
class Jit : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "tilepick_jit_XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    setenv("TILEPICK_CACHE_DIR", dir_.c_str(), 1);
    unsetenv("TILEPICK_JIT_DISABLE");
    jit::clear_memory_cache();
  }
  void TearDown() override {
    unsetenv("TILEPICK_CACHE_DIR");
    unsetenv("TILEPICK_JIT_DISABLE");
    jit::clear_memory_cache();
    fs::remove_all(dir_);
  }
  fs::path entry(const std::string& key) const { return fs::path(dir_) / key.substr(0, 2) / key; }
  std::vector<std::string> temp_dirs() const {
    std::vector<std::string> out;
    for (const auto& e : fs::recursive_directory_iterator(dir_))
      if (e.path().filename().string().rfind(".tmp-", 0) == 0) out.push_back(e.path().string());
    return out;
  }
  std::string dir_;
};

}  // namespace

TEST(Sha256, KnownVectors) {
  using jit::detail::sha256_hex;
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(JitKey, ChangesWithEveryInput) {
  jit::detail::KeyInputs base{"k", "code", "spec", "13.0", "sm_90a", "0123456789abcdef", {"-std=c++17"}};
  const std::string k0 = jit::detail::cache_key(base);
  EXPECT_EQ(k0.size(), 64u);
  EXPECT_EQ(jit::detail::cache_key(base), k0);
  auto differs = [&](auto change) {
    auto in = base;
    change(in);
    return jit::detail::cache_key(in) != k0;
  };
  EXPECT_TRUE(differs([](auto& in) { in.name = "k2"; }));
  EXPECT_TRUE(differs([](auto& in) { in.code = "code "; }));
  EXPECT_TRUE(differs([](auto& in) { in.specialization = "spec2"; }));
  EXPECT_TRUE(differs([](auto& in) { in.nvrtc_version = "13.1"; }));
  EXPECT_TRUE(differs([](auto& in) { in.target = "sm_80"; }));
  EXPECT_TRUE(differs([](auto& in) { in.headers_hash = "0123456789abcdee"; }));
  EXPECT_TRUE(differs([](auto& in) { in.options.push_back("-lineinfo"); }));
  // Field boundaries are unambiguous.
  EXPECT_TRUE(differs([](auto& in) { in.name = "kc", in.code = "ode"; }));
  EXPECT_TRUE(differs([](auto& in) { in.options = {"-std=c++17 -lineinfo"}; }));
}

TEST(JitKey, PublicKeyDependsOnSourceAndTargetOnly) {
  KernelSource a = tiny("key");
  const std::string k = jit::cache_key(a, "sm_90a");
  EXPECT_NE(jit::cache_key(a, "sm_80"), k);
  KernelSource b = a;
  b.code += "\n";
  EXPECT_NE(jit::cache_key(b, "sm_90a"), k);
  b = a;
  b.specialization += "x";
  EXPECT_NE(jit::cache_key(b, "sm_90a"), k);
  // Not the cache directory, not the time.
  setenv("TILEPICK_CACHE_DIR", "/somewhere/else", 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(jit::cache_key(a, "sm_90a"), k);
  unsetenv("TILEPICK_CACHE_DIR");
  EXPECT_EQ(jit::cache_key(a, "sm_90a"), k);
}

TEST(JitHeaders, BundledAndHashed) {
  auto paths = jit::bundled_header_paths();
  EXPECT_TRUE(std::is_sorted(paths.begin(), paths.end()));
  EXPECT_NE(std::find(paths.begin(), paths.end(), "common/types.cuh"), paths.end());
  for (const auto& h : jit::detail::bundled_headers()) {
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(h.data)).size(), h.size) << h.path << " has a NUL byte";
    const bool same = read_bytes(fs::path(TILEPICK_TEST_GOLDEN_DIR) / "../../kernels" / h.path) ==
                      std::string(reinterpret_cast<const char*>(h.data), h.size);
    EXPECT_TRUE(same) << "kernels/" << h.path << " changed since the build: the bundle is stale";
  }
  EXPECT_EQ(jit::bundled_headers_hash().size(), 16u);
}

TEST(JitPtxas, ParsesStatistics) {
  jit::CompiledKernel k;
  jit::detail::parse_ptxas_log(
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function 'k' for 'sm_90a'\n"
      "ptxas info    : Function properties for k\n"
      "ptxas         .     24 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads\n"
      "ptxas info    : Used 168 registers, used 1 barriers, 16384 bytes smem, 360 bytes cmem[0]\n",
      k);
  EXPECT_EQ(k.registers, 168);
  EXPECT_EQ(k.stack_bytes, 24);
  EXPECT_EQ(k.spill_stores, 8);
  EXPECT_EQ(k.spill_loads, 12);
  EXPECT_EQ(k.static_smem, 16384);
}

TEST_F(Jit, RealCompileForAmpereAndHopper) {
  for (const char* target : {"sm_80", "sm_90a"}) {
    jit::CompiledKernel k = jit::compile(tiny("real"), target);
    ASSERT_GE(k.cubin.size(), 4u);
    EXPECT_EQ(std::string(k.cubin.data(), 4), "\x7f" "ELF") << target;
    EXPECT_GT(k.registers, 0) << k.log;
    EXPECT_EQ(k.spill_stores, 0);
    EXPECT_FALSE(k.from_cache);
    EXPECT_GT(k.compile_seconds, 0);
    EXPECT_EQ(k.target, target);
    EXPECT_NE(k.log.find("Used"), std::string::npos) << k.log;
    EXPECT_TRUE(fs::exists(entry(k.key) / "kernel.cubin"));
    EXPECT_TRUE(fs::exists(entry(k.key) / "meta.json"));
  }
}

TEST_F(Jit, MemoryThenDiskHits) {
  auto s0 = jit::jit_stats();
  jit::CompiledKernel a = jit::compile(tiny("hits"), "sm_90a");
  jit::CompiledKernel b = jit::compile(tiny("hits"), "sm_90a");
  jit::clear_memory_cache();
  jit::CompiledKernel c = jit::compile(tiny("hits"), "sm_90a");
  auto s1 = jit::jit_stats();
  EXPECT_EQ(s1.compiles - s0.compiles, 1u);
  EXPECT_EQ(s1.memory_hits - s0.memory_hits, 1u);
  EXPECT_EQ(s1.disk_hits - s0.disk_hits, 1u);
  EXPECT_TRUE(b.from_cache);
  EXPECT_TRUE(c.from_cache);
  EXPECT_EQ(a.cubin, c.cubin);
  EXPECT_EQ(a.registers, c.registers);
  EXPECT_EQ(a.log, c.log);
  auto list = jit::cache_list();
  ASSERT_EQ(list.size(), 1u);
  EXPECT_TRUE(list[0].valid);
  EXPECT_EQ(list[0].key, a.key);
  EXPECT_EQ(list[0].name, "tp_test_hits");
  EXPECT_EQ(list[0].cubin_bytes, a.cubin.size());
}

TEST_F(Jit, PchDoesNotChangeTheCubin) {
  const bool was = jit::detail::pch_enabled();
  jit::detail::set_pch_enabled(false);
  auto without = jit::detail::nvrtc_compile(tiny("pch"), "sm_90a");
  jit::detail::set_pch_enabled(true);
  auto with1 = jit::detail::nvrtc_compile(tiny("pch"), "sm_90a");
  auto with2 = jit::detail::nvrtc_compile(tiny("pch2"), "sm_90a");  // may use the PCH of the first
  jit::detail::set_pch_enabled(was);
  EXPECT_EQ(without.cubin, with1.cubin);
  EXPECT_EQ(with2.registers, with1.registers);
}

TEST_F(Jit, PchHeapExhaustionGrowsTheHeap) {
  const bool was = jit::detail::pch_enabled();
  const std::size_t heap = jit::detail::pch_heap_size();
  jit::detail::set_pch_enabled(true);
  jit::detail::set_pch_heap_size(4096);
  KernelSource s = tiny("pchheap");
  s.code = "#include \"gemm/params.cuh\"\n" + s.code;  // an include prefix no other test made a PCH of
  auto k = jit::detail::nvrtc_compile(s, "sm_80");  // still compiles
  EXPECT_NE(k.log.find("[tilepick] PCH heap exhausted; resized"), std::string::npos) << k.log;
  EXPECT_GT(jit::detail::pch_heap_size(), 4096u);
  jit::detail::set_pch_heap_size(heap);
  jit::detail::set_pch_enabled(was);
  EXPECT_GT(k.registers, 0);
}

// Each defect of a disk entry is detected, the entry removed and rebuilt by a real compile.
class JitCorrupt : public Jit, public ::testing::WithParamInterface<const char*> {};

TEST_P(JitCorrupt, DetectedAndRebuilt) {
  const std::string how = GetParam();
  jit::CompiledKernel good = jit::compile(tiny("corrupt"), "sm_80");
  fs::path e = entry(good.key);
  std::string cubin = read_bytes(e / "kernel.cubin");
  if (how == "truncate") write_bytes(e / "kernel.cubin", cubin.substr(0, cubin.size() / 2));
  if (how == "flip") cubin[cubin.size() / 2] ^= 0x01, write_bytes(e / "kernel.cubin", cubin);
  if (how == "garbage_meta") write_bytes(e / "meta.json", "{\"format\": \"tilepick-jit-1\", \"key\": ");
  if (how == "wrong_key_meta") {
    std::string meta = read_bytes(e / "meta.json");
    meta.replace(meta.find(good.key), 4, "0000");
    write_bytes(e / "meta.json", meta);
  }
  if (how == "missing_cubin") fs::remove(e / "kernel.cubin");
  if (how == "missing_meta") fs::remove(e / "meta.json");
  auto listed = jit::cache_list();
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_FALSE(listed[0].valid);

  jit::clear_memory_cache();
  auto s0 = jit::jit_stats();
  jit::CompiledKernel again = jit::compile(tiny("corrupt"), "sm_80");
  auto s1 = jit::jit_stats();
  EXPECT_EQ(s1.compiles - s0.compiles, 1u);
  EXPECT_EQ(s1.corrupt_removed - s0.corrupt_removed, 1u);
  EXPECT_EQ(s1.disk_hits - s0.disk_hits, 0u);
  EXPECT_FALSE(again.from_cache);
  EXPECT_EQ(again.cubin, good.cubin);
  listed = jit::cache_list();
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_TRUE(listed[0].valid);
}

// Fuzzed entries (seeded byte flips, cut spans and truncation of meta.json or the cubin): every
// compile() after one serves the very kernel that was built, from the entry when the damage left it
// intact in meaning, else by rebuilding it; never an error, never another cubin.
TEST_F(Jit, FuzzedEntriesServeTheSameKernelOrAreRebuilt) {
  const jit::CompiledKernel good = jit::compile(tiny("fuzz"), "sm_80");
  const fs::path e = entry(good.key);
  const std::string meta = read_bytes(e / "meta.json"), cubin = read_bytes(e / "kernel.cubin");
  std::mt19937_64 rng(9);
  auto pick = [&](std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng); };
  std::size_t served = 0, rebuilt = 0;
  for (int i = 0; i < 40; ++i) {
    const bool on_meta = i % 4 != 3;
    std::string bytes = on_meta ? meta : cubin;
    switch (pick(3)) {
      case 0: bytes[pick(bytes.size())] ^= static_cast<char>(1 + pick(255)); break;
      case 1: bytes.erase(pick(bytes.size()), 1 + pick(8)); break;
      default: bytes.resize(pick(bytes.size()));
    }
    write_bytes(e / (on_meta ? "meta.json" : "kernel.cubin"), bytes);
    jit::clear_memory_cache();
    const jit::CompiledKernel k = jit::compile(tiny("fuzz"), "sm_80");
    EXPECT_EQ(k.cubin, good.cubin) << "mutation " << i;
    (k.from_cache ? served : rebuilt) += 1;
    write_bytes(e / "meta.json", meta);  // back to the good entry for the next mutation
    write_bytes(e / "kernel.cubin", cubin);
  }
  std::cout << "fuzz jit cache entries: 40 inputs, " << served << " served unchanged, " << rebuilt
            << " detected and rebuilt, 0 errors, 0 other kernels\n";
  EXPECT_GT(rebuilt, 20u);
}

// A kernel pack is another cache directory: import copies its valid entries of this build, which
// later compiles then load without NVRTC; damaged entries and other builds' are counted, not copied.
TEST_F(Jit, ImportCopiesAPacksValidEntriesOfThisBuild) {
  const std::string pack = dir_ + "/pack", cache = dir_ + "/cache";
  setenv("TILEPICK_CACHE_DIR", pack.c_str(), 1);
  const jit::CompiledKernel a = jit::compile(tiny("pack_a"), "sm_80");
  const jit::CompiledKernel b = jit::compile(tiny("pack_b", "x[i] = x[i];"), "sm_80");
  const jit::CompiledKernel c = jit::compile(tiny("pack_c", "x[i] = tp::from_float<tp::bf16>(0.f);"), "sm_80");
  auto entry_in = [](const std::string& d, const std::string& key) { return fs::path(d) / key.substr(0, 2) / key; };
  std::string cubin = read_bytes(entry_in(pack, b.key) / "kernel.cubin");
  cubin[cubin.size() / 2] ^= 0x01;  // damaged
  write_bytes(entry_in(pack, b.key) / "kernel.cubin", cubin);
  std::string meta = read_bytes(entry_in(pack, c.key) / "meta.json");  // another build's headers
  meta.replace(meta.find(jit::bundled_headers_hash()), 4, "0000");
  write_bytes(entry_in(pack, c.key) / "meta.json", meta);

  setenv("TILEPICK_CACHE_DIR", cache.c_str(), 1);
  jit::clear_memory_cache();
  const jit::ImportStats st = jit::cache_import(pack);
  EXPECT_EQ(st.imported, 1u);
  EXPECT_EQ(st.invalid, 1u);
  EXPECT_NE(st.first_invalid.find("checksum"), std::string::npos) << st.first_invalid;
  EXPECT_EQ(st.other_build, 1u);
  const auto s0 = jit::jit_stats();
  const jit::CompiledKernel again = jit::compile(tiny("pack_a"), "sm_80");
  EXPECT_TRUE(again.from_cache);
  EXPECT_EQ(again.cubin, a.cubin);
  EXPECT_EQ(jit::jit_stats().compiles, s0.compiles);
  EXPECT_EQ(jit::cache_import(pack).present, 1u);  // a second import copies nothing
  EXPECT_THROW(jit::cache_import(dir_ + "/nowhere"), NotFound);
}

INSTANTIATE_TEST_SUITE_P(Defects, JitCorrupt,
                         ::testing::Values("truncate", "flip", "garbage_meta", "wrong_key_meta", "missing_cubin",
                                           "missing_meta"));

// An entry whose cubin and meta.json come from another kernel, with only the key rewritten, passes
// every checksum: the loader still refuses it because it names another kernel, and rebuilds.
TEST_F(Jit, ForeignEntryUnderTheKeyIsRebuilt) {
  const jit::CompiledKernel a = jit::compile(tiny("mine"), "sm_80");
  const jit::CompiledKernel b = jit::compile(tiny("other", "x[i] = x[i];"), "sm_80");
  ASSERT_NE(a.cubin, b.cubin);
  std::string meta = read_bytes(entry(b.key) / "meta.json");
  meta.replace(meta.find(b.key), b.key.size(), a.key);
  write_bytes(entry(a.key) / "meta.json", meta);
  write_bytes(entry(a.key) / "kernel.cubin", read_bytes(entry(b.key) / "kernel.cubin"));
  jit::clear_memory_cache();
  auto s0 = jit::jit_stats();
  const jit::CompiledKernel again = jit::compile(tiny("mine"), "sm_80");
  auto s1 = jit::jit_stats();
  EXPECT_EQ(again.name, a.name);
  EXPECT_EQ(again.cubin, a.cubin);
  EXPECT_FALSE(again.from_cache);
  EXPECT_EQ(s1.corrupt_removed - s0.corrupt_removed, 1u);
}

TEST_F(Jit, DisabledMissNamesTheKernel) {
  setenv("TILEPICK_JIT_DISABLE", "1", 1);
  try {
    jit::compile(tiny("disabled"), "sm_90a");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::not_found);
    EXPECT_NE(std::string(e.what()).find("tp_test_disabled"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("TILEPICK_JIT_DISABLE"), std::string::npos) << e.what();
  }
  // A disk hit needs no compile.
  unsetenv("TILEPICK_JIT_DISABLE");
  jit::compile(tiny("disabled"), "sm_90a");
  jit::clear_memory_cache();
  setenv("TILEPICK_JIT_DISABLE", "1", 1);
  EXPECT_TRUE(jit::compile(tiny("disabled"), "sm_90a").from_cache);
  setenv("TILEPICK_JIT_DISABLE", "yes", 1);
  EXPECT_THROW(env::jit_disabled(), Error);
}

TEST_F(Jit, ConcurrentWritersLeaveOneEntryAndNoTempDirs) {
  jit::CompiledKernel k = jit::compile(tiny("race"), "sm_90a");
  // Late writers of the same entry lose the rename and discard their temp dirs.
  std::vector<std::thread> writers;
  for (int i = 0; i < 4; ++i) writers.emplace_back([&] { jit::detail::store_entry(dir_, k, tiny("race")); });
  for (auto& t : writers) t.join();
  EXPECT_TRUE(temp_dirs().empty());
  auto listed = jit::cache_list();
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_TRUE(listed[0].valid);
}

TEST_F(Jit, CompileAllPreservesOrderAndReportsTheLog) {
  std::vector<KernelSource> srcs;
  for (int i = 0; i < 5; ++i) srcs.push_back(tiny("order" + std::to_string(i), "x[i] = tp::from_float<tp::bf16>(" + std::to_string(i) + ".f);"));
  srcs.push_back(srcs[1]);  // a duplicate compiles once
  auto out = jit::compile_all(srcs, "sm_90a", 3);
  ASSERT_EQ(out.size(), srcs.size());
  for (std::size_t i = 0; i < srcs.size(); ++i) EXPECT_EQ(out[i].name, srcs[i].name);
  EXPECT_EQ(out[5].cubin, out[1].cubin);
  EXPECT_TRUE(temp_dirs().empty());
  EXPECT_EQ(jit::cache_list().size(), 5u);

  srcs.insert(srcs.begin() + 2, tiny("broken", "x[i] = undeclared_thing;"));
  srcs.push_back(tiny("late"));
  try {
    jit::compile_all(srcs, "sm_90a", 3);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_EQ(e.status(), Status::cuda_error);
    EXPECT_NE(msg.find("tp_test_broken"), std::string::npos) << msg;
    EXPECT_NE(msg.find("sm_90a"), std::string::npos) << msg;
    EXPECT_NE(msg.find("undeclared_thing"), std::string::npos) << msg;  // the NVRTC log
  }
  // The others were still built.
  auto s0 = jit::jit_stats();
  jit::compile(tiny("late"), "sm_90a");
  EXPECT_EQ(jit::jit_stats().memory_hits - s0.memory_hits, 1u);
}

TEST_F(Jit, ClearRemovesOnlyCacheEntries) {
  jit::compile(tiny("clear1"), "sm_80");
  jit::compile(tiny("clear2"), "sm_80");
  write_bytes(fs::path(dir_) / "README", "not ours");
  EXPECT_EQ(jit::cache_list().size(), 2u);
  EXPECT_EQ(jit::cache_clear(), 2u);
  EXPECT_TRUE(jit::cache_list().empty());
  EXPECT_TRUE(fs::exists(fs::path(dir_) / "README"));
  auto s0 = jit::jit_stats();
  jit::compile(tiny("clear1"), "sm_80");  // memory was cleared too
  EXPECT_EQ(jit::jit_stats().compiles - s0.compiles, 1u);
}

TEST_F(Jit, UnwritableCacheOnlyWarns) {
  write_bytes(fs::path(dir_) / "file", "x");
  setenv("TILEPICK_CACHE_DIR", (fs::path(dir_) / "file").c_str(), 1);  // not a directory
  jit::CompiledKernel k = jit::compile(tiny("unwritable"), "sm_80");
  EXPECT_GT(k.cubin.size(), 0u);
  EXPECT_TRUE(jit::compile(tiny("unwritable"), "sm_80").from_cache);  // still cached in memory
}

TEST(CudaDriver, AbsentDriverGivesClearErrors) {
  std::string why;
  if (cuda::driver_available(&why)) GTEST_SKIP() << "a CUDA driver is present";
  EXPECT_FALSE(why.empty());
  try {
    cuda::DeviceBuffer buf(1024);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), Status::cuda_error);
    EXPECT_NE(std::string(e.what()).find("no CUDA driver"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("DeviceBuffer"), std::string::npos) << e.what();
  }
  EXPECT_THROW(cuda::Timer(), Error);
  EXPECT_THROW(cuda::synchronize(), Error);
  EXPECT_THROW(cuda::init_device(0), Error);
}
