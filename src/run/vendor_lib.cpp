// Finding and loading the vendor libraries (dlopen, never linked); see vendor.hpp for the order.
#include <dlfcn.h>
#include <glob.h>
#include <sys/stat.h>

#include <cstdlib>
#include <mutex>

#include "run/vendor.hpp"
#include "run/vendor_internal.hpp"
#include "tilepick/env.hpp"

namespace tilepick::run::vendor {
namespace {

bool is_dir(const std::string& p) {
  struct stat st{};
  return stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// Matches of a glob pattern, sorted (glob's default), or none.
std::vector<std::string> glob_paths(const std::string& pattern) {
  std::vector<std::string> out;
  glob_t g{};
  if (glob(pattern.c_str(), 0, nullptr, &g) == 0)
    for (std::size_t i = 0; i < g.gl_pathc; ++i) out.emplace_back(g.gl_pathv[i]);
  globfree(&g);
  return out;
}

void add_unique(std::vector<std::string>& v, const std::string& s) {
  for (const auto& x : v)
    if (x == s) return;
  v.push_back(s);
}

LibraryInfo load(Lib lib) {
  if (!compiled_with(lib)) {
    LibraryInfo info;
    info.error = std::string(lib_name(lib)) + " support was compiled out (its header was not found at build time)";
    return info;
  }
  const std::string override_path = lib == Lib::cublaslt ? env::cublaslt_lib() : env::cudnn_lib();
  LibraryInfo info = open_library(lib, library_candidates(lib, override_path, cuda_lib_dirs(), python_site_packages()));
  if (!info.loaded && !override_path.empty())
    info.error += std::string(" (") + (lib == Lib::cublaslt ? "TILEPICK_CUBLASLT_LIB" : "TILEPICK_CUDNN_LIB") +
                  " is set, nothing else is tried)";
  return info;
}

}  // namespace

const char* lib_name(Lib lib) { return lib == Lib::cublaslt ? "cuBLASLt" : "cuDNN"; }

std::vector<std::string> lib_sonames(Lib lib) {
  if (lib == Lib::cublaslt) return {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"};
  return {"libcudnn.so.9"};
}

std::vector<std::string> library_candidates(Lib lib, const std::string& env_override,
                                            const std::vector<std::string>& lib_dirs,
                                            const std::vector<std::string>& site_packages) {
  if (!env_override.empty()) return {env_override};
  std::vector<std::string> out;
  const auto names = lib_sonames(lib);
  for (const auto& n : names) add_unique(out, n);
  for (const auto& d : lib_dirs)
    for (const auto& n : names) add_unique(out, d + "/" + n);
  for (const auto& sp : site_packages)
    for (const auto& n : names)
      for (const auto& p : glob_paths(sp + "/nvidia/*/lib/" + n)) add_unique(out, p);
  return out;
}

std::vector<std::string> python_site_packages() {
  std::vector<std::string> patterns = {
      "/opt/*/.venv/lib/python3*/site-packages", "/opt/*/lib/python3*/site-packages",
      "/usr/local/lib/python3*/dist-packages",   "/usr/local/lib/python3*/site-packages",
      "/usr/lib/python3/dist-packages",          "/usr/lib/python3*/site-packages"};
  if (const char* home = std::getenv("HOME"); home && *home)
    patterns.push_back(std::string(home) + "/.local/lib/python3*/site-packages");
  std::vector<std::string> out;
  for (const auto& pat : patterns)
    for (const auto& p : glob_paths(pat))
      if (is_dir(p)) add_unique(out, p);
  return out;
}

std::vector<std::string> cuda_lib_dirs() {
  std::vector<std::string> out;
#ifdef TILEPICK_CUDA_LIB_DIR
  // CMake may give a ;-separated list.
  std::string dirs = TILEPICK_CUDA_LIB_DIR;
  for (std::size_t b = 0; b <= dirs.size();) {
    std::size_t e = dirs.find(';', b);
    if (e == std::string::npos) e = dirs.size();
    if (e > b) add_unique(out, dirs.substr(b, e - b));
    b = e + 1;
  }
#endif
  add_unique(out, "/usr/local/cuda/lib64");
  add_unique(out, "/usr/local/cuda/lib");
  return out;
}

LibraryInfo open_library(Lib lib, const std::vector<std::string>& candidates) {
  LibraryInfo info;
  std::string tried;
  for (const auto& c : candidates) {
    dlerror();
    void* h = dlopen(c.c_str(), RTLD_NOW | RTLD_GLOBAL);  // kept open for the process lifetime
    if (!h) {
      const char* e = dlerror();
      tried += "\n  " + c + ": " + (e ? e : "not loadable");
      continue;
    }
    std::string version;
    std::string bad = lib == Lib::cublaslt ? detail::check_cublaslt(h, &version) : detail::check_cudnn(h, &version);
    if (bad.empty()) {
      info.loaded = true, info.handle = h, info.path = c, info.version = version;
      return info;
    }
    tried += "\n  " + c + ": " + bad;
  }
  info.error = std::string(lib_name(lib)) + " not available; tried:" + (tried.empty() ? std::string(" nothing") : tried);
  return info;
}

bool compiled_with(Lib lib) {
#if defined(TILEPICK_HAVE_CUBLASLT_H)
  if (lib == Lib::cublaslt) return true;
#endif
#if defined(TILEPICK_HAVE_CUDNN_H)
  if (lib == Lib::cudnn) return true;
#endif
  return false;
}

const LibraryInfo& library(Lib lib) {
  static std::once_flag once[2];
  static LibraryInfo info[2];
  const int i = lib == Lib::cublaslt ? 0 : 1;
  std::call_once(once[i], [&] { info[i] = load(lib); });
  return info[i];
}

}  // namespace tilepick::run::vendor
