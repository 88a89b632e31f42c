// A MatMul with ukernels=off: the interchange stage generalizes it and runs
// its loops (m, k, n), so the innermost loop walks B and C contiguously.

// CHECK-LABEL: stage: built
// CHECK: linalg.matmul ins(%arg0, %arg1

// CHECK-LABEL: stage: interchange
// CHECK: #[[A:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK: #[[B:.*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK: #[[C:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-NOT: linalg.matmul
// CHECK: linalg.generic {indexing_maps = [#[[A]], #[[B]], #[[C]]], iterator_types = ["parallel", "reduction", "parallel"]}

// CHECK-LABEL: stage: bufferize
// No `ukernels` stage: it is switched off.
// CHECK-NOT: stage: ukernels
// CHECK-LABEL: stage: loops
// CHECK: scf.for %[[M:.*]] = %c0 to %c4
// CHECK: scf.for %[[K:.*]] = %c0 to %c32
// CHECK: scf.for %[[N:.*]] = %c0 to %c16
// CHECK: memref.load %arg1[%[[K]], %[[N]]]
// CHECK: memref.store {{.*}}, %arg2[%[[M]], %[[N]]]

// CHECK-LABEL: stage: llvm
// CHECK-NOT: friction_sgemm
// CHECK: llvm.func @_mlir_ciface_k0(
