// x * scale[8, 1, 1], then Sigmoid, over NCHW planes of 7x7 (batch 1: the
// channels are the split dim). The collapse stage drops the scale's unit dims
// and merges each plane into one dim of 49, so the innermost loop runs 49
// iterations (LLVM vectorizes 48 of them) instead of rows of 7 (none).

// CHECK-LABEL: stage: built
// CHECK: affine_map<(d0, d1, d2, d3) -> (d1, 0, 0)>
// CHECK: func.func @k0(%{{.*}}: tensor<1x?x7x7xf32>, %{{.*}}: tensor<?x1x1xf32>

// CHECK-LABEL: stage: collapse
// CHECK-DAG: #[[PLANE:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[CHANNEL:.*]] = affine_map<(d0, d1, d2) -> (d1)>
// CHECK-DAG: memref.collapse_shape %arg1 {{\[\[}}0, 1, 2]] : memref<?x1x1xf32> into memref<?xf32>
// CHECK-DAG: memref.collapse_shape %arg0 {{\[\[}}0], [1], [2, 3]] : memref<1x?x7x7xf32> into memref<1x?x49xf32>
// CHECK-DAG: memref.collapse_shape %arg2 {{\[\[}}0], [1], [2, 3]] : memref<1x?x7x7xf32> into memref<1x?x49xf32>
// CHECK: linalg.generic {indexing_maps = [#[[PLANE]], #[[CHANNEL]], #[[PLANE]]], iterator_types = ["parallel", "parallel", "parallel"]}

// CHECK-LABEL: stage: loops
// CHECK: scf.for %{{.*}} = %c0 to %c49
// CHECK-NOT: %c7

// CHECK-LABEL: stage: llvm
// CHECK-NOT: memref.collapse_shape
