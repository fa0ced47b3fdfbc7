// Pieces of the GBDT evaluator shared by the per-row and the batch paths. Internal to src/select.
#pragma once
#include "tilepick/gbdt.hpp"

namespace tilepick {

// LightGBM's decision at node `n` of `t` for one (zero-banded) feature value; returns the child.
int gbdt_decide(const GbdtModel::Tree& t, const GbdtModel::Node& n, double v);
// A dense value as LightGBM reads it: inside the zero band -> exact 0 (NaN stays NaN).
double gbdt_zero_band(double v);

}  // namespace tilepick
