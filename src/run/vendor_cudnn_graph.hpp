// One convolution (with its fwd epilogue) as a cuDNN backend-API (graph) execution plan: the first engine config of cuDNN's
// heuristic mode A that finalizes within the workspace limit. Its host cost per run is a variant pack
// and cudnnBackendExecute: 9-15 us per Plan::run against 41-99 us for the legacy cudnnConvolution* call,
// which rebuilds its engine on every call (bench/plan_run_host.cpp, experiments/2026-11-25-host-cost/cudnn_host_cost.cpp; 1x H200,
// cuDNN 9.19; bench/results/2026-11-25-h200-cudnn-graph/).
#pragma once
#include <cudnn.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "run/vendor.hpp"

namespace tilepick::run::vendor::detail {

struct CudnnApi;

class CudnnGraph {
 public:
  // nullptr and *why when no engine of heuristic mode A finalizes for the problem within
  // max_workspace (the legacy algorithms then remain). A fwd epilogue (bias, relu) is fused as pointwise
  // operations on the convolution's fp32 result.
  static std::unique_ptr<CudnnGraph> create(const CudnnApi& api, cudnnHandle_t h, const ConvProblem& p,
                                            const CudnnConv& map, std::size_t max_workspace, std::string* why);
  ~CudnnGraph();
  CudnnGraph(const CudnnGraph&) = delete;
  CudnnGraph& operator=(const CudnnGraph&) = delete;

  const std::string& engine() const { return engine_; }  // "eng12", the engine's global index
  const std::string& detail() const { return detail_; }  // knobs and heuristic rank
  std::size_t workspace_bytes() const { return workspace_; }
  // Runs on the handle's stream (the caller sets it). Throws Error(cuda_error) naming `name` on `what`.
  void run(cudnnHandle_t h, const Operands& ops, void* workspace, const std::string& name,
           const std::string& what) const;

 private:
  explicit CudnnGraph(const CudnnApi& api, ConvDir dir) : api_(api), dir_(dir) {}
  const CudnnApi& api_;
  ConvDir dir_;
  bool bias_ = false;  // the variant pack carries Operands::bias
  std::vector<cudnnBackendDescriptor_t> keep_;  // every descriptor the plan refers to, destroyed last
  cudnnBackendDescriptor_t plan_ = nullptr;
  std::size_t workspace_ = 0;
  std::string engine_, detail_;
};

}  // namespace tilepick::run::vendor::detail
