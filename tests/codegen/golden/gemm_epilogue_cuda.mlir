// Relu(x W^T + b) through the cuda pipeline: the fill, the contraction and
// the epilogue become three scf.parallel nests (reductions as scf.for inside;
// gpu-coarsen makes the contraction's, its accumulator carried in a register
// -- 64 outputs are too few threads to give one thread several),
// each flattened to one dim of 4 x 16 = 64 iterations and tiled into blocks
// (one block of 64 threads here), then three gpu.funcs of ONE gpu.module that
// the host function launches in order; nvvm leaves a gpu.binary of PTX.

// CHECK-LABEL: stage: gpu-coarsen
// CHECK: scf.parallel (%{{.*}}, %{{.*}}) = (%c0, %c0) to (%c4, %c16) step (%c1, %c1)
// CHECK: %[[ACC:.*]] = memref.load %arg3
// CHECK: scf.for %{{.*}} = %c0 to %c32 step %c1 iter_args(%{{.*}} = %[[ACC]]) -> (f32)
// CHECK: arith.mulf
// CHECK-NOT: memref.store
// CHECK: scf.yield
// CHECK: memref.store

// CHECK-LABEL: stage: parallel-loops
// CHECK: scf.parallel (%{{.*}}, %{{.*}}) = (%c0, %c0) to (%c4, %c16)
// CHECK: memref.store %cst, %arg3
// CHECK: scf.parallel
// CHECK: scf.for %{{.*}} = %c0 to %c32
// CHECK: arith.mulf
// CHECK: scf.parallel
// CHECK: arith.select

// CHECK-LABEL: stage: gpu-tile
// CHECK: scf.parallel (%[[B:.*]]) = (%c0) to (%c64) step (%c64)
// CHECK-NEXT: scf.parallel (%[[T:.*]]) = (%c0) to (%c64) step (%c1)
// CHECK-NEXT: %[[I:.*]] = arith.addi %[[T]], %[[B]]
// CHECK-NEXT: %[[IN:.*]] = arith.cmpi ult, %[[I]], %c64
// CHECK-NEXT: scf.if %[[IN]]
// CHECK: arith.remsi %[[I]], %c16
// CHECK: processor = thread_x
// CHECK: processor = block_x

// CHECK-LABEL: stage: approximate

// CHECK-LABEL: stage: gpu-outline
// CHECK: gpu.launch_func @k0_kernel::@k0_kernel blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1) args(%arg3 :
// CHECK-NEXT: gpu.launch_func @k0_kernel::@k0_kernel_1 {{.*}} args(%arg3 : {{.*}}, %arg0 : {{.*}}, %arg1 :
// CHECK-NEXT: gpu.launch_func @k0_kernel::@k0_kernel_2 {{.*}} args(%arg2 : {{.*}}, %arg3 :
// CHECK-NEXT: return
// CHECK: gpu.module @k0_kernel
// CHECK-NOT: gpu.module
// CHECK: gpu.func @k0_kernel(
// CHECK: gpu.thread_id x
// CHECK: gpu.func @k0_kernel_1(
// CHECK: gpu.func @k0_kernel_2(

// CHECK-LABEL: stage: nvvm
// CHECK-NOT: gpu.module
// CHECK: gpu.binary @k0_kernel [#gpu.object<#nvvm.target<O = 3, chip = "sm_90", features = "+ptx80">, {{.*}}assembly = "{{.*}}.visible .entry k0_kernel(
