// The cuda table (gpt_kernel_table.h): the GPT's activations in GPU memory, its matrix products
// on cuBLAS, the rest gpt_cuda_kernels.cu, all issued to the stream the engine's launch names.
//
// Matrix products: cublasGemmStridedBatchedEx with CUBLAS_COMPUTE_32F, so f32 operands multiply
// and accumulate in true f32 (no TF32); with GptCompute::matmul bf16 the two operands of the
// layers' products are first rounded to bf16 (scratch of this table) and accumulated in f32.
// Attention's products stay f32. cuBLAS gives the same bits run to run on one GPU model and
// toolkit with a fixed workspace (set again after each cublasSetStream, which resets it).
//
// Left for speed (correctness first, no GPU to tune on): attention computes the whole T x T
// products (the CPU skips the masked blocks) and keeps preatt/att in f32 memory instead of a
// fused flash kernel; the per-channel reductions (encoder, LayerNorm dw/db, bias) run one thread
// per channel over every row; bf16 operands are rounded per product instead of kept in bf16;
// no cuBLASLt epilogues (bias, GELU) fused into the products.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "backends/cuda/cuda_status.h"
#include "backends/cuda/gpt_cuda_kernels.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/gpt_kernel_table.h"

namespace zero {
namespace {

using gpt::cuda::cuda_check;

void cublas_check(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) throw Error(cat("[model] cuBLAS error while ", what, ": ", cublasGetStatusString(status)));
}

constexpr std::size_t kWorkspaceBytes = std::size_t{32} << 20;

// A row-major matrix product's operands: pointers, leading dimensions and batch strides, in
// elements. op(X) = X^T where `trans`.
struct Operand {
  const void* p;
  int ld;
  long long stride;
  bool trans;
};

class CudaGptKernels final : public GptKernels {
 public:
  explicit CudaGptKernels(const GptCompute& compute) : matmul_(compute.matmul) {
    cublas_check(cublasCreate(&blas_), "creating a cuBLAS handle");
    cuda_check(cudaMalloc(&workspace_, kWorkspaceBytes), "allocating cuBLAS's workspace");
    set_stream(nullptr);
  }
  ~CudaGptKernels() override {
    cudaFree(tokens_dev_);
    cudaFree(scratch_);
    cudaFree(workspace_);
    cublasDestroy(blas_);
    if (ledger_ != nullptr && scratch_bytes_ > 0) ledger_->on_free(Tier::kDevice, Category::kActivations, scratch_bytes_);
  }
  CudaGptKernels(const CudaGptKernels&) = delete;
  CudaGptKernels& operator=(const CudaGptKernels&) = delete;

  std::string name() const override { return "cuda"; }
  bool host_addressable() const override { return false; }

  // Device tier: cudaMalloc; host tier (cpu checkpointing's kept inputs): pinned, so the copies
  // over the link are asynchronous. Both zero-filled, both in the ledger.
  ModelMemory alloc(Ledger& ledger, Tier tier, std::size_t numel, const std::string& what) override {
    ledger_ = &ledger;
    const std::size_t bytes = numel * sizeof(float);
    ledger.on_alloc(tier, Category::kActivations, bytes, what);
    void* p = nullptr;
    const cudaError_t status = tier == Tier::kDevice ? cudaMalloc(&p, bytes) : cudaMallocHost(&p, bytes);
    if (status != cudaSuccess) {
      ledger.on_free(tier, Category::kActivations, bytes);
      throw OutOfMemoryError(cat("[model] CUDA refused ", format_bytes(bytes), " of ", tier_name(tier), " memory for ", what,
                                 " (", cudaGetErrorString(status), "): lower the micro-batch or turn activation checkpointing on"));
    }
    if (tier == Tier::kDevice) cuda_check(cudaMemset(p, 0, bytes), "zeroing activations");
    else std::memset(p, 0, bytes);
    Ledger* l = &ledger;
    return ModelMemory(static_cast<float*>(p), [l, tier, bytes](float* q) {
      if (tier == Tier::kDevice) cudaFree(q);
      else cudaFreeHost(q);
      l->on_free(tier, Category::kActivations, bytes);
    });
  }
  void set_stream(void* stream) override {
    stream_ = static_cast<cudaStream_t>(stream);
    cublas_check(cublasSetStream(blas_, stream_), "setting cuBLAS's stream");
    cublas_check(cublasSetWorkspace(blas_, workspace_, kWorkspaceBytes), "setting cuBLAS's workspace");
  }
  void zero(float* p, std::int64_t n) override {
    cuda_check(cudaMemsetAsync(p, 0, sizeof(float) * static_cast<std::size_t>(n), stream_), "zeroing a gradient");
  }
  void copy(float* dst, const float* src, std::int64_t n) override {
    cuda_check(cudaMemcpyAsync(dst, src, sizeof(float) * static_cast<std::size_t>(n), cudaMemcpyDefault, stream_),
               "copying activations");
  }
  void read(float* host_dst, const float* src, std::int64_t n) override {
    copy(host_dst, src, n);
    cuda_check(cudaStreamSynchronize(stream_), "reading activations back");
  }
  Tokens upload_tokens(const std::int32_t* inputs, const std::int32_t* targets, std::size_t n) override;

  void encoder_forward(float* out, const std::int32_t* tokens, const float* wte, const float* wpe, int B, int T,
                       int C) override {
    gpt::cuda::encoder_forward(stream_, out, tokens, wte, wpe, B, T, C);
  }
  void encoder_backward(float* dwte, float* dwpe, const float* dout, const std::int32_t* tokens, int B, int T,
                        int C) override {
    gpt::cuda::encoder_backward(stream_, dwte, dwpe, dout, tokens, B, T, C);
  }
  void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* w, const float* b, int N,
                         int C) override {
    gpt::cuda::layernorm_forward(stream_, out, mean, rstd, inp, w, b, N, C);
  }
  void layernorm_backward(float* dinp, float* dw, float* db, const float* dout, const float* inp, const float* w,
                          const float* mean, const float* rstd, int N, int C) override {
    gpt::cuda::layernorm_backward(stream_, dinp, dw, db, dout, inp, w, mean, rstd, N, C);
  }
  void matmul_forward(float* out, const float* inp, const float* w, const float* bias, int N, int C, int OC) override;
  void matmul_backward(float* dinp, float* dw, float* dbias, const float* dout, const float* inp, const float* w, int N,
                       int C, int OC) override;
  void attention_forward(float* out, float* preatt, float* att, const float* qkv, int B, int T, int C, int NH) override;
  void attention_backward(float* dqkv, float* dpreatt, float* datt, const float* dout, const float* qkv, const float* att,
                          int B, int T, int C, int NH) override;
  void gelu_forward(float* out, const float* inp, std::int64_t n) override { gpt::cuda::gelu_forward(stream_, out, inp, n); }
  void gelu_backward(float* dinp, const float* inp, const float* dout, std::int64_t n) override {
    gpt::cuda::gelu_backward(stream_, dinp, inp, dout, n);
  }
  void residual_forward(float* out, const float* a, const float* b, std::int64_t n) override {
    gpt::cuda::residual_forward(stream_, out, a, b, n);
  }
  float softmax_crossentropy_forward(float* probs, float* losses, const float* logits, const std::int32_t* targets, int N,
                                     int V) override;
  void softmax_crossentropy_backward(float* dlogits, const float* probs, const std::int32_t* targets, int N,
                                     int V) override {
    gpt::cuda::softmax_crossentropy_backward(stream_, dlogits, probs, targets, N, V);
  }

 private:
  // Row-major C (M,N) = alpha op(A) (M,K) op(B) (K,N) + beta C, `batch` times at the strides.
  // cuBLAS is column-major: a row-major X is a column-major X^T, so this is C^T = op(B)^T op(A)^T.
  void gemm(int M, int N, int K, float alpha, Operand a, Operand b, float beta, float* c, int ldc, long long stride_c,
            int batch, cudaDataType type);
  // gemm for a layer's product: f32 operands as they are, or rounded to bf16 first.
  void layer_gemm(int M, int N, int K, const float* a, std::int64_t a_numel, int lda, bool ta, const float* b,
                  std::int64_t b_numel, int ldb, bool tb, float beta, float* c, int ldc);
  void* scratch(std::size_t bytes);  // bf16 operands: grown as needed, kept

  Dtype matmul_;
  cublasHandle_t blas_ = nullptr;
  void* workspace_ = nullptr;   // (kWorkspaceBytes) cuBLAS's, device
  cudaStream_t stream_ = nullptr;
  Ledger* ledger_ = nullptr;    // the activations' ledger (the first alloc's): the scratch is counted there
  void* scratch_ = nullptr;     // (scratch_bytes_) bf16 operands, device, category activations
  std::size_t scratch_bytes_ = 0;
  std::int32_t* tokens_dev_ = nullptr;  // (2 n) inputs then targets, device (8 bytes a token, not in the ledger)
  std::size_t tokens_n_ = 0;
  std::vector<float> losses_;           // (N) read back for the mean
};

GptKernels::Tokens CudaGptKernels::upload_tokens(const std::int32_t* inputs, const std::int32_t* targets, std::size_t n) {
  if (n != tokens_n_) {
    cudaFree(tokens_dev_);
    tokens_dev_ = nullptr;
    cuda_check(cudaMalloc(reinterpret_cast<void**>(&tokens_dev_), 2 * n * sizeof(std::int32_t)), "allocating the micro-batch's tokens");
    tokens_n_ = n;
  }
  // On the stream of the kernels that read the previous tokens, so those have run; the host's
  // arrays may change as soon as this returns, hence the wait.
  cuda_check(cudaMemcpyAsync(tokens_dev_, inputs, n * sizeof(std::int32_t), cudaMemcpyHostToDevice, stream_), "copying tokens");
  cuda_check(cudaMemcpyAsync(tokens_dev_ + n, targets, n * sizeof(std::int32_t), cudaMemcpyHostToDevice, stream_), "copying tokens");
  cuda_check(cudaStreamSynchronize(stream_), "copying tokens");
  return {tokens_dev_, tokens_dev_ + n};
}

void CudaGptKernels::gemm(int M, int N, int K, float alpha, Operand a, Operand b, float beta, float* c, int ldc,
                          long long stride_c, int batch, cudaDataType type) {
  cublas_check(cublasGemmStridedBatchedEx(blas_, b.trans ? CUBLAS_OP_T : CUBLAS_OP_N, a.trans ? CUBLAS_OP_T : CUBLAS_OP_N, N, M,
                                          K, &alpha, b.p, type, b.ld, b.stride, a.p, type, a.ld, a.stride, &beta, c, CUDA_R_32F,
                                          ldc, stride_c, batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
               "a matrix product");
}

void* CudaGptKernels::scratch(std::size_t bytes) {
  if (bytes <= scratch_bytes_) return scratch_;
  cuda_check(cudaStreamSynchronize(stream_), "growing the bf16 scratch");  // the old one may be in use
  cudaFree(scratch_);
  scratch_ = nullptr;
  if (ledger_ != nullptr) {
    ledger_->on_free(Tier::kDevice, Category::kActivations, scratch_bytes_);
    scratch_bytes_ = 0;
    ledger_->on_alloc(Tier::kDevice, Category::kActivations, bytes, "bf16 matmul operands");
  }
  cuda_check(cudaMalloc(&scratch_, bytes), "allocating the bf16 matmul operands");
  scratch_bytes_ = bytes;
  return scratch_;
}

void CudaGptKernels::layer_gemm(int M, int N, int K, const float* a, std::int64_t a_numel, int lda, bool ta, const float* b,
                                std::int64_t b_numel, int ldb, bool tb, float beta, float* c, int ldc) {
  if (matmul_ != Dtype::kBf16) {
    gemm(M, N, K, 1.0f, {a, lda, 0, ta}, {b, ldb, 0, tb}, beta, c, ldc, 0, 1, CUDA_R_32F);
    return;
  }
  constexpr std::size_t kBf16 = 2, kAlign = 256;
  const std::size_t a_bytes = (static_cast<std::size_t>(a_numel) * kBf16 + kAlign - 1) / kAlign * kAlign;
  char* s = static_cast<char*>(scratch(a_bytes + static_cast<std::size_t>(b_numel) * kBf16));
  gpt::cuda::round_to_bf16(stream_, s, a, a_numel);
  gpt::cuda::round_to_bf16(stream_, s + a_bytes, b, b_numel);
  gemm(M, N, K, 1.0f, {s, lda, 0, ta}, {s + a_bytes, ldb, 0, tb}, beta, c, ldc, 0, 1, CUDA_R_16BF);
}

void CudaGptKernels::matmul_forward(float* out, const float* inp, const float* w, const float* bias, int N, int C, int OC) {
  // out (N,OC) = inp (N,C) w^T
  layer_gemm(N, OC, C, inp, static_cast<std::int64_t>(N) * C, C, false, w, static_cast<std::int64_t>(OC) * C, C, true, 0.0f, out,
             OC);
  if (bias != nullptr) gpt::cuda::add_bias(stream_, out, bias, N, OC);
}

void CudaGptKernels::matmul_backward(float* dinp, float* dw, float* dbias, const float* dout, const float* inp, const float* w,
                                     int N, int C, int OC) {
  const std::int64_t n_out = static_cast<std::int64_t>(N) * OC;
  // dinp (N,C) = dout (N,OC) w (OC,C); dw (OC,C) += dout^T (OC,N) inp (N,C)
  layer_gemm(N, C, OC, dout, n_out, OC, false, w, static_cast<std::int64_t>(OC) * C, C, false, 0.0f, dinp, C);
  layer_gemm(OC, C, N, dout, n_out, OC, true, inp, static_cast<std::int64_t>(N) * C, C, false, 1.0f, dw, C);
  if (dbias != nullptr) gpt::cuda::column_sums(stream_, dbias, dout, N, OC);
}

// Per sequence b, the NH heads as one strided batch: head h's q, k, v are columns [h hs, (h+1) hs)
// of qkv's thirds (leading dimension 3C, batch stride hs); preatt and att are (NH,T,T) per b.
void CudaGptKernels::attention_forward(float* out, float* preatt, float* att, const float* qkv, int B, int T, int C, int NH) {
  const int hs = C / NH, C3 = 3 * C;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  const long long TT = static_cast<long long>(T) * T;
  for (int b = 0; b < B; ++b) {
    const float* q = qkv + static_cast<std::int64_t>(b) * T * C3;
    float* pre = preatt + static_cast<std::int64_t>(b) * NH * TT;
    gemm(T, T, hs, scale, {q, C3, hs, false}, {q + C, C3, hs, true}, 0.0f, pre, T, TT, NH, CUDA_R_32F);  // scale q k^T
  }
  gpt::cuda::softmax_causal(stream_, att, preatt, static_cast<std::int64_t>(B) * NH * T, T);
  for (int b = 0; b < B; ++b) {
    const float* v = qkv + static_cast<std::int64_t>(b) * T * C3 + 2 * C;
    const float* a = att + static_cast<std::int64_t>(b) * NH * TT;
    gemm(T, hs, T, 1.0f, {a, T, TT, false}, {v, C3, hs, false}, 0.0f, out + static_cast<std::int64_t>(b) * T * C, C, hs, NH,
         CUDA_R_32F);  // att v
  }
}

void CudaGptKernels::attention_backward(float* dqkv, float* dpreatt, float* datt, const float* dout, const float* qkv,
                                        const float* att, int B, int T, int C, int NH) {
  const int hs = C / NH, C3 = 3 * C;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  const long long TT = static_cast<long long>(T) * T;
  for (int b = 0; b < B; ++b) {
    const float* v = qkv + static_cast<std::int64_t>(b) * T * C3 + 2 * C;
    float* dv = dqkv + static_cast<std::int64_t>(b) * T * C3 + 2 * C;
    const float* d = dout + static_cast<std::int64_t>(b) * T * C;
    const float* a = att + static_cast<std::int64_t>(b) * NH * TT;
    float* da = datt + static_cast<std::int64_t>(b) * NH * TT;
    gemm(T, T, hs, 1.0f, {d, C, hs, false}, {v, C3, hs, true}, 0.0f, da, T, TT, NH, CUDA_R_32F);   // datt = dout v^T
    gemm(T, hs, T, 1.0f, {a, T, TT, true}, {d, C, hs, false}, 0.0f, dv, C3, hs, NH, CUDA_R_32F);   // dv = att^T dout
  }
  gpt::cuda::softmax_causal_backward(stream_, dpreatt, att, datt, static_cast<std::int64_t>(B) * NH * T, T);
  for (int b = 0; b < B; ++b) {
    const float* q = qkv + static_cast<std::int64_t>(b) * T * C3;
    float* dq = dqkv + static_cast<std::int64_t>(b) * T * C3;
    const float* dpre = dpreatt + static_cast<std::int64_t>(b) * NH * TT;
    gemm(T, hs, T, scale, {dpre, T, TT, false}, {q + C, C3, hs, false}, 0.0f, dq, C3, hs, NH, CUDA_R_32F);  // dq = s dpre k
    gemm(T, hs, T, scale, {dpre, T, TT, true}, {q, C3, hs, false}, 0.0f, dq + C, C3, hs, NH, CUDA_R_32F);   // dk = s dpre^T q
  }
}

float CudaGptKernels::softmax_crossentropy_forward(float* probs, float* losses, const float* logits, const std::int32_t* targets,
                                                   int N, int V) {
  gpt::cuda::softmax_crossentropy_forward(stream_, probs, losses, logits, targets, N, V);
  losses_.resize(static_cast<std::size_t>(N));
  read(losses_.data(), losses, N);
  double total = 0.0;  // in order, in double: the CPU's mean
  for (float l : losses_) total += l;
  return static_cast<float>(total / N);
}

}  // namespace

bool gpt_cuda_available(std::string* why) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status == cudaSuccess && count > 0) return true;
  if (why) *why = status == cudaSuccess ? "the process sees no GPU" : cudaGetErrorString(status);
  return false;
}

std::unique_ptr<GptKernels> make_cuda_gpt_kernels(const GptCompute& compute) {
  std::string why;
  if (!gpt_cuda_available(&why)) throw ConfigError(cat("[model] device cuda: no CUDA device (", why, "): run on a machine with a GPU, or use --device cpu"));
  return std::make_unique<CudaGptKernels>(compute);
}

}  // namespace zero
