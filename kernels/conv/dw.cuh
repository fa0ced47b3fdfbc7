// Depthwise convolution (fam=dw; G == C == K, one channel per group), memory-bound direct kernels:
// forward with fused bias + activation, backward-data, backward-weight (+ its deterministic reduce),
// 2-D and 3-D, channels-last. One program instantiates one of
//   tp::dw_fwd<Cfg>  tp::dw_bwd_data<Cfg>  tp::dw_bwd_weight<Cfg>  tp::dw_bwd_weight_taps<Cfg>
//   tp::dw_bwd_weight_reduce<Cfg>
// with a generated Cfg (src/jit/family_dw.cpp) and the runtime sizes in tp::DwParams.
#pragma once
#include "conv/dw_bwd_weight.cuh"
#include "conv/dw_fwd.cuh"
