#!/usr/bin/env python3
"""Exports small configurations of real torchvision architectures to ONNX, with
reference outputs computed by PyTorch, in the ONNX backend-test layout:

    tests/models/torch/<name>/model.onnx
    tests/models/torch/<name>/test_data_set_<k>/input_0.pb, output_0.pb

Set k=0 holds batch 1, k=1 batch 2 (the batch dim is exported as symbolic "N").
The architectures are torchvision's own classes (ResNet, MobileNetV2/V3,
VisionTransformer, SwinTransformer, ConvNeXt) at reduced width and depth so
the fixtures stay small enough to commit. Weights are random with a fixed
seed; BatchNorm running statistics are randomized so they matter.

Needs torch, torchvision and onnx (a venv: python3 -m venv v && v/bin/pip
install torch torchvision onnx). The committed fixtures were made with this
script; friction's tests only read them.
"""
import argparse
import os

import numpy as np
import onnx
import torch
import torchvision
from onnx import numpy_helper
from torchvision.models import resnet, mobilenetv2, mobilenetv3, vision_transformer, swin_transformer, convnext


def slim_resnet(block, layers, divisor=8):
    """torchvision's ResNet with every stage's planes divided by `divisor` (its
    widths are hard-coded; full width would make multi-MB fixtures)."""
    original = resnet.ResNet._make_layer
    resnet.ResNet._make_layer = lambda self, b, planes, *a, **k: original(self, b, planes // divisor, *a, **k)
    try:
        model = resnet.ResNet(block, layers, num_classes=10)
    finally:
        resnet.ResNet._make_layer = original
    model.fc = torch.nn.Linear(512 // divisor * block.expansion, 10)
    return model


def models():
    yield "resnet_basic", slim_resnet(resnet.BasicBlock, [2, 1, 1, 1]), 32
    yield "resnet_bottleneck", slim_resnet(resnet.Bottleneck, [1, 2, 1, 1]), 32
    yield "mobilenet_v2", mobilenetv2.MobileNetV2(num_classes=10, width_mult=0.25), 32
    yield "mobilenet_v3_small", mobilenetv3.mobilenet_v3_small(num_classes=10, width_mult=0.25), 32
    yield "vit", vision_transformer.VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2,
                                                      hidden_dim=32, mlp_dim=64, num_classes=10), 32
    yield "swin", swin_transformer.SwinTransformer(patch_size=[4, 4], embed_dim=16, depths=[2, 2], num_heads=[2, 2],
                                                   window_size=[4, 4], num_classes=10), 32
    block = convnext.CNBlockConfig
    yield "convnext", convnext.ConvNeXt([block(16, 32, 1), block(32, None, 1)], num_classes=10), 32


def full_models():
    """Full-size torchvision models (too large to commit; for manual checks)."""
    for name in ["resnet50", "mobilenet_v2", "vit_b_16"]:
        yield name, getattr(torchvision.models, name)(weights=None), 224


def randomize_batchnorm(model, gen):
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.copy_(torch.randn(m.running_mean.shape, generator=gen) * 0.1)
            m.running_var.copy_(torch.rand(m.running_var.shape, generator=gen) * 0.5 + 0.75)
            m.weight.data.copy_(torch.rand(m.weight.shape, generator=gen) * 0.5 + 0.75)
            m.bias.data.copy_(torch.randn(m.bias.shape, generator=gen) * 0.1)


def save(tensor, path):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(tensor.detach().numpy()).SerializeToString())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "tests", "models", "torch"))
    ap.add_argument("--opset", type=int, default=17)
    ap.add_argument("--full", action="store_true", help="full-size ResNet-50, MobileNetV2, ViT-B/16 instead")
    args = ap.parse_args()
    for name, model, res in (full_models() if args.full else models()):
        torch.manual_seed(0)
        gen = torch.Generator().manual_seed(1)
        for p in model.parameters():
            p.data.copy_(torch.randn(p.shape, generator=gen) * (1.0 / max(1, p[0].numel()) ** 0.5))
        with torch.no_grad():
            randomize_batchnorm(model, gen)
        model.eval()
        folder = os.path.join(args.out, name)
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, "model.onnx")
        example = torch.randn(1, 3, res, res, generator=gen)
        torch.onnx.export(model, (example,), path, input_names=["input"], output_names=["logits"],
                          dynamic_axes={"input": {0: "N"}, "logits": {0: "N"}}, opset_version=args.opset,
                          dynamo=False)
        onnx.checker.check_model(onnx.load(path))
        for k, batch in enumerate([1, 2]):
            x = torch.randn(batch, 3, res, res, generator=gen)
            with torch.no_grad():
                y = model(x)
            data = os.path.join(folder, f"test_data_set_{k}")
            os.makedirs(data, exist_ok=True)
            save(x, os.path.join(data, "input_0.pb"))
            save(y, os.path.join(data, "output_0.pb"))
        print(f"{name}: {os.path.getsize(path) / 1e6:.2f} MB, torch {torch.__version__}, torchvision {torchvision.__version__}")


if __name__ == "__main__":
    main()
