// Transposed convolution (ONNX ConvTranspose, 2-D, NCHW, any group) for the compiled `cpu` backend: the decoders
// of U-Nets and generators. Per image and group one SGEMM makes every input pixel's contribution to its R x S
// window of outputs, which are then added into the output (col2im) over a bias start.
#pragma once
#include "runtime/ukernels/Conv.h"

namespace friction::ukernels {

// y = convTranspose(x, w) + bias. g describes the transposed direction: input [N, C, H, W], output [N, K, OH, OW],
// window R x S at strides and dilations, the output's first padTop rows and padLeft columns cropped (ONNX's begin
// pads), group; its other end cut at OH x OW (end pads and output_padding are what OH and OW say). w is ONNX's
// [C, K / group, R, S]; bias K floats or null.
void convTransposeNchw(const ConvGeometry& g, const float* x, const float* w, const float* bias, float* y);

}  // namespace friction::ukernels
