#include "codegen/cuda/Registration.h"

#include <map>
#include <memory>

#include "codegen/cuda/Driver.h"
#include "ir/Error.h"
#include "runtime/Backend.h"

namespace friction::codegen {

void registerCudaBackend() {
  registerBackend("cuda", [](const std::map<std::string, std::string>&) -> std::unique_ptr<Backend> {
    std::string why = cudaUnavailableReason();
    FRICTION_CHECK(why.empty(), "backend cuda: " + why);
    throw Error("backend cuda: a GPU is present, but the cuda backend cannot run models yet (its host runtime is not "
                "built); `friction compile MODEL --backend cuda --emit-ptx DIR` writes its kernels");
  });
}

}  // namespace friction::codegen
