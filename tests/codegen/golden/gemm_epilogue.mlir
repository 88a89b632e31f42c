// x W^T + b, a Gemm on its own: a named contraction into the output buffer,
// its bias C ONE generic updating it in place; the `ukernels` stage turns the
// contraction into a call of the SGEMM microkernel. (Anchoring an epilogue
// region, the Gemm is a native SGEMM call instead: codegen/NativeKernels.h.)

// CHECK-LABEL: stage: built
// CHECK: linalg.fill
// CHECK: linalg.matmul_transpose_b
// CHECK: linalg.generic
// CHECK: arith.addf %out, %in

// CHECK-LABEL: stage: bufferize
// CHECK-NOT: memref.alloc
// CHECK: linalg.fill ins(%{{.*}}) outs(%arg3
// CHECK: linalg.matmul_transpose_b ins(%arg0, %arg1 : {{.*}}) outs(%arg3
// CHECK: linalg.generic {{.*}} outs(%arg3

// The fill goes (beta = 0); transB = 1 is an argument.
// CHECK-LABEL: stage: ukernels
// CHECK: func.func private @friction_sgemm(memref<?x?xf32, strided<[?, 1], offset: ?>>
// CHECK-NOT: linalg.fill
// CHECK: %[[A:.*]] = memref.cast %arg0
// CHECK: %[[B:.*]] = memref.cast %arg1
// CHECK: %[[C:.*]] = memref.cast %arg3
// CHECK: %[[TA:.*]] = arith.constant 0 : i32
// CHECK: %[[TB:.*]] = arith.constant 1 : i32
// CHECK: %[[BETA:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: call @friction_sgemm(%[[A]], %[[B]], %[[C]], %[[TA]], %[[TB]], %[[BETA]])
// CHECK-NOT: linalg.matmul
// CHECK: linalg.generic

// CHECK-LABEL: stage: loops
// CHECK: call @friction_sgemm
// CHECK: scf.for

// CHECK-LABEL: stage: llvm
// CHECK: llvm.call @_mlir_ciface_friction_sgemm(
// CHECK: llvm.func @_mlir_ciface_friction_sgemm(!llvm.ptr, !llvm.ptr, !llvm.ptr, i32, i32, f32)
