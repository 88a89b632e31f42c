// y = sigmoid(tanh(gelu(x*scale + shift))) - exp(-x) after fuse-elementwise:
// one kernel, one linalg.generic, no intermediate buffer. Over 8 rows, so
// dim 0 is dynamic (the runtime calls it on slabs of rows).

// CHECK-LABEL: stage: built
// CHECK: func.func @k0(%{{.*}}: tensor<?x16xf32>, %{{.*}}: tensor<16xf32>, %{{.*}}: tensor<?x1xf32>
// CHECK-SAME: -> tensor<?x16xf32> attributes {llvm.emit_c_interface}
// CHECK-COUNT-1: linalg.generic
// CHECK-NOT: linalg.generic
// CHECK: math.erf
// CHECK: math.tanh
// CHECK: linalg.yield

// CHECK-LABEL: stage: interchange
// CHECK-LABEL: stage: bufferize
// CHECK: func.func @k0(%{{.*}}: memref<?x16xf32>
// CHECK-NOT: memref.alloc
// CHECK: linalg.generic
// CHECK-NOT: memref.alloc
// CHECK: return{{$}}

// CHECK-LABEL: stage: ukernels
// CHECK-NOT: friction_sgemm
// CHECK-LABEL: stage: loops
// CHECK: scf.for
// CHECK: scf.for
// CHECK: memref.load
// CHECK: math.erf
// CHECK: memref.store

// The polynomial approximations leave no math op with a libm call behind.
// CHECK-LABEL: stage: approximate
// CHECK-NOT: math.erf
// CHECK-NOT: math.tanh
// CHECK-NOT: math.exp
// CHECK: memref.store

// CHECK-LABEL: stage: llvm
// CHECK: llvm.func @k0(
// CHECK-NOT: scf.for
// CHECK-NOT: llvm.call @erff
// CHECK: llvm.func @_mlir_ciface_k0(
