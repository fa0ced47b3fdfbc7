// cuda::Graph (stream capture and replay) and device-to-device copies: what timing short kernels
// needs beyond driver.cpp. The driver symbols are optional, so a missing one is an error here only.
#include <cstdint>

#include "core/cuda_driver.hpp"
#include "tilepick/error.hpp"
#include "tilepick/jit.hpp"

namespace tilepick::cuda {

using detail::check;

namespace {

template <class F>
F need(F f, const char* symbol) {
  if (!f) throw Error(Status::cuda_error, std::string("the CUDA driver has no ") + symbol + " (driver too old?)");
  return f;
}

CUdeviceptr dptr(const void* p) { return static_cast<CUdeviceptr>(reinterpret_cast<std::uintptr_t>(p)); }

}  // namespace

void DeviceBuffer::copy_from(const DeviceBuffer& src) {
  if (src.size() != bytes_)
    throw Error(Status::internal, "DeviceBuffer::copy_from: " + std::to_string(src.size()) + " bytes into a buffer of " +
                                      std::to_string(bytes_));
  if (bytes_)
    check(need(detail::driver().memcpy_dtod, "cuMemcpyDtoD")(dptr(ptr_), dptr(src.get()), bytes_), "cuMemcpyDtoD");
}

Graph Graph::capture(const std::function<void(void* stream)>& body) {
  const auto& d = detail::require_driver("Graph::capture");
  detail::ensure_context("Graph::capture");
  auto begin = need(d.stream_begin_capture, "cuStreamBeginCapture");
  auto end = need(d.stream_end_capture, "cuStreamEndCapture");
  auto instantiate = need(d.graph_instantiate, "cuGraphInstantiateWithFlags");
  auto destroy_graph = need(d.graph_destroy, "cuGraphDestroy");
  auto destroy_stream = need(d.stream_destroy, "cuStreamDestroy");
  need(d.graph_launch, "cuGraphLaunch");
  need(d.graph_exec_destroy, "cuGraphExecDestroy");

  CUstream stream = nullptr;
  check(need(d.stream_create, "cuStreamCreate")(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
  CUresult ended = CUDA_SUCCESS, made = CUDA_SUCCESS;
  if (CUresult r = begin(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL); r != CUDA_SUCCESS) {
    destroy_stream(stream);
    check(r, "cuStreamBeginCapture");
  }
  try {
    body(stream);
  } catch (...) {
    if (end(stream, &graph) == CUDA_SUCCESS && graph) destroy_graph(graph);
    destroy_stream(stream);
    throw;
  }
  ended = end(stream, &graph);
  if (ended == CUDA_SUCCESS) made = instantiate(&exec, graph, 0);
  if (graph) destroy_graph(graph);
  destroy_stream(stream);
  check(ended, "cuStreamEndCapture", "a graph of timed launches");
  check(made, "cuGraphInstantiate", "a graph of timed launches");
  Graph g;
  g.exec_ = exec;
  return g;
}

Graph::~Graph() {
  if (exec_) detail::driver().graph_exec_destroy(static_cast<CUgraphExec>(exec_));
}

Graph::Graph(Graph&& o) noexcept : exec_(o.exec_) { o.exec_ = nullptr; }

Graph& Graph::operator=(Graph&& o) noexcept {
  if (this != &o) {
    if (exec_) detail::driver().graph_exec_destroy(static_cast<CUgraphExec>(exec_));
    exec_ = o.exec_;
    o.exec_ = nullptr;
  }
  return *this;
}

void Graph::launch(void* stream) const {
  if (!exec_) throw Error(Status::internal, "Graph::launch on an empty graph");
  check(detail::driver().graph_launch(static_cast<CUgraphExec>(exec_), static_cast<CUstream>(stream)), "cuGraphLaunch");
}

}  // namespace tilepick::cuda
