// Architecture specs: loading data/arch/*.json, lookup, and refinement by the live device.
#include "tilepick/arch.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "tilepick/env.hpp"
#include "tilepick/error.hpp"

namespace tilepick {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Reads required keys of one JSON object, remembering which keys were used so that leftovers
// (typos) can be reported. Every error names the file and the key.
class Reader {
 public:
  Reader(const json& j, std::string path) : j_(j), path_(std::move(path)) {}

  const json& at(const char* key, bool ok_type(const json&), const char* type) {
    seen_.insert(key);
    auto it = j_.find(key);
    if (it == j_.end()) fail(key, std::string("missing key '") + key + "'");
    if (!ok_type(*it))
      fail(key, std::string("key '") + key + "' must be " + type + ", got " + it->type_name() +
                    " " + it->dump());
    return *it;
  }
  void get(const char* key, std::string& out) {
    out = at(key, [](const json& v) { return v.is_string(); }, "a string").get<std::string>();
  }
  void get(const char* key, bool& out) {
    out = at(key, [](const json& v) { return v.is_boolean(); }, "a boolean").get<bool>();
  }
  void get(const char* key, double& out) {
    out = at(key, [](const json& v) { return v.is_number(); }, "a number").get<double>();
    if (out < 0) fail(key, std::string("key '") + key + "' must be >= 0");
  }
  void get(const char* key, std::int64_t& out) {
    out = at(key, [](const json& v) { return v.is_number_integer(); }, "an integer")
              .get<std::int64_t>();
    if (out < 0) fail(key, std::string("key '") + key + "' must be >= 0");
  }
  void get(const char* key, int& out) {
    std::int64_t v = 0;
    get(key, v);
    if (v > std::numeric_limits<int>::max())
      fail(key, std::string("key '") + key + "' is out of range for int");
    out = static_cast<int>(v);
  }
  void get(const char* key, std::vector<std::string>& out) {
    const json& v = at(
        key,
        [](const json& a) {
          return a.is_array() && std::all_of(a.begin(), a.end(),
                                             [](const json& s) { return s.is_string(); });
        },
        "an array of strings");
    out = v.get<std::vector<std::string>>();
  }
  // Keys present in the file but never read: almost always a typo.
  void reject_unknown() {
    std::string bad;
    for (auto it = j_.begin(); it != j_.end(); ++it)
      if (!seen_.count(it.key())) bad += (bad.empty() ? "'" : ", '") + it.key() + "'";
    if (!bad.empty()) fail(bad, "unknown key(s) " + bad + " (typo? keys mirror ArchSpec fields)");
  }
  [[noreturn]] void fail(const std::string& key, const std::string& msg) const {
    throw ParseError(key, path_ + ": " + msg);
  }

 private:
  const json& j_;
  std::string path_;
  std::set<std::string> seen_;
};

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string names_of(const std::vector<ArchSpec>& specs) {
  std::string out;
  for (const auto& s : specs) out += (out.empty() ? "" : ", ") + s.name + " (" + s.sm + ")";
  return out.empty() ? "none" : out;
}

// Length of the longest `match` substring found in the (lower-cased) device name; 0 if none.
std::size_t match_score(const ArchSpec& s, const std::string& lname) {
  std::size_t best = 0;
  for (const auto& m : s.match)
    if (!m.empty() && lname.find(lower(m)) != std::string::npos) best = std::max(best, m.size());
  return best;
}

}  // namespace

double ArchSpec::peak_tflops(DType input) const {
  switch (input) {
    case DType::f16: return peak_f16;
    case DType::bf16: return peak_bf16;
    case DType::f32: return peak_tf32;
    case DType::e4m3:
    case DType::e5m2: return peak_fp8;
  }
  return 0;
}

double ArchSpec::ridge_flops_per_byte(DType input) const {
  // TFLOP/s over GB/s: (1e12 flop/s) / (1e9 B/s) = 1e3 flop per byte.
  return mem_bw_gbps > 0 ? peak_tflops(input) * 1e3 / mem_bw_gbps : 0;
}

ArchSpec load_arch_spec(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw NotFound("cannot open arch spec '" + path + "'");
  json j;
  try {
    j = json::parse(in);
  } catch (const json::parse_error& e) {
    throw ParseError("", path + ": invalid JSON: " + e.what());
  }
  if (!j.is_object()) throw ParseError("", path + ": top level must be a JSON object");

  ArchSpec s;
  Reader r(j, path);
  std::string notes;  // documentation only (datasheet citation), not an ArchSpec field
  r.get("notes", notes);
  r.get("name", s.name);
  r.get("device_name", s.device_name);
  r.get("match", s.match);
  r.get("cc_major", s.cc_major);
  r.get("cc_minor", s.cc_minor);
  r.get("sm", s.sm);
  r.get("jit_target", s.jit_target);
  r.get("sm_count", s.sm_count);
  r.get("boost_clock_mhz", s.boost_clock_mhz);
  r.get("mem_clock_mhz", s.mem_clock_mhz);
  r.get("regs_per_sm", s.regs_per_sm);
  r.get("regs_per_block", s.regs_per_block);
  r.get("max_regs_per_thread", s.max_regs_per_thread);
  r.get("smem_per_sm", s.smem_per_sm);
  r.get("smem_per_block", s.smem_per_block);
  r.get("smem_per_block_optin", s.smem_per_block_optin);
  r.get("max_threads_per_sm", s.max_threads_per_sm);
  r.get("max_threads_per_block", s.max_threads_per_block);
  r.get("max_blocks_per_sm", s.max_blocks_per_sm);
  r.get("l2_bytes", s.l2_bytes);
  r.get("mem_bw_gbps", s.mem_bw_gbps);
  r.get("peak_f16", s.peak_f16);
  r.get("peak_bf16", s.peak_bf16);
  r.get("peak_tf32", s.peak_tf32);
  r.get("peak_fp8", s.peak_fp8);
  r.get("peak_f32_simt", s.peak_f32_simt);
  r.get("mma_sync", s.mma_sync);
  r.get("wgmma", s.wgmma);
  r.get("tma", s.tma);
  r.get("clusters", s.clusters);
  r.get("fp8_mma", s.fp8_mma);
  r.get("max_cluster_size", s.max_cluster_size);
  r.reject_unknown();

  // The name is the identity used everywhere: it must be the file stem.
  std::string stem = fs::path(path).stem().string();
  if (s.name != stem)
    r.fail("name", "key 'name' is '" + s.name + "' but the file is '" + stem + ".json'");
  std::string want_sm = "sm_" + std::to_string(s.cc_major) + std::to_string(s.cc_minor);
  if (s.sm != want_sm)
    r.fail("sm", "key 'sm' is '" + s.sm + "' but cc_major/cc_minor say '" + want_sm + "'");
  s.source = path;
  return s;
}

std::vector<ArchSpec> load_arch_specs(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw NotFound("arch spec directory '" + dir + "' not found");
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() == ".json") files.push_back(e.path().string());
  if (files.empty()) throw NotFound("no *.json arch specs in '" + dir + "'");
  std::sort(files.begin(), files.end());  // same stem order as name order
  std::vector<ArchSpec> specs;
  for (const auto& f : files) specs.push_back(load_arch_spec(f));
  std::sort(specs.begin(), specs.end(),
            [](const ArchSpec& a, const ArchSpec& b) { return a.name < b.name; });
  return specs;
}

const ArchSpec& find_arch(const std::vector<ArchSpec>& specs, const std::string& name_or_sm) {
  for (const auto& s : specs)
    if (s.name == name_or_sm) return s;
  // Then by target: "sm_90" (or the JIT target "sm_90a"), first in name order.
  for (const auto& s : specs)
    if (s.sm == name_or_sm || s.jit_target == name_or_sm) return s;
  throw NotFound("no arch spec '" + name_or_sm + "'; available: " + names_of(specs));
}

const std::vector<ArchSpec>& default_arch_specs() {
  // Magic static: loaded once, thread-safe; a failed load throws and is retried next call.
  static const std::vector<ArchSpec> specs = load_arch_specs(env::data_dir() + "/arch");
  return specs;
}

ArchSpec match_arch(const std::vector<ArchSpec>& specs, const DeviceProps& dev) {
  // Among specs of the device's compute capability, the longest `match` hit wins (so
  // "H100 PCIe" beats "H100"); with no hit, the first of that capability in name order.
  const ArchSpec* best = nullptr;
  std::size_t best_score = 0;
  std::string lname = lower(dev.name);
  for (const auto& s : specs) {
    if (s.cc_major != dev.cc_major || s.cc_minor != dev.cc_minor) continue;
    std::size_t score = match_score(s, lname);
    if (!best || score > best_score) best = &s, best_score = score;
  }
  if (!best) {
    std::ostringstream msg;
    msg << "no arch spec for device '" << dev.name << "' with compute capability " << dev.cc_major
        << "." << dev.cc_minor << "; available: " << names_of(specs);
    throw NotFound(msg.str());
  }

  ArchSpec a = *best;
  auto take = [](auto& field, auto live) {
    if (live > 0) field = live;
  };
  if (!dev.name.empty()) a.device_name = dev.name;
  // Datasheet peaks are per full chip: scale by the live SM count (cut-down parts, MIG slices).
  if (dev.sm_count > 0 && a.sm_count > 0 && dev.sm_count != a.sm_count) {
    double f = static_cast<double>(dev.sm_count) / a.sm_count;
    for (double* p : {&a.peak_f16, &a.peak_bf16, &a.peak_tf32, &a.peak_fp8, &a.peak_f32_simt})
      *p *= f;
  }
  take(a.sm_count, dev.sm_count);
  take(a.boost_clock_mhz, dev.clock_mhz);
  take(a.mem_clock_mhz, dev.mem_clock_mhz);
  take(a.regs_per_sm, dev.regs_per_sm);
  take(a.regs_per_block, dev.regs_per_block);
  take(a.smem_per_sm, dev.smem_per_sm);
  take(a.smem_per_block, dev.smem_per_block);
  take(a.smem_per_block_optin, dev.smem_per_block_optin);
  take(a.max_threads_per_sm, dev.max_threads_per_sm);
  take(a.max_threads_per_block, dev.max_threads_per_block);
  take(a.max_blocks_per_sm, dev.max_blocks_per_sm);
  take(a.l2_bytes, dev.l2_bytes);
  // DDR: two transfers per memory clock; bytes = bus bits / 8. MHz * B -> MB/s -> / 1e3 = GB/s.
  if (dev.mem_clock_mhz > 0 && dev.mem_bus_bits > 0)
    a.mem_bw_gbps = 2.0 * dev.mem_clock_mhz * (dev.mem_bus_bits / 8.0) / 1e3;
  a.source += " + live device";
  return a;
}

}  // namespace tilepick
