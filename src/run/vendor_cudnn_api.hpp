// The cuDNN 9 entry points used by the convolution baseline, resolved with dlsym from the
// libcudnn.so.9 shim (which forwards the legacy convolution API to libcudnn_cnn).
#pragma once
#include <cudnn.h>

#include <string>

#include "run/vendor_internal.hpp"

namespace tilepick::run::vendor::detail {

struct CudnnApi {
  decltype(&::cudnnGetVersion) get_version = nullptr;
  decltype(&::cudnnGetErrorString) error_string = nullptr;
  decltype(&::cudnnCreate) create = nullptr;
  decltype(&::cudnnSetStream) set_stream = nullptr;
  decltype(&::cudnnCreateTensorDescriptor) create_tensor = nullptr;
  decltype(&::cudnnSetTensorNdDescriptor) set_tensor = nullptr;
  decltype(&::cudnnDestroyTensorDescriptor) destroy_tensor = nullptr;
  decltype(&::cudnnCreateFilterDescriptor) create_filter = nullptr;
  decltype(&::cudnnSetFilterNdDescriptor) set_filter = nullptr;
  decltype(&::cudnnDestroyFilterDescriptor) destroy_filter = nullptr;
  decltype(&::cudnnCreateConvolutionDescriptor) create_conv = nullptr;
  decltype(&::cudnnSetConvolutionNdDescriptor) set_conv = nullptr;
  decltype(&::cudnnSetConvolutionGroupCount) set_group_count = nullptr;
  decltype(&::cudnnSetConvolutionMathType) set_math = nullptr;
  decltype(&::cudnnDestroyConvolutionDescriptor) destroy_conv = nullptr;
  decltype(&::cudnnCreateActivationDescriptor) create_activation = nullptr;
  decltype(&::cudnnSetActivationDescriptor) set_activation = nullptr;
  decltype(&::cudnnDestroyActivationDescriptor) destroy_activation = nullptr;
  decltype(&::cudnnGetConvolutionForwardAlgorithm_v7) fwd_v7 = nullptr;
  decltype(&::cudnnFindConvolutionForwardAlgorithmEx) fwd_find = nullptr;
  decltype(&::cudnnGetConvolutionForwardWorkspaceSize) fwd_ws = nullptr;
  decltype(&::cudnnConvolutionForward) conv_fwd = nullptr;
  decltype(&::cudnnConvolutionBiasActivationForward) conv_bias_act_fwd = nullptr;
  decltype(&::cudnnGetConvolutionBackwardDataAlgorithm_v7) bwd_data_v7 = nullptr;
  decltype(&::cudnnFindConvolutionBackwardDataAlgorithmEx) bwd_data_find = nullptr;
  decltype(&::cudnnGetConvolutionBackwardDataWorkspaceSize) bwd_data_ws = nullptr;
  decltype(&::cudnnConvolutionBackwardData) conv_bwd_data = nullptr;
  decltype(&::cudnnGetConvolutionBackwardFilterAlgorithm_v7) bwd_filter_v7 = nullptr;
  decltype(&::cudnnFindConvolutionBackwardFilterAlgorithmEx) bwd_filter_find = nullptr;
  decltype(&::cudnnGetConvolutionBackwardFilterWorkspaceSize) bwd_filter_ws = nullptr;
  decltype(&::cudnnConvolutionBackwardFilter) conv_bwd_filter = nullptr;
  // The backend (graph) API: finalized execution plans for the low-host-cost run path.
  decltype(&::cudnnBackendCreateDescriptor) be_create = nullptr;
  decltype(&::cudnnBackendDestroyDescriptor) be_destroy = nullptr;
  decltype(&::cudnnBackendSetAttribute) be_set = nullptr;
  decltype(&::cudnnBackendGetAttribute) be_get = nullptr;
  decltype(&::cudnnBackendFinalize) be_finalize = nullptr;
  decltype(&::cudnnBackendExecute) be_execute = nullptr;

  // Resolves every entry point; returns the first missing symbol, or "".
  std::string resolve_all(void* h) {
#define TP_SYM(field, symbol) \
  if (!resolve(h, #symbol, field)) return #symbol;
    TP_SYM(get_version, cudnnGetVersion)
    TP_SYM(error_string, cudnnGetErrorString)
    TP_SYM(create, cudnnCreate)
    TP_SYM(set_stream, cudnnSetStream)
    TP_SYM(create_tensor, cudnnCreateTensorDescriptor)
    TP_SYM(set_tensor, cudnnSetTensorNdDescriptor)
    TP_SYM(destroy_tensor, cudnnDestroyTensorDescriptor)
    TP_SYM(create_filter, cudnnCreateFilterDescriptor)
    TP_SYM(set_filter, cudnnSetFilterNdDescriptor)
    TP_SYM(destroy_filter, cudnnDestroyFilterDescriptor)
    TP_SYM(create_conv, cudnnCreateConvolutionDescriptor)
    TP_SYM(set_conv, cudnnSetConvolutionNdDescriptor)
    TP_SYM(set_group_count, cudnnSetConvolutionGroupCount)
    TP_SYM(set_math, cudnnSetConvolutionMathType)
    TP_SYM(destroy_conv, cudnnDestroyConvolutionDescriptor)
    TP_SYM(create_activation, cudnnCreateActivationDescriptor)
    TP_SYM(set_activation, cudnnSetActivationDescriptor)
    TP_SYM(destroy_activation, cudnnDestroyActivationDescriptor)
    TP_SYM(fwd_v7, cudnnGetConvolutionForwardAlgorithm_v7)
    TP_SYM(fwd_find, cudnnFindConvolutionForwardAlgorithmEx)
    TP_SYM(fwd_ws, cudnnGetConvolutionForwardWorkspaceSize)
    TP_SYM(conv_fwd, cudnnConvolutionForward)
    TP_SYM(conv_bias_act_fwd, cudnnConvolutionBiasActivationForward)
    TP_SYM(bwd_data_v7, cudnnGetConvolutionBackwardDataAlgorithm_v7)
    TP_SYM(bwd_data_find, cudnnFindConvolutionBackwardDataAlgorithmEx)
    TP_SYM(bwd_data_ws, cudnnGetConvolutionBackwardDataWorkspaceSize)
    TP_SYM(conv_bwd_data, cudnnConvolutionBackwardData)
    TP_SYM(bwd_filter_v7, cudnnGetConvolutionBackwardFilterAlgorithm_v7)
    TP_SYM(bwd_filter_find, cudnnFindConvolutionBackwardFilterAlgorithmEx)
    TP_SYM(bwd_filter_ws, cudnnGetConvolutionBackwardFilterWorkspaceSize)
    TP_SYM(conv_bwd_filter, cudnnConvolutionBackwardFilter)
    TP_SYM(be_create, cudnnBackendCreateDescriptor)
    TP_SYM(be_destroy, cudnnBackendDestroyDescriptor)
    TP_SYM(be_set, cudnnBackendSetAttribute)
    TP_SYM(be_get, cudnnBackendGetAttribute)
    TP_SYM(be_finalize, cudnnBackendFinalize)
    TP_SYM(be_execute, cudnnBackendExecute)
#undef TP_SYM
    return "";
  }

  std::string status_text(cudnnStatus_t s) const {
    const char* t = error_string ? error_string(s) : nullptr;
    return t ? t : "cudnnStatus " + std::to_string(static_cast<int>(s));
  }
};

}  // namespace tilepick::run::vendor::detail
