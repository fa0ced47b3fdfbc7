// The content-addressed disk cache of compiled kernels:
//   <cache_dir>/<key[0:2]>/<key>/{kernel.cubin, meta.json}
// Entries are written to a temp dir beside their final place and renamed into it: readers see
// whole entries or none, without locks. Reads check key, size and checksum; a bad entry is removed.
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <sstream>

#include "jit/jit_internal.hpp"
#include "tilepick/env.hpp"
#include "tilepick/error.hpp"

namespace fs = std::filesystem;

namespace tilepick::jit {
namespace detail {
namespace {

// SHA-256 (FIPS 180-4). A 64-bit FNV would make key collisions plausible in a cache that trusts
// keys blindly; a cryptographic hash makes them practically impossible. Written here rather than
// taken from a library because the runtime stays dependency-free and this is ~40 lines.
class Sha256 {
 public:
  void update(const void* data, std::size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    total_ += n;
    while (n > 0) {
      std::size_t take = std::min(n, std::size_t{64} - fill_);
      std::copy(p, p + take, block_.begin() + fill_);
      fill_ += take, p += take, n -= take;
      if (fill_ == 64) compress(), fill_ = 0;
    }
  }
  std::string hex() {
    std::uint64_t bits = total_ * 8;
    unsigned char pad = 0x80;
    update(&pad, 1);
    pad = 0;
    while (fill_ != 56) update(&pad, 1);
    for (int i = 7; i >= 0; --i) {
      unsigned char b = static_cast<unsigned char>(bits >> (8 * i));
      update(&b, 1);
    }
    std::string out;
    char buf[9];
    for (std::uint32_t v : h_) std::snprintf(buf, sizeof buf, "%08x", v), out += buf;
    return out;
  }

 private:
  static std::uint32_t rotr(std::uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }
  void compress() {
    static constexpr std::uint32_t k[64] = {
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};
    std::uint32_t w[64];
    for (int i = 0; i < 16; ++i)
      w[i] = std::uint32_t(block_[4 * i]) << 24 | std::uint32_t(block_[4 * i + 1]) << 16 |
             std::uint32_t(block_[4 * i + 2]) << 8 | block_[4 * i + 3];
    for (int i = 16; i < 64; ++i) {
      std::uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
      std::uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    auto v = h_;  // a b c d e f g h
    for (int i = 0; i < 64; ++i) {
      std::uint32_t t1 = v[7] + (rotr(v[4], 6) ^ rotr(v[4], 11) ^ rotr(v[4], 25)) + ((v[4] & v[5]) ^ (~v[4] & v[6])) +
                         k[i] + w[i];
      std::uint32_t t2 = (rotr(v[0], 2) ^ rotr(v[0], 13) ^ rotr(v[0], 22)) + ((v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]));
      for (int j = 7; j > 0; --j) v[j] = v[j - 1];
      v[4] += t1;
      v[0] = t1 + t2;
    }
    for (int i = 0; i < 8; ++i) h_[i] += v[i];
  }
  std::array<std::uint32_t, 8> h_{0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                  0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  std::array<unsigned char, 64> block_{};
  std::size_t fill_ = 0;
  std::uint64_t total_ = 0;
};

constexpr const char* kFormat = "tilepick-jit-1";

fs::path entry_path(const std::string& dir, const std::string& key) { return fs::path(dir) / key.substr(0, 2) / key; }

bool is_hex(const std::string& s, std::size_t n) {
  return s.size() == n && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

std::string read_file(const fs::path& p, bool* ok) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  *ok = static_cast<bool>(f);
  return s.str();
}

void write_file(const fs::path& p, const void* data, std::size_t n) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(static_cast<const char*>(data), static_cast<std::streamsize>(n));
  f.close();
  if (!f) throw Error(Status::io_error, "cannot write " + p.string());
}

std::nullopt_t bad(std::string* why, std::string reason) {
  *why = std::move(reason);
  return std::nullopt;
}

// Reads and checks one entry; on any defect returns nullopt with the reason in *why.
std::optional<CompiledKernel> read_entry(const fs::path& p, const std::string& key, nlohmann::json* meta_out,
                                         std::string* why) {
  bool ok = false;
  std::string meta_text = read_file(p / "meta.json", &ok);
  if (!ok) return bad(why, "meta.json missing or unreadable");
  nlohmann::json meta = nlohmann::json::parse(meta_text, nullptr, false);
  if (meta.is_discarded() || !meta.is_object()) return bad(why, "meta.json is not valid JSON");
  if (meta_out) *meta_out = meta;
  try {
    if (meta.at("format") != kFormat) return bad(why, "unknown format");
    if (meta.at("key") != key) return bad(why, "key in meta.json does not match the directory");
    std::string cubin = read_file(p / "kernel.cubin", &ok);
    if (!ok) return bad(why, "kernel.cubin missing or unreadable");
    if (cubin.size() != meta.at("cubin_bytes").get<std::size_t>())
      return bad(why, "kernel.cubin has " + std::to_string(cubin.size()) + " bytes, meta.json says " +
                    meta.at("cubin_bytes").dump());
    if (sha256_hex(cubin) != meta.at("cubin_sha256").get<std::string>())
      return bad(why, "kernel.cubin checksum mismatch");
    CompiledKernel k;
    k.key = key;
    k.name = meta.at("name");
    k.target = meta.at("target");
    k.cubin.assign(cubin.begin(), cubin.end());
    k.compile_seconds = meta.at("compile_seconds");
    k.registers = meta.at("registers");
    k.spill_stores = meta.at("spill_stores");
    k.spill_loads = meta.at("spill_loads");
    k.stack_bytes = meta.at("stack_bytes");
    k.static_smem = meta.at("static_smem");
    k.log = meta.at("log");
    k.from_cache = true;
    return k;
  } catch (const nlohmann::json::exception& e) {
    return bad(why, std::string("meta.json: ") + e.what());
  }
}

std::string unique_suffix() {
  static std::atomic<unsigned> counter{0};
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return std::to_string(::getpid()) + "-" + std::to_string(counter++) + "-" + std::to_string(rng() % 1000000007);
}

}  // namespace

std::string sha256_hex(std::string_view data) {
  Sha256 s;
  s.update(data.data(), data.size());
  return s.hex();
}

std::string cache_key(const KeyInputs& in) {
  // Length-prefixed fields: no two different inputs serialize alike.
  Sha256 s;
  auto field = [&](std::string_view tag, std::string_view value) {
    std::string head = std::string(tag) + ":" + std::to_string(value.size()) + ":";
    s.update(head.data(), head.size());
    s.update(value.data(), value.size());
  };
  field("tilepick-jit-key", "1");
  field("name", in.name);
  field("code", in.code);
  field("specialization", in.specialization);
  field("nvrtc", in.nvrtc_version);
  field("target", in.target);
  for (const auto& o : in.options) field("option", o);
  field("headers", in.headers_hash);
  return s.hex();
}

std::optional<CompiledKernel> load_entry(const std::string& dir, const std::string& key, const KernelSource& src,
                                         const std::string& target, bool* was_corrupt) {
  *was_corrupt = false;
  fs::path p = entry_path(dir, key);
  std::error_code ec;
  if (!fs::is_directory(p, ec)) return std::nullopt;
  std::string why;
  nlohmann::json meta;
  if (auto k = read_entry(p, key, &meta, &why)) {
    if (k->name == src.name && k->target == target && meta.value("specialization", "") == src.specialization) return k;
    if (env::log_level() >= 1)
      std::cerr << "tilepick: warning: JIT cache entry " << p.string() << " holds " << k->name << " (" << k->target
                << "), not the requested " << src.name << " (" << target << "): rebuilt\n";
  }
  *was_corrupt = true;
  fs::remove_all(p, ec);  // rebuilt by the caller
  return std::nullopt;
}

void store_entry(const std::string& dir, const CompiledKernel& k, const KernelSource& src) {
  fs::path final_path = entry_path(dir, k.key);
  fs::path tmp = final_path.parent_path() / (".tmp-" + k.key.substr(0, 16) + "-" + unique_suffix());
  std::error_code ec;
  try {
    fs::create_directories(tmp);
    nlohmann::json meta = {
        {"format", kFormat},           {"key", k.key},
        {"name", k.name},              {"target", k.target},
        {"specialization", src.specialization},
        {"nvrtc_version", nvrtc_version()},
        {"options", codegen_options(k.target)},
        {"headers_hash", bundled_headers_hash()},
        {"compile_seconds", k.compile_seconds},
        {"registers", k.registers},    {"spill_stores", k.spill_stores},
        {"spill_loads", k.spill_loads}, {"stack_bytes", k.stack_bytes},
        {"static_smem", k.static_smem}, {"cubin_bytes", k.cubin.size()},
        {"cubin_sha256", sha256_hex(std::string_view(k.cubin.data(), k.cubin.size()))},
        {"log", k.log}};
    write_file(tmp / "kernel.cubin", k.cubin.data(), k.cubin.size());
    std::string text = meta.dump(1);
    write_file(tmp / "meta.json", text.data(), text.size());
    fs::rename(tmp, final_path, ec);  // fails when another writer got there first: keep theirs
  } catch (const std::exception& e) {  // an unwritable cache costs a warning, not the compile
    std::cerr << "tilepick: warning: cannot store " << k.name << " in the JIT cache " << dir << ": " << e.what()
              << "\n";
  }
  fs::remove_all(tmp, ec);
}

}  // namespace detail

std::string cache_key(const KernelSource& src, const std::string& target) {
  return detail::cache_key(detail::KeyInputs{src.name, src.code, src.specialization, detail::nvrtc_version(), target,
                                             bundled_headers_hash(), detail::codegen_options(target)});
}

std::string cache_dir() {
  if (std::string d = env::cache_dir_override(); !d.empty()) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/tilepick";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/tilepick";
  return (fs::temp_directory_path() / "tilepick-cache").string();
}

namespace {

// Calls f(path, key) for every entry directory: <dir>/<2 hex>/<64 hex>, temp dirs excluded.
template <class F>
void for_each_entry(const std::string& dir, F f) {
  std::error_code ec;
  std::vector<fs::path> paths;
  for (const auto& top : fs::directory_iterator(dir, ec)) {
    std::string t = top.path().filename().string();
    if (!top.is_directory(ec) || !detail::is_hex(t, 2)) continue;
    for (const auto& e : fs::directory_iterator(top.path(), ec)) {
      std::string k = e.path().filename().string();
      if (e.is_directory(ec) && detail::is_hex(k, 64) && k.compare(0, 2, t) == 0) paths.push_back(e.path());
    }
  }
  std::sort(paths.begin(), paths.end());
  for (const auto& p : paths) f(p, p.filename().string());
}

}  // namespace

std::vector<CacheEntryInfo> cache_list() {
  std::vector<CacheEntryInfo> out;
  for_each_entry(cache_dir(), [&](const fs::path& p, const std::string& key) {
    CacheEntryInfo info;
    info.key = key;
    nlohmann::json meta;
    std::string why;
    auto k = detail::read_entry(p, key, &meta, &why);
    info.valid = k.has_value();
    auto get = [&](const char* f, auto fallback) {
      try {
        return meta.is_object() ? meta.value(f, fallback) : fallback;
      } catch (const nlohmann::json::exception&) {
        return fallback;
      }
    };
    info.name = get("name", std::string("?"));
    info.target = get("target", std::string("?"));
    info.cubin_bytes = k ? k->cubin.size() : 0;
    info.compile_seconds = get("compile_seconds", 0.0);
    info.registers = get("registers", -1);
    info.spill_stores = get("spill_stores", -1);
    out.push_back(std::move(info));
  });
  return out;
}

ImportStats cache_import(const std::string& from) {
  ImportStats st;
  const std::string dir = cache_dir();
  std::error_code ec;
  if (!fs::is_directory(from, ec)) throw NotFound("cache import: " + from + " is not a directory");
  for_each_entry(from, [&](const fs::path& p, const std::string& key) {
    nlohmann::json meta;
    std::string why;
    if (!detail::read_entry(p, key, &meta, &why)) {
      if (st.invalid++ == 0) st.first_invalid = p.string() + ": " + why;
      return;
    }
    if (meta.value("headers_hash", "") != bundled_headers_hash() || meta.value("nvrtc_version", "") != detail::nvrtc_version()) {
      ++st.other_build;
      return;
    }
    const fs::path dest = detail::entry_path(dir, key);
    std::string ignored;
    if (fs::is_directory(dest, ec) && detail::read_entry(dest, key, nullptr, &ignored)) {
      ++st.present;
      return;
    }
    const fs::path tmp = dest.parent_path() / (".tmp-" + key.substr(0, 16) + "-" + detail::unique_suffix());
    fs::create_directories(tmp, ec);
    fs::copy_file(p / "kernel.cubin", tmp / "kernel.cubin", ec);
    if (!ec) fs::copy_file(p / "meta.json", tmp / "meta.json", ec);
    if (ec) {
      fs::remove_all(tmp, ec);
      throw Error(Status::io_error, "cache import: cannot write into " + dir + ": " + ec.message());
    }
    fs::remove_all(dest, ec);  // a damaged entry under that key
    fs::rename(tmp, dest, ec);
    if (ec) fs::remove_all(tmp, ec);  // another writer got there first
    else ++st.imported;
  });
  clear_memory_cache();
  return st;
}

std::size_t cache_clear() {
  std::size_t n = 0;
  std::string dir = cache_dir();
  for_each_entry(dir, [&](const fs::path& p, const std::string&) {
    std::error_code ec;
    if (fs::remove_all(p, ec) > 0) ++n;
  });
  // Leftover temp dirs of crashed writers, then the emptied two-letter directories.
  std::error_code ec;
  for (const auto& top : fs::directory_iterator(dir, ec)) {
    if (!top.is_directory(ec) || !detail::is_hex(top.path().filename().string(), 2)) continue;
    for (const auto& e : fs::directory_iterator(top.path(), ec))
      if (e.path().filename().string().rfind(".tmp-", 0) == 0) fs::remove_all(e.path(), ec);
    fs::remove(top.path(), ec);  // only succeeds when empty
  }
  clear_memory_cache();
  return n;
}

}  // namespace tilepick::jit
