// Where an installed tilepick finds its data and models, and a selection with the shipped model.
#include <iostream>

#include "tilepick/arch.hpp"
#include "tilepick/env.hpp"
#include "tilepick/problem.hpp"
#include "tilepick/selector.hpp"
#include "tilepick/tilepick.h"

int main() {
  using namespace tilepick;
  std::cout << "tilepick " << tp_version() << "\ndata " << env::data_dir() << "\nmodels " << env::models_dir() << "\n";
  const Selection s = Selector::default_selector().select(parse_problem("gemm rcr m4096 n4096 k4096 bf16"),
                                                          find_arch(default_arch_specs(), "h200"), 1);
  std::cout << "selected " << (s.top.empty() ? "nothing" : s.top[0].text) << " by " << s.source << "\n";
  return s.top.empty() ? 1 : 0;
}
