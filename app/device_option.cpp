// --device cpu|cuda on the commands that compute: train, eval, experiment and
// sim. `cpu` is what they always did; `cuda` needs a CUDA build and a device.
// train, eval and experiment check theirs in app/cmd_nn.cpp; require_device
// serves the sims without a GPU path, which refuse with one line (exit status
// 2, through main's DeviceError handler) before anything is read or written.
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "app/commands.h"
#include "cuda/device.h"
#include "groups/family.h"

namespace routelab {

void add_device_option(CLI::App& app, std::string& device) {
  app.add_option("--device", device, "cpu (default) or cuda (a CUDA build and device)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
}

void require_device(const std::string& device, const std::string& what) {
  if (device != "cuda") return;
  cuda::require_cuda_device();
  throw cuda::DeviceError("--device cuda: " + what + " has no GPU path; use --device cpu");
}

std::string take_device_flag(std::vector<std::string>& args) {
  std::string device = "cpu";
  bool given = false;
  for (std::size_t i = 0; i < args.size();) {
    std::string value;
    std::size_t taken = 0;
    if (args[i] == "--device") {
      if (i + 1 >= args.size()) throw BadInput("device", "a value is required: cpu or cuda");
      value = args[i + 1];
      taken = 2;
    } else if (args[i].rfind("--device=", 0) == 0) {
      value = args[i].substr(9);
      taken = 1;
    } else {
      ++i;
      continue;
    }
    if (given) throw BadInput("device", "given twice; give it once");
    if (value != "cpu" && value != "cuda") throw BadInput("device", "cpu or cuda, not '" + value + "'");
    device = value;
    given = true;
    args.erase(args.begin() + std::ptrdiff_t(i), args.begin() + std::ptrdiff_t(i + taken));
  }
  return device;
}

}  // namespace routelab
