// The CUDA backend of the training and evaluation loops; the contract is in
// cuda/backend.h. Gradients and Adam's moments never leave the device except
// for a checkpoint (and, without NCCL, for the mean over MPI ranks).
#include "cuda/backend.h"

#include <cmath>
#include <memory>

#ifdef ROUTELAB_WITH_NCCL
#include <nccl.h>
#endif

#include "cuda/adamw.h"
#include "cuda/buffer.h"
#include "cuda/device.h"
#include "cuda/model.h"
#include "nn/scheme.h"
#include "stats/distributed.h"

namespace routelab::cuda {

namespace {

// Rank r of an MPI run takes device r % count: one process per GPU (NCCL
// refuses two ranks on one device; the host fallback lets them share).
void select_device() {
  int count = 0;
  CUDA_CHECK(cudaGetDeviceCount(&count));
  if (count == 0) throw DeviceError("--device cuda: no CUDA device found (cudaGetDeviceCount: 0 devices)");
  CUDA_CHECK(cudaSetDevice(dist::rank() % count));
}

#ifdef ROUTELAB_WITH_NCCL
#define NCCL_CHECK(call) ROUTELAB_CHECK_STATUS(call, ncclSuccess, ncclGetErrorString)

// One NCCL communicator over every MPI rank, its id sent from rank 0.
class NcclComm {
 public:
  NcclComm() {
    ncclUniqueId id{};
    if (dist::is_root()) NCCL_CHECK(ncclGetUniqueId(&id));
    dist::broadcast_bytes(&id, sizeof id);
    NCCL_CHECK(ncclCommInitRank(&comm_, dist::size(), id, dist::rank()));
  }
  ~NcclComm() {
    if (comm_) ncclCommDestroy(comm_);
  }
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;

  // data = the mean over ranks, in place, on the default stream (where the
  // backward kernels that wrote it ran).
  void average(float* data, std::size_t n) {
    NCCL_CHECK(ncclAllReduce(data, data, n, ncclFloat, ncclAvg, comm_, cudaStreamLegacy));
  }

 private:
  ncclComm_t comm_ = nullptr;
};
#endif

class CudaBackend final : public nn::ModelBackend {
 public:
  CudaBackend(const nn::ModelConfig& config, uint64_t seed, bool tf32)
      : model_(config, seed, tf32 ? MatmulMath::tf32 : MatmulMath::fp32), m_(model_.params.size()),
        v_(model_.params.size()) {
    m_.zero();
    v_.zero();
  }

  std::string device() const override { return model_.math() == MatmulMath::tf32 ? "cuda-tf32" : "cuda"; }
  std::size_t param_count() const override { return model_.params.size(); }
  double forward(const int* tokens, const int* targets, int B, int T, uint64_t pass, bool train,
                 int first_b) override {
    return model_.forward(tokens, targets, B, T, pass, train, first_b);
  }
  void backward() override { model_.backward(); }
  const float* losses() override { return model_.losses().data(); }
  const float* logits() override { return model_.logits().data(); }

  void mean_grads_over_ranks() override {
    if (dist::size() == 1) return;
#ifdef ROUTELAB_WITH_NCCL
    if (!nccl_) nccl_ = std::make_unique<NcclComm>();  // every rank arrives here at the same step
    nccl_->average(model_.grads.data(), model_.grads.size());
#else
    std::vector<float> g = model_.grads.download();
    dist::mean_over_ranks(g);
    model_.grads.upload(g);
#endif
  }

  double grad_norm() override { return global_norm(model_.grads.data(), int64_t(model_.grads.size())); }

  // nn::AdamW::update's constants, then its per-element formula per tensor.
  void adamw_update(const nn::TrainConfig& c, double lr, double grad_scale, int t) override {
    AdamWStep s{float(c.beta1), float(c.beta2), float(c.eps), float(1.0 - std::pow(c.beta1, t)),
                float(1.0 - std::pow(c.beta2, t)), float(lr), 0.f, float(grad_scale)};
    for (const auto& tensor : model_.tensors()) {
      s.decay = tensor.decay ? float(c.weight_decay) : 0.f;
      const std::size_t at = tensor.offset;
      cuda::adamw_update(model_.params.data() + at, m_.data() + at, v_.data() + at, model_.grads.data() + at,
                         int64_t(tensor.size()), s);
    }
  }

  void set_params(const std::vector<float>& params) override { model_.params.upload(params); }
  void set_optimizer(const nn::AdamW& opt) override {
    m_.upload(opt.m);
    v_.upload(opt.v);
  }
  std::vector<float> params() override { return model_.params.download(); }
  nn::AdamW optimizer() override {
    nn::AdamW opt;
    opt.m = m_.download();
    opt.v = v_.download();
    return opt;
  }

 private:
  Model model_;
  DeviceBuffer<float> m_, v_;  // Adam's moments, in the parameters' layout
#ifdef ROUTELAB_WITH_NCCL
  std::unique_ptr<NcclComm> nccl_;
#endif
};

}  // namespace

nn::BackendFactory cuda_backend_factory(bool tf32) {
  const auto make = [tf32](const nn::ModelConfig& config, uint64_t seed) -> std::unique_ptr<nn::ModelBackend> {
    require_cuda_device();
    select_device();
    return std::make_unique<CudaBackend>(config, seed, tf32);
  };
  // What the device this process takes has free now (runs/memory.h asks it
  // before a model is built on it).
  const auto free_bytes = []() -> std::size_t {
    require_cuda_device();
    select_device();
    std::size_t free = 0, total = 0;
    CUDA_CHECK(cudaMemGetInfo(&free, &total));
    return free;
  };
  return {make, free_bytes};
}

}  // namespace routelab::cuda
