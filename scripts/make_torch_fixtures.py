#!/usr/bin/env python3
"""Exports small configurations of real torchvision architectures to ONNX, with
reference outputs computed by PyTorch, in the ONNX backend-test layout:

    tests/models/torch/<name>/model.onnx
    tests/models/torch/<name>/test_data_set_<k>/input_0.pb, output_0.pb

Set k=0 holds batch 1, k=1 batch 2 (the batch dim is exported as symbolic "N").
The architectures (scripts/torch_models.py) are torchvision's own classes of
every classification family at reduced width and depth, so the fixtures stay
small enough to commit, and a GPT-style decoder and a BERT-style encoder in
plain PyTorch. `--full` exports the published sizes instead (for
benchmarks/e2e_vs_ort.sh; not committed). Weights are random with a fixed
seed; BatchNorm running statistics are randomized so they matter.

Needs torch, torchvision and onnx: scripts/setup_torch.sh installs them in
.venv-torch. The committed fixtures were made with this script; friction's
tests only read them.
"""
import argparse
import os

import numpy as np
import onnx
import torch
import torchvision
from onnx import numpy_helper

import torch_models


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
    ap.add_argument("--full", action="store_true", help="the published sizes (torch_models.full) instead")
    ap.add_argument("--batches", default="1,2", help="batch of each test_data_set_<k>")
    ap.add_argument("names", nargs="*", help="only these cases (default: all)")
    args = ap.parse_args()
    cases = torch_models.full(args.names) if args.full else torch_models.reduced()
    for case in cases:
        if args.names and case.name not in args.names:
            continue
        model = case.model
        torch.manual_seed(0)
        gen = torch.Generator().manual_seed(1)
        for p in model.parameters():
            p.data.copy_(torch.randn(p.shape, generator=gen) * (1.0 / max(1, p[0].numel()) ** 0.5))
        with torch.no_grad():
            randomize_batchnorm(model, gen)
        model.eval()
        folder = os.path.join(args.out, case.name)
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, "model.onnx")
        example = case.inputs(1, gen)
        names = list(example)
        torch.onnx.export(model, tuple(example.values()), path, input_names=names, output_names=["logits"],
                          dynamic_axes={**{k: {0: "N"} for k in names}, "logits": {0: "N"}}, opset_version=args.opset,
                          dynamo=False)
        onnx.checker.check_model(onnx.load(path))
        for k, batch in enumerate(int(b) for b in args.batches.split(",")):
            inputs = case.inputs(batch, gen)
            with torch.no_grad():
                y = model(*inputs.values())
            data = os.path.join(folder, f"test_data_set_{k}")
            os.makedirs(data, exist_ok=True)
            for i, x in enumerate(inputs.values()):
                save(x, os.path.join(data, f"input_{i}.pb"))
            save(y, os.path.join(data, "output_0.pb"))
        print(f"{case.name}: {os.path.getsize(path) / 1e6:.2f} MB, torch {torch.__version__}, "
              f"torchvision {torchvision.__version__}", flush=True)


if __name__ == "__main__":
    main()
