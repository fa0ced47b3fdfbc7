#include "sweep/backend.hpp"
#include "tilepick/error.hpp"
namespace tilepick::sweep {
std::unique_ptr<Backend> make_gpu_backend(const BackendOptions&) { throw Unsupported("gpu backend pending"); }
}
