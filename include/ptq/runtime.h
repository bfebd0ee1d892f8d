// The runtime module (ptq_runtime): runs an ir::Model on a Backend in topological order and
// shows the tensors observers ask for. See docs/DESIGN.md, "Runtime".
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "ptq/ir.h"
#include "ptq/status.h"

namespace ptq::runtime {

// Hands out tensors whose buffers come from a pool that the executor refills as values die.
class Allocator {
 public:
  virtual ~Allocator() = default;
  // A zero-initialisation is NOT promised: kernels write every element they output.
  virtual ir::Tensor allocate(ir::DType dtype, const ir::Shape& shape) = 0;
};

class Backend;

// What a kernel factory sees when the executor prepares a node.
struct KernelContext {
  const ir::Node& node;
  int64_t opset = 0;          // the model's default-domain opset
  int threads = 1;            // threads a kernel may use (ptq/runtime/task_pool.h)
  const ir::Graph* graph = nullptr;  // for constant inputs (initializers), e.g. packed weights
  // Ask for the plain reference kernel (the truth fast variants are tested against).
  bool reference = false;
  // Convolutions may run Winograd's F(2x2, 3x3) (CpuBackendOptions::winograd).
  bool winograd = true;
  // The backend making the kernel: a node holding subgraphs (If, Loop, Scan) runs them on it.
  Backend* backend = nullptr;
};

// The nodes after a Conv or Gemm that the executor may fold into the kernel's output when no
// observer wants the tensors in between (docs/DESIGN.md, "Fusion"): y = act(y + residual),
// with the float operations, in the order, of the separate Add and Relu/Clip kernels.
struct Epilogue {
  enum class Activation { kNone, kRelu, kClip };
  const ir::Tensor* residual = nullptr;  // the other input of a following Add, or null
  Activation activation = Activation::kNone;
  float lo = 0.0f, hi = 0.0f;            // kClip's bounds
};

// A prepared op. Created once per node; run once per batch.
class Kernel {
 public:
  virtual ~Kernel() = default;
  // inputs[i] is null for an omitted optional input; after the node's inputs come the values
  // its subgraphs read from outside (ir::outer_scope_values(node), in that order). The kernel
  // fills `outputs` (one entry per node output, pre-sized by the executor) with tensors from
  // `alloc`, with views of its inputs for ops that do not change bytes (Reshape, Identity, …),
  // or with tensors owning their bytes (a subgraph's outputs).
  virtual Status run(std::span<const ir::Tensor* const> inputs, std::span<ir::Tensor> outputs,
                     Allocator& alloc) = 0;
  // Whether run_fused() takes epilogues of this form (asked once, when the executor plans).
  virtual bool fuses(bool /*residual*/, Epilogue::Activation /*activation*/) const { return false; }
  // run() with `epilogue` applied to output 0. Returns false, having allocated nothing, when
  // these inputs are outside what the kernel fuses (the executor then runs the nodes apart).
  virtual Expected<bool> run_fused(std::span<const ir::Tensor* const> /*inputs*/,
                                   std::span<ir::Tensor> /*outputs*/, Allocator& /*alloc*/,
                                   const Epilogue& /*epilogue*/) {
    return false;
  }
};

using KernelFactory = Expected<std::unique_ptr<Kernel>> (*)(const KernelContext&);

// Statistics of one observed tensor computed where the tensor lives (host or device), so a
// calibrator never needs the data itself on a GPU backend.
struct MinMaxStats {
  double min = 0.0;          // signed minimum over finite values
  double max = 0.0;          // signed maximum over finite values
  double abs_max = 0.0;      // max |x| over finite values
  int64_t nonfinite = 0;     // NaN / ±Inf count
  int64_t first_nonfinite = -1;  // flat index of the first one, -1 if none
};

class TensorStatistics {
 public:
  virtual ~TensorStatistics() = default;
  virtual MinMaxStats minmax() const = 0;
  // Adds the counts of |x| into `counts` (size B) with the bin rule of specs/calibrators.md:
  // bin = min(floor((double)|x| / (double)T * B), B - 1); non-finite values are skipped.
  virtual void histogram(double T, std::span<uint64_t> counts) const = 0;
};

// What an observer is shown.
struct ObservedTensor {
  const std::string& name;
  const ir::Node* producer;           // null for graph inputs
  const ir::Shape& shape;             // batch dim first for activations
  ir::DType dtype;
  const ir::Tensor* host;             // the data when host-resident (CPU backend); else null
  const TensorStatistics& stats;      // always available
};

class Observer {
 public:
  virtual ~Observer() = default;
  // Asked once per prepared graph: the values this observer wants to see.
  virtual std::vector<std::string> wanted(const ir::Graph& graph) = 0;
  // Shown each wanted value right after it is produced and before it is freed (no copy).
  virtual Status observe(const ObservedTensor& tensor) = 0;
};

// A backend supplies kernels and memory. The CPU backend is the reference.
class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  // True if this backend can run the node's op at the given opset.
  virtual bool supports(const ir::Node& node, int64_t opset) const = 0;
  virtual Expected<std::unique_ptr<Kernel>> create_kernel(const KernelContext& ctx) = 0;
  // Statistics over a tensor this backend produced, computed where it lives. The result
  // borrows `tensor` and must not outlive it.
  virtual std::unique_ptr<TensorStatistics> statistics(const ir::Tensor& tensor,
                                                       int threads) const = 0;
};

// The instruction-set levels the CPU kernels are compiled for, lowest first: x86-64's SSE2,
// AVX2 + FMA (x86-64-v3), AVX-512 (x86-64-v4). One build holds all of them and picks at run time.
enum class CpuIsa { kAuto, kBaseline, kAvx2, kAvx512 };
// "auto", "baseline", "avx2", "avx512".
std::string cpu_isa_name(CpuIsa isa);
// The level a name spells (cpu_isa_name's words); a usage error naming the choices otherwise.
Expected<CpuIsa> parse_cpu_isa(const std::string& name);
// The best level both this CPU (cpuid, read once) and this build (GCC builds all three; other
// compilers only the baseline) run.
CpuIsa best_cpu_isa();
// `requested` made concrete: kAuto is best_cpu_isa(); a level above it is a usage error.
Expected<CpuIsa> resolve_cpu_isa(CpuIsa requested);

struct CpuBackendOptions {
  // Every kernel in its plain reference form (slow; for tests and for bisecting a fast kernel).
  bool reference = false;
  // 3x3 stride-1 convolutions may run Winograd's F(2x2, 3x3); off, every conv sums directly
  // (to compare the two; `ptq`: PTQ_WINOGRAD=0).
  bool winograd = true;
  // The instruction-set level whose kernels run (docs/DESIGN.md, "Instruction sets"): kAuto is
  // the best this CPU and build have; a lower one forces that level's kernels (tests, users on
  // odd machines; `ptq --cpu-isa`). A level above what the CPU runs makes every create_kernel
  // fail with resolve_cpu_isa's error.
  CpuIsa isa = CpuIsa::kAuto;
};
std::unique_ptr<Backend> make_cpu_backend(CpuBackendOptions options = {});

struct ExecutorOptions {
  int threads = 1;
  // Fold Add / Relu / Clip into the Conv or Gemm before them where the kernel can and no
  // observer wants the tensors in between; off runs every node apart (tests, bisecting).
  bool fuse = true;
  // The execution-time graph optimizer (docs/DESIGN.md, "Optimizer"): fold nodes computed from
  // constants alone once, and run spelled-out ops (LayerNorm, Gelu, HardSwish, SiLU, Mish,
  // Pow(x, 2)) as one kernel where no observer wants what that would hide or change; off runs
  // the model's nodes as they are (tests, bisecting).
  bool optimize = true;
  // Time each step and print the totals per op type and the costliest steps to stderr when
  // the executor is destroyed (`ptq`: PTQ_CPU_TIMING=1).
  bool step_timing = false;
};

// Memory figures of the last run, from the executor's own bookkeeping.
struct RunStats {
  int64_t weight_bytes = 0;        // initializers (borrowed from the model, never copied)
  int64_t peak_live_bytes = 0;     // largest sum of live activation bytes at any step
  int64_t pool_bytes = 0;          // bytes the pool holds (live + free buffers)
  int64_t steps = 0;               // nodes run
  int64_t fused = 0;               // of them, run inside a Conv/Gemm kernel (Add, Relu, Clip)
  int64_t rewritten = 0;           // of them, replaced by the optimizer's substitute nodes
  int64_t folded = 0;              // nodes not among them: computed once, from constants
};

using NamedTensors = std::vector<std::pair<std::string, ir::Tensor>>;

// Runs one model. Kernels are prepared once; buffers are pooled and reused across runs; a
// tensor is freed right after its last consumer; initializers are borrowed, never copied.
class Executor {
 public:
  // Fails (listing every one) if the backend cannot run some op of the model. `model` and
  // `backend` are borrowed and must outlive the executor (initializers are used in place).
  static Expected<std::unique_ptr<Executor>> create(const ir::Model& model, Backend& backend,
                                                    ExecutorOptions options = {});
  virtual ~Executor() = default;
  // Runs on the named graph inputs; returns the graph outputs in graph order (owned tensors).
  // Inputs are borrowed for the run, never copied. Each observer is asked wanted() the first
  // time this executor sees it (by address); see forget_observers().
  virtual Expected<NamedTensors> run(const NamedTensors& inputs,
                                     std::span<Observer* const> observers = {}) = 0;
  // run(), writing each output into the tensor at its position in `reuse` (spent outputs of an
  // earlier run) where that one owns storage of the output's dtype and shape (ir::copy_into):
  // a caller running batch after batch saves taking fresh memory for every output. A backend
  // that cannot use them ignores them.
  virtual Expected<NamedTensors> run_reusing(const NamedTensors& inputs, NamedTensors reuse,
                                             std::span<Observer* const> observers = {}) {
    (void)reuse;
    return run(inputs, observers);
  }
  // Drops the remembered wanted() answers, e.g. before passing a new observer that may live
  // at the address of a destroyed one.
  virtual void forget_observers() = 0;
  virtual RunStats last_run_stats() const = 0;
  // The shape of every value the last run fed or computed, by name, in plan order: what an
  // observer wanting them all would be shown, without one (which would keep fused kernels
  // apart). A value a fused kernel or an optimizer rewrite hides has the output's shape (a
  // rewritten LayerNorm's mean and variance: with the normalised axes at 1); a folded value
  // its own. Empty from a backend that does not track them.
  virtual std::vector<std::pair<std::string, ir::Shape>> value_shapes() const { return {}; }
};

// The op types of `model` (its subgraphs' included) that `backend` cannot run, sorted and
// unique; another domain's as "domain.Op".
std::vector<std::string> unsupported_ops(const ir::Model& model, const Backend& backend);

}  // namespace ptq::runtime
