// The gpu-shared stage (codegen/CodegenStages.def): a contraction runs as
// blocks that each compute a tile of its outputs, staging the part of every
// input the tile reads (its footprint) in shared memory, one slice of the
// reduction at a time: the block's threads copy the slice cooperatively
// (consecutive threads, consecutive elements), wait at a barrier, and each
// thread accumulates a register tile (rows x columns, as gpu-coarsen's) from
// shared memory. A global element is then read once per block instead of
// once per thread that needs it.
//
// Any generic the contraction stages take qualifies whose input indices are
// sums of loop dims times non-negative constants plus a constant (matmuls,
// convolutions with strides and dilations, window cells of padded ones): the
// footprint of a box of loop dims is then a box, its corner the image of the
// box's corner. Tiles divide the loop extents exactly (static shapes), so no
// thread is guarded across a barrier. The reduction order of the naive loops
// is kept (the outermost reduction dim is the one sliced), so results are
// bit-identical to them.
//
// For Cuda the stage builds a gpu.launch with the footprints as workgroup
// attributions; for CudaNests the same copy and compute steps run on the host
// in loops over blocks and threads, a phase at a time, the accumulators kept
// in a buffer between the phases: the tiling and indexing the GPU runs are the
// ones checked against the interpreter there.
#include <numeric>

#include "codegen/mlir/Context.h"
#include "codegen/mlir/GpuContractions.h"
#include "ir/Error.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/AffineExprVisitor.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

namespace friction::codegen {
namespace {

// Reduction steps a slice takes at most (a matmul's k, or a convolution's
// input channels times its window), the fewest a contraction must have to
// be worth staging (a padded convolution's window cell of 3 input channels
// ran slower staged), and the shared memory a block's footprints may take:
// a quarter of an sm_80's, so several blocks fit.
constexpr int64_t kSliceSteps = 16;
constexpr int64_t kMinReductionSteps = 2 * kSliceSteps;
constexpr int64_t kSharedBytes = 24 * 1024;
constexpr int64_t kMinBlockThreads = 32, kMaxBlockThreads = 256;
constexpr int64_t kMaxBlockOutputs = 16384;
// A thread's elements of a slice's footprints, held in registers from their
// fetch to their store.
constexpr int64_t kMaxSharesPerThread = 32;

// Sums of dims times non-negative constants, plus a constant.
bool isMonotoneLinear(mlir::AffineExpr e) {
  if (mlir::isa<mlir::AffineDimExpr, mlir::AffineConstantExpr>(e)) return true;
  auto bin = mlir::dyn_cast<mlir::AffineBinaryOpExpr>(e);
  if (!bin) return false;
  if (e.getKind() == mlir::AffineExprKind::Add) return isMonotoneLinear(bin.getLHS()) && isMonotoneLinear(bin.getRHS());
  auto scale = mlir::dyn_cast<mlir::AffineConstantExpr>(bin.getRHS());
  return e.getKind() == mlir::AffineExprKind::Mul && scale && scale.getValue() >= 0 && isMonotoneLinear(bin.getLHS());
}

// `map` less its value at 0: the offset of an index from its footprint's corner.
mlir::AffineMap withoutConstants(mlir::AffineMap map) {
  llvm::SmallVector<int64_t> zeros(map.getNumDims(), 0);
  llvm::SmallVector<int64_t> at0 = map.compose(zeros);
  llvm::SmallVector<mlir::AffineExpr> results;
  for (unsigned r = 0; r < map.getNumResults(); ++r)
    results.push_back(mlir::simplifyAffineExpr(map.getResult(r) - at0[r], map.getNumDims(), 0));
  return mlir::AffineMap::get(map.getNumDims(), 0, results, map.getContext());
}

llvm::SmallVector<int64_t> divisors(int64_t n, int64_t upTo) {
  llvm::SmallVector<int64_t> out;
  for (int64_t d = 1; d <= std::min(n, upTo); ++d)
    if (n % d == 0) out.push_back(d);
  return out;
}

int64_t largestDivisor(int64_t n, int64_t atMost) { return divisors(n, atMost).back(); }

int64_t product(llvm::ArrayRef<int64_t> v) { return std::accumulate(v.begin(), v.end(), int64_t(1), std::multiplies<>()); }

// A footprint's shared buffer: padded by one element along its last dim when
// that is even, so that threads reading down a column hit different banks.
llvm::SmallVector<int64_t> paddedShape(llvm::ArrayRef<int64_t> box) {
  llvm::SmallVector<int64_t> shape(box);
  if (shape.size() > 1 && shape.back() % 2 == 0) ++shape.back();
  return shape;
}

// How one contraction runs: tiles, the thread's register tile, footprints.
struct SharedTiling {
  ContractionLoops loops;
  llvm::SmallVector<int64_t> tile;  // per loop dim: a block's extent (parallel dims), a slice's (reduction dims)
  unsigned sliced = 0;              // the reduction dim cut into slices (the outermost)
  unsigned rowDim = 0;
  int64_t rows = 1, columns = 1;    // a thread's outputs along rowDim and loops.fast
  int64_t threads = 0, blocks = 0;
  llvm::SmallVector<mlir::AffineMap> offsets;                // per input: withoutConstants(its map)
  llvm::SmallVector<llvm::SmallVector<int64_t>> footprints;  // per input: its box's extents (empty: a scalar)

  int64_t slices() const { return loops.ranges[sliced] / tile[sliced]; }
  // The elements of a slice's footprints a thread copies.
  int64_t shares() const {
    int64_t n = 0;
    for (const auto& box : footprints) n += box.empty() ? 0 : (product(box) + threads - 1) / threads;
    return n;
  }
  int64_t perThread() const { return rows * columns; }
  // A block's threads along parallel dim d.
  int64_t threadsAlong(unsigned d) const {
    return tile[d] / (d == rowDim ? rows : 1) / (d == loops.fast ? columns : 1);
  }
};

// The tiles of `op`, or none when it does not qualify or no tiling leaves
// gpuCoarsenMinThreads threads of gpuThreadOutputs outputs or more each
// (gpu-coarsen takes it then). Among the tilings
// that do, the one staging the fewest elements per output, in blocks whose
// warps are fullest and whose tile is wide along the fast dim; then the
// widest, then the one with the most threads.
std::optional<SharedTiling> planSharedTiling(mlir::linalg::GenericOp op, const CodegenOptions& options) {
  auto loops = contractionLoops(op);
  if (!loops || !loops->columnReuse) return std::nullopt;
  SharedTiling plan;
  int rowDim = -1;
  for (unsigned d : loops->parallel)
    if (loops->rowReuse[d] > 0 &&
        (rowDim < 0 || loops->rowReuse[d] > loops->rowReuse[size_t(rowDim)] ||
         (loops->rowReuse[d] == loops->rowReuse[size_t(rowDim)] && loops->ranges[d] > loops->ranges[size_t(rowDim)])))
      rowDim = int(d);
  if (rowDim < 0) return std::nullopt;
  plan.rowDim = unsigned(rowDim);
  std::vector<int64_t> elementBytes;
  for (mlir::OpOperand* in : op.getDpsInputOperands()) {
    mlir::AffineMap map = op.getMatchingIndexingMap(in);
    auto type = mlir::dyn_cast<mlir::MemRefType>(in->get().getType());
    if (type && (type.getRank() == 0 || !type.getElementType().isIntOrFloat() ||
                 !llvm::all_of(map.getResults(), isMonotoneLinear)))
      return std::nullopt;
    plan.offsets.push_back(withoutConstants(map));
    elementBytes.push_back(type ? int64_t(type.getElementType().getIntOrFloatBitWidth() + 7) / 8 : 0);
  }
  const llvm::SmallVector<int64_t>& ranges = loops->ranges;
  plan.tile = ranges;
  plan.sliced = loops->reduction.front();
  int64_t inner = 1;  // the steps of the reduction dims a slice takes whole
  for (unsigned d : loops->reduction) inner *= d == plan.sliced ? 1 : ranges[d];
  if (inner * ranges[plan.sliced] < kMinReductionSteps) return std::nullopt;
  plan.tile[plan.sliced] = largestDivisor(ranges[plan.sliced], std::max<int64_t>(1, kSliceSteps / inner));
  plan.loops = *loops;

  std::optional<SharedTiling> best;
  double bestCost = 0;
  llvm::SmallVector<llvm::SmallVector<int64_t>> choices;
  for (unsigned d : loops->parallel) choices.push_back(divisors(ranges[d], kMaxBlockOutputs));
  std::function<void(size_t, int64_t)> visit = [&](size_t j, int64_t outputs) {
    if (outputs > kMaxBlockOutputs) return;
    if (j < loops->parallel.size()) {
      for (int64_t t : choices[j]) {
        if (outputs * t > kMaxBlockOutputs) break;
        plan.tile[loops->parallel[j]] = t;
        visit(j + 1, outputs * t);
      }
      return;
    }
    SharedTiling p = plan;
    p.rows = largestDivisor(p.tile[p.rowDim], options.gpuThreadOutputs);
    p.columns = largestDivisor(p.tile[loops->fast], options.gpuSharedColumns);
    p.threads = outputs / p.perThread();
    p.blocks = 1;
    for (unsigned d : loops->parallel) p.blocks *= ranges[d] / p.tile[d];
    // A thread's register tile must be full (gpu-thread-outputs outputs): with
    // 2 or 3 outputs it reads shared memory about as often as gpu-coarsen's
    // threads read the cache, and the barriers come on top (an H200 ran
    // ResNet-50's batch-1 convolutions 1.1-3x slower staged that way).
    if (p.rows == 1 || p.perThread() < options.gpuThreadOutputs || p.threads < kMinBlockThreads ||
        p.threads > kMaxBlockThreads || p.threads * p.blocks < options.gpuCoarsenMinThreads)
      return;
    llvm::SmallVector<int64_t> last;
    for (int64_t t : p.tile) last.push_back(t - 1);
    int64_t bytes = 0, staged = 0;
    for (size_t i = 0; i < p.offsets.size(); ++i) {
      llvm::SmallVector<int64_t> box;
      if (elementBytes[i] > 0)
        for (int64_t e : p.offsets[i].compose(last)) box.push_back(e + 1);
      if (!box.empty()) {
        bytes += elementBytes[i] * product(paddedShape(box));
        staged += product(box);
      }
      p.footprints.push_back(box);
    }
    if (bytes > kSharedBytes || p.shares() > kMaxSharesPerThread) return;
    // Consecutive threads step the fast dim: a tile narrower along it than a
    // half warp (or the dim) splits a warp's loads and stores of the output
    // and its copies of the footprints into strided pieces.
    const bool coalesced = p.tile[loops->fast] >= std::min<int64_t>(ranges[loops->fast], 16);
    const double warps = double((p.threads + 31) / 32 * 32);
    const double cost = double(staged) / double(outputs) * warps / double(p.threads) * (coalesced ? 1 : 2);
    auto better = [&] {
      if (!best || cost < bestCost * (1 - 1e-9)) return true;
      if (cost > bestCost * (1 + 1e-9)) return false;
      if (p.tile[loops->fast] != best->tile[loops->fast]) return p.tile[loops->fast] > best->tile[loops->fast];
      return p.threads > best->threads;
    };
    if (better()) {
      best = p;
      bestCost = cost;
    }
  };
  visit(0, 1);
  return best;
}

// The coordinates of `linear` in a row-major box of `counts` (the first
// not reduced: linear must lie in the box). In 32 bits: 64-bit divisions by
// constants take several times the instructions on a GPU, and these run for
// every element a thread copies.
llvm::SmallVector<mlir::Value> delinearize(mlir::OpBuilder& b, mlir::Location loc, mlir::Value linear,
                                           llvm::ArrayRef<int64_t> counts) {
  FRICTION_CHECK(product(counts) < (int64_t(1) << 31), "codegen: gpu-shared's boxes must have fewer than 2^31 elements");
  auto i32 = b.getI32Type();
  mlir::Value rest = b.create<mlir::arith::IndexCastUIOp>(loc, i32, linear);
  llvm::SmallVector<mlir::Value> coords(counts.size());
  for (size_t i = counts.size(); i-- > 0;) {
    mlir::Value coord = rest;
    if (i > 0) {
      mlir::Value n = b.create<mlir::arith::ConstantIntOp>(loc, counts[i], i32);
      coord = b.create<mlir::arith::RemUIOp>(loc, rest, n);
      rest = b.create<mlir::arith::DivUIOp>(loc, rest, n);
    }
    coords[i] = b.create<mlir::arith::IndexCastUIOp>(loc, b.getIndexType(), coord);
  }
  return coords;
}

// The steps of a shared-tile kernel, each for one block or one thread of it;
// the Cuda and CudaNests forms differ only in how they loop over them.
class SharedTileSteps {
 public:
  SharedTileSteps(mlir::linalg::GenericOp op, const SharedTiling& plan) : op_(op), plan_(plan), loc_(op.getLoc()) {}

  // The shared buffer of input i (paddedShape), or a null type for a scalar input.
  mlir::MemRefType sharedType(unsigned i, mlir::Attribute memorySpace) const {
    if (plan_.footprints[i].empty()) return {};
    llvm::SmallVector<int64_t> shape = paddedShape(plan_.footprints[i]);
    auto element = mlir::cast<mlir::MemRefType>(op_.getDpsInputOperand(i)->get().getType()).getElementType();
    return mlir::MemRefType::get(shape, element, mlir::MemRefLayoutAttrInterface{}, memorySpace);
  }

  // The loop dims of block `block`'s first output (reduction dims 0).
  llvm::SmallVector<mlir::Value> blockOrigin(mlir::OpBuilder& b, mlir::Value block) const {
    llvm::SmallVector<int64_t> counts;
    for (unsigned d : plan_.loops.parallel) counts.push_back(plan_.loops.ranges[d] / plan_.tile[d]);
    return place(b, delinearize(b, loc_, block, counts), [&](unsigned d) { return plan_.tile[d]; });
  }

  // The loop dims of thread `thread`'s first output within the block's tile.
  llvm::SmallVector<mlir::Value> threadOrigin(mlir::OpBuilder& b, mlir::Value thread) const {
    llvm::SmallVector<int64_t> counts;
    for (unsigned d : plan_.loops.parallel) counts.push_back(plan_.threadsAlong(d));
    return place(b, delinearize(b, loc_, thread, counts), [&](unsigned d) { return d == plan_.rowDim ? plan_.rows : 1; });
  }

  // The thread's output t, within the block's tile: rows are neighbours,
  // columns a block tile's width / columns apart.
  llvm::SmallVector<mlir::Value> outputAt(mlir::OpBuilder& b, llvm::ArrayRef<mlir::Value> thread, int64_t t) const {
    llvm::SmallVector<mlir::Value> dims(thread);
    auto offset = [&](unsigned d, int64_t by) {
      if (by > 0) dims[d] = b.create<mlir::arith::AddIOp>(loc_, dims[d], index(b, by));
    };
    offset(plan_.rowDim, t / plan_.columns);
    offset(plan_.loops.fast, t % plan_.columns * (plan_.tile[plan_.loops.fast] / plan_.columns));
    return dims;
  }

  llvm::SmallVector<mlir::Value> loadOutputs(mlir::OpBuilder& b, llvm::ArrayRef<mlir::Value> block,
                                             llvm::ArrayRef<mlir::Value> thread) const {
    llvm::SmallVector<mlir::Value> values;
    for (int64_t t = 0; t < plan_.perThread(); ++t)
      values.push_back(b.create<mlir::memref::LoadOp>(loc_, output(), outputIndices(b, block, thread, t)));
    return values;
  }

  void storeOutputs(mlir::OpBuilder& b, llvm::ArrayRef<mlir::Value> block, llvm::ArrayRef<mlir::Value> thread,
                    mlir::ValueRange values) const {
    for (int64_t t = 0; t < plan_.perThread(); ++t)
      b.create<mlir::memref::StoreOp>(loc_, values[size_t(t)], output(), outputIndices(b, block, thread, t));
  }

  // Thread `thread`'s share of slice `slice` of every input's footprint
  // (elements thread, thread + threads, ... of each box), read from global
  // memory: all its loads issued together, before any is needed.
  llvm::SmallVector<mlir::Value> fetchSlice(mlir::OpBuilder& b, llvm::ArrayRef<mlir::Value> block, mlir::Value slice,
                                            mlir::Value thread) const {
    llvm::SmallVector<mlir::Value> corner(block);
    corner[plan_.sliced] = b.create<mlir::arith::MulIOp>(loc_, slice, index(b, plan_.tile[plan_.sliced]));
    llvm::SmallVector<mlir::Value> values;
    forEachShare(b, thread, [&](unsigned i, llvm::ArrayRef<mlir::Value> at, mlir::Value) {
      llvm::SmallVector<mlir::Value> origin = applyMap(b, loc_, op_.getIndexingMapsArray()[i], corner), from;
      for (size_t r = 0; r < at.size(); ++r) from.push_back(b.create<mlir::arith::AddIOp>(loc_, origin[r], at[r]));
      values.push_back(b.create<mlir::memref::LoadOp>(loc_, op_.getDpsInputOperand(i)->get(), from));
    });
    return values;
  }

  // Stores what fetchSlice read into the footprints in `shared`.
  void stageSlice(mlir::OpBuilder& b, mlir::Value thread, mlir::ValueRange values, llvm::ArrayRef<mlir::Value> shared) const {
    size_t next = 0;
    forEachShare(b, thread, [&](unsigned i, llvm::ArrayRef<mlir::Value> at, mlir::Value inside) {
      mlir::Value v = values[next++];
      if (!inside) {
        b.create<mlir::memref::StoreOp>(loc_, v, shared[i], at);
        return;
      }
      b.create<mlir::scf::IfOp>(loc_, inside, [&](mlir::OpBuilder& ib, mlir::Location) {
        ib.create<mlir::memref::StoreOp>(loc_, v, shared[i], at);
        ib.create<mlir::scf::YieldOp>(loc_);
      });
    });
  }

  // The thread's accumulators after the slice staged in `shared`.
  llvm::SmallVector<mlir::Value> accumulateSlice(mlir::OpBuilder& b, llvm::ArrayRef<mlir::Value> thread,
                                                 llvm::ArrayRef<mlir::Value> shared, mlir::ValueRange accumulators) const {
    llvm::SmallVector<int64_t> extents;
    for (unsigned d : plan_.loops.reduction) extents.push_back(plan_.tile[d]);
    auto dims = [&](mlir::OpBuilder& nb, int64_t t, mlir::ValueRange steps) {
      llvm::SmallVector<mlir::Value> d = outputAt(nb, thread, t);
      for (size_t j = 0; j < steps.size(); ++j) d[plan_.loops.reduction[j]] = steps[j];
      return d;
    };
    auto load = [&](mlir::OpBuilder& nb, unsigned i, llvm::ArrayRef<mlir::Value> d) -> mlir::Value {
      return nb.create<mlir::memref::LoadOp>(loc_, shared[i], applyMap(nb, loc_, plan_.offsets[i], d));
    };
    return accumulateOutputs(b, loc_, op_, extents, llvm::to_vector(accumulators), dims, load);
  }

  mlir::Value index(mlir::OpBuilder& b, int64_t v) const { return b.create<mlir::arith::ConstantIndexOp>(loc_, v); }

 private:
  mlir::Value output() const { return op_.getDpsInitOperand(0)->get(); }

  // Calls f(input, where in its box, inside) for each element of a
  // footprint thread `thread` copies: element thread + round x threads, one
  // round after another. In a last, partial round, a thread past the box
  // reads the box's last element and `inside` (else null) says not to store it.
  void forEachShare(mlir::OpBuilder& b, mlir::Value thread,
                    llvm::function_ref<void(unsigned, llvm::ArrayRef<mlir::Value>, mlir::Value)> f) const {
    for (unsigned i = 0; i < plan_.footprints.size(); ++i) {
      const llvm::SmallVector<int64_t>& box = plan_.footprints[i];
      if (box.empty()) continue;
      const int64_t size = product(box);
      for (int64_t first = 0; first < size; first += plan_.threads) {
        mlir::Value element = b.create<mlir::arith::AddIOp>(loc_, thread, index(b, first));
        mlir::Value inside;
        if (first + plan_.threads > size) {
          inside = b.create<mlir::arith::CmpIOp>(loc_, mlir::arith::CmpIPredicate::ult, element, index(b, size));
          element = b.create<mlir::arith::MinUIOp>(loc_, element, index(b, size - 1));
        }
        f(i, delinearize(b, loc_, element, box), inside);
      }
    }
  }

  // Loop dims from coordinates along the parallel dims, each times scale(d); reduction dims 0.
  llvm::SmallVector<mlir::Value> place(mlir::OpBuilder& b, llvm::ArrayRef<mlir::Value> coords,
                                       llvm::function_ref<int64_t(unsigned)> scale) const {
    llvm::SmallVector<mlir::Value> dims(plan_.loops.ranges.size(), index(b, 0));
    for (size_t j = 0; j < coords.size(); ++j) {
      unsigned d = plan_.loops.parallel[j];
      dims[d] = scale(d) == 1 ? coords[j] : b.create<mlir::arith::MulIOp>(loc_, coords[j], index(b, scale(d))).getResult();
    }
    return dims;
  }

  llvm::SmallVector<mlir::Value> outputIndices(mlir::OpBuilder& b, llvm::ArrayRef<mlir::Value> block,
                                               llvm::ArrayRef<mlir::Value> thread, int64_t t) const {
    llvm::SmallVector<mlir::Value> dims = outputAt(b, thread, t);
    for (unsigned d : plan_.loops.parallel) dims[d] = b.create<mlir::arith::AddIOp>(loc_, block[d], dims[d]);
    return applyMap(b, loc_, op_.getIndexingMapsArray().back(), dims);
  }

  mutable mlir::linalg::GenericOp op_;  // its accessors are not const
  const SharedTiling& plan_;
  mlir::Location loc_;
};

// Cuda: one gpu.launch of plan.blocks blocks of plan.threads threads, the
// footprints its workgroup memory, the accumulators in registers.
void launchSharedTiles(mlir::linalg::GenericOp op, const SharedTiling& plan) {
  SharedTileSteps steps(op, plan);
  mlir::OpBuilder b(op);
  const mlir::Location loc = op.getLoc();
  auto workgroup = mlir::gpu::AddressSpaceAttr::get(op.getContext(), mlir::gpu::AddressSpace::Workgroup);
  llvm::SmallVector<mlir::Type> types;
  llvm::SmallVector<int> attribution;  // per input: its workgroup attribution, -1 for a scalar
  for (unsigned i = 0; i < plan.footprints.size(); ++i) {
    mlir::MemRefType type = steps.sharedType(i, workgroup);
    attribution.push_back(type ? int(types.size()) : -1);
    if (type) types.push_back(type);
  }
  mlir::Value one = steps.index(b, 1);
  auto launch = b.create<mlir::gpu::LaunchOp>(loc, steps.index(b, plan.blocks), one, one, steps.index(b, plan.threads),
                                              one, one, nullptr, nullptr, mlir::ValueRange{}, types);
  mlir::OpBuilder lb = mlir::OpBuilder::atBlockBegin(&launch.getBody().front());
  llvm::SmallVector<mlir::Value> shared;
  for (int a : attribution) shared.push_back(a < 0 ? mlir::Value() : mlir::Value(launch.getWorkgroupAttributions()[size_t(a)]));
  auto block = steps.blockOrigin(lb, launch.getBlockIds().x);
  mlir::Value thread = launch.getThreadIds().x;
  auto origin = steps.threadOrigin(lb, thread);
  // Carried through the slices: the accumulators, then the next slice's
  // elements, fetched while this one is computed (the last slice fetches
  // itself again rather than branch).
  llvm::SmallVector<mlir::Value> carried = steps.loadOutputs(lb, block, origin);
  const size_t outputs = carried.size();
  carried.append(steps.fetchSlice(lb, block, steps.index(lb, 0), thread));
  auto loop = lb.create<mlir::scf::ForOp>(
      loc, steps.index(lb, 0), steps.index(lb, plan.slices()), steps.index(lb, 1), carried,
      [&](mlir::OpBuilder& fb, mlir::Location, mlir::Value slice, mlir::ValueRange values) {
        steps.stageSlice(fb, thread, values.drop_front(outputs), shared);
        fb.create<mlir::gpu::BarrierOp>(loc);
        mlir::Value following = fb.create<mlir::arith::MinUIOp>(
            loc, fb.create<mlir::arith::AddIOp>(loc, slice, steps.index(fb, 1)), steps.index(fb, plan.slices() - 1));
        llvm::SmallVector<mlir::Value> fetched = steps.fetchSlice(fb, block, following, thread);
        llvm::SmallVector<mlir::Value> next = steps.accumulateSlice(fb, origin, shared, values.take_front(outputs));
        fb.create<mlir::gpu::BarrierOp>(loc);  // the next slice overwrites the footprints
        next.append(fetched);
        fb.create<mlir::scf::YieldOp>(loc, next);
      });
  steps.storeOutputs(lb, block, origin, loop.getResults().take_front(outputs));
  lb.create<mlir::gpu::TerminatorOp>(loc);
  op.erase();
}

// CudaNests: the same steps looped over blocks and, a phase at a time, over
// threads; the footprints and the accumulators (threads x outputs) are
// buffers allocated before the loops (which parallel-loops then runs as one
// thread's serial work).
void loopSharedTiles(mlir::linalg::GenericOp op, const SharedTiling& plan) {
  SharedTileSteps steps(op, plan);
  const mlir::Location loc = op.getLoc();
  mlir::OpBuilder entry(op);
  llvm::SmallVector<mlir::Value> shared;
  for (unsigned i = 0; i < plan.footprints.size(); ++i) {
    mlir::MemRefType type = steps.sharedType(i, {});
    shared.push_back(type ? entry.create<mlir::memref::AllocaOp>(loc, type).getResult() : mlir::Value());
  }
  auto element = mlir::cast<mlir::MemRefType>(op.getDpsInitOperand(0)->get().getType()).getElementType();
  mlir::Value registers =
      entry.create<mlir::memref::AllocaOp>(loc, mlir::MemRefType::get({plan.threads, plan.perThread()}, element));
  mlir::OpBuilder b(op);
  auto forEach = [&](mlir::OpBuilder& ob, int64_t count, llvm::function_ref<void(mlir::OpBuilder&, mlir::Value)> body) {
    ob.create<mlir::scf::ForOp>(loc, steps.index(ob, 0), steps.index(ob, count), steps.index(ob, 1), mlir::ValueRange{},
                                [&](mlir::OpBuilder& fb, mlir::Location, mlir::Value iv, mlir::ValueRange) {
                                  body(fb, iv);
                                  fb.create<mlir::scf::YieldOp>(loc);
                                });
  };
  auto registersOf = [&](mlir::OpBuilder& ob, mlir::Value thread) {
    llvm::SmallVector<mlir::Value> values;
    for (int64_t t = 0; t < plan.perThread(); ++t)
      values.push_back(ob.create<mlir::memref::LoadOp>(loc, registers, mlir::ValueRange{thread, steps.index(ob, t)}));
    return values;
  };
  auto keep = [&](mlir::OpBuilder& ob, mlir::Value thread, mlir::ValueRange values) {
    for (int64_t t = 0; t < plan.perThread(); ++t)
      ob.create<mlir::memref::StoreOp>(loc, values[size_t(t)], registers, mlir::ValueRange{thread, steps.index(ob, t)});
  };
  forEach(b, plan.blocks, [&](mlir::OpBuilder& bb, mlir::Value blockId) {
    auto block = steps.blockOrigin(bb, blockId);
    forEach(bb, plan.threads, [&](mlir::OpBuilder& tb, mlir::Value thread) {
      keep(tb, thread, steps.loadOutputs(tb, block, steps.threadOrigin(tb, thread)));
    });
    forEach(bb, plan.slices(), [&](mlir::OpBuilder& sb, mlir::Value slice) {
      forEach(sb, plan.threads, [&](mlir::OpBuilder& tb, mlir::Value thread) {
        steps.stageSlice(tb, thread, steps.fetchSlice(tb, block, slice, thread), shared);
      });
      forEach(sb, plan.threads, [&](mlir::OpBuilder& tb, mlir::Value thread) {
        keep(tb, thread, steps.accumulateSlice(tb, steps.threadOrigin(tb, thread), shared, registersOf(tb, thread)));
      });
    });
    forEach(bb, plan.threads, [&](mlir::OpBuilder& tb, mlir::Value thread) {
      steps.storeOutputs(tb, block, steps.threadOrigin(tb, thread), registersOf(tb, thread));
    });
  });
  op.erase();
}

}  // namespace

void tileContractionsInSharedMemory(mlir::ModuleOp module, const CodegenOptions& options) {
  FRICTION_CHECK(options.gpuSharedColumns >= 1, "codegen: gpu shared columns must be positive");
  generalizeContractions(module);
  std::vector<std::pair<mlir::linalg::GenericOp, SharedTiling>> plans;
  module.walk([&](mlir::linalg::GenericOp op) {
    if (auto plan = planSharedTiling(op, options)) plans.push_back({op, *plan});
  });
  for (auto& [op, plan] : plans) {
    if (options.target == Target::Cuda) launchSharedTiles(op, plan);
    else loopSharedTiles(op, plan);
  }
  runPasses(module, "gpu-shared", [](mlir::PassManager& pm) { pm.addPass(mlir::createCSEPass()); });
}

}  // namespace friction::codegen
