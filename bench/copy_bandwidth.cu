// Measured device-memory copy bandwidth: the yardstick of memory-bound kernels (decode GEMMs are held
// to a share of it). Copies BYTES (default 2 GiB) device to device with cudaMemcpyAsync, 20 times after
// 3 warm-ups, and prints the best and median rate counting read + write bytes.
// Maintained with bench/sm90_gpu.sh, whose `bandwidth` step builds and runs it and hands the rate to
// bench/sm90_compare.py --copy-gbs.
//   nvcc -O2 -o copy_bandwidth bench/copy_bandwidth.cu && ./copy_bandwidth [BYTES]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(x)                                                                       \
  do {                                                                                 \
    cudaError_t e_ = (x);                                                              \
    if (e_ != cudaSuccess) {                                                           \
      std::fprintf(stderr, "copy_bandwidth: %s: %s\n", #x, cudaGetErrorString(e_));    \
      return 1;                                                                        \
    }                                                                                  \
  } while (0)

int main(int argc, char** argv) {
  const size_t bytes = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : (size_t(2) << 30);
  void *src = nullptr, *dst = nullptr;
  CHECK(cudaMalloc(&src, bytes));
  CHECK(cudaMalloc(&dst, bytes));
  CHECK(cudaMemset(src, 1, bytes));
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  std::vector<float> ms;
  for (int i = 0; i < 23; ++i) {
    CHECK(cudaEventRecord(start));
    CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice));
    CHECK(cudaEventRecord(stop));
    CHECK(cudaEventSynchronize(stop));
    float t = 0;
    CHECK(cudaEventElapsedTime(&t, start, stop));
    if (i >= 3) ms.push_back(t);
  }
  std::sort(ms.begin(), ms.end());
  auto gbs = [&](float t) { return 2.0 * double(bytes) / (double(t) * 1e-3) / 1e9; };
  cudaDeviceProp prop;
  CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("copy_gbs %.0f (median %.0f) GB/s read+write, %zu bytes, %s\n", gbs(ms.front()), gbs(ms[ms.size() / 2]),
              bytes, prop.name);
  return 0;
}
