// Bindings of the dispatcher (dispatch_module.cpp), added to tilepick._core by core_module.cpp.
#pragma once
#include <nanobind/nanobind.h>

namespace tilepick::py {
void bind_dispatch(nanobind::module_& m);
}
