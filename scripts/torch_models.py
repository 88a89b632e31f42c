"""The real architectures friction is tested and benchmarked on, as PyTorch modules.

`reduced()` yields small configurations of each torchvision classification family (the
library's own classes at reduced width and depth, so the ONNX files stay small enough to
commit as test fixtures) and of two transformers written here in plain PyTorch (a GPT-style
decoder and a BERT-style encoder). `full()` yields the same families at their published
sizes, for benchmarks (generated, never committed). Every entry is a `Case`: a name, the
module, and example inputs at batch 1 (the batch dim is exported as symbolic "N").

Weights are random (scripts/make_torch_fixtures.py sets them); nothing is downloaded.
"""
import math
from dataclasses import dataclass
from typing import Callable

import torch
import torchvision
from torch import nn
from torchvision.models import (convnext, densenet, efficientnet, inception, maxvit, mnasnet, mobilenetv2, mobilenetv3,
                                regnet, resnet, shufflenetv2, squeezenet, swin_transformer, vision_transformer)
from torchvision.models.googlenet import Inception as GoogLeNetModule  # models.googlenet is the builder function


@dataclass
class Case:
    name: str
    model: nn.Module
    # Inputs for a batch of `n` from generator `gen`; names as exported.
    inputs: Callable[[int, torch.Generator], dict]


def image(res):
    return lambda n, gen: {"input": torch.randn(n, 3, res, res, generator=gen)}


def clip(frames, res):
    """A video model's input: `frames` RGB frames of res x res, [n, 3, frames, res, res]."""
    return lambda n, gen: {"input": torch.randn(n, 3, frames, res, res, generator=gen)}


# --- transformers in plain PyTorch ------------------------------------------------------

class Attention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, bias):
        n, t, d = x.shape
        q, k, v = self.qkv(x).reshape(n, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-2, -1) / math.sqrt(d // self.heads) + bias
        return self.proj((scores.softmax(-1) @ v).transpose(1, 2).reshape(n, t, d))


class Block(nn.Module):
    """Pre-norm (GPT) or post-norm (BERT) transformer block."""

    def __init__(self, dim, heads, gelu, pre_norm):
        super().__init__()
        self.pre_norm = pre_norm
        self.attn = Attention(dim, heads)
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(approximate=gelu), nn.Linear(4 * dim, dim))

    def forward(self, x, bias):
        if self.pre_norm:
            x = x + self.attn(self.ln1(x), bias)
            return x + self.mlp(self.ln2(x))
        x = self.ln1(x + self.attn(x, bias))
        return self.ln2(x + self.mlp(x))


class GptDecoder(nn.Module):
    """GPT-2-style: token and learned position embeddings, causal mask, tanh GELU, tied head."""

    def __init__(self, vocab, ctx, dim, heads, layers):
        super().__init__()
        self.tokens, self.positions = nn.Embedding(vocab, dim), nn.Embedding(ctx, dim)
        self.blocks = nn.ModuleList(Block(dim, heads, "tanh", pre_norm=True) for _ in range(layers))
        self.ln = nn.LayerNorm(dim)
        self.register_buffer("causal", torch.full((ctx, ctx), float("-inf")).triu(1), persistent=False)

    def forward(self, input_ids):
        t = input_ids.shape[1]
        x = self.tokens(input_ids) + self.positions(torch.arange(t))
        for b in self.blocks:
            x = b(x, self.causal[:t, :t])
        return self.ln(x) @ self.tokens.weight.t()


class BertEncoder(nn.Module):
    """BERT-style: token, position and segment embeddings, padding mask, erf GELU, tanh pooler."""

    def __init__(self, vocab, ctx, dim, heads, layers, classes=2):
        super().__init__()
        self.tokens, self.positions, self.segments = nn.Embedding(vocab, dim), nn.Embedding(ctx, dim), nn.Embedding(2, dim)
        self.ln = nn.LayerNorm(dim)
        self.blocks = nn.ModuleList(Block(dim, heads, "none", pre_norm=False) for _ in range(layers))
        self.pooler, self.classifier = nn.Linear(dim, dim), nn.Linear(dim, classes)

    def forward(self, input_ids, token_type_ids, attention_mask):
        t = input_ids.shape[1]
        x = self.ln(self.tokens(input_ids) + self.positions(torch.arange(t)) + self.segments(token_type_ids))
        bias = (1.0 - attention_mask[:, None, None, :].float()) * -10000.0
        for b in self.blocks:
            x = b(x, bias)
        return self.classifier(torch.tanh(self.pooler(x[:, 0])))


def tokens(vocab, t):
    return lambda n, gen: {"input_ids": torch.randint(0, vocab, (n, t), generator=gen)}


def bert_inputs(vocab, t):
    def make(n, gen):
        lengths = torch.randint(t // 2, t + 1, (n, 1), generator=gen)
        return {"input_ids": torch.randint(0, vocab, (n, t), generator=gen),
                "token_type_ids": (torch.arange(t)[None, :] >= lengths // 2).long().expand(n, t).contiguous(),
                "attention_mask": (torch.arange(t)[None, :] < lengths).long()}
    return make


# --- recurrent layers in plain PyTorch ---------------------------------------------------

class LstmTagger(nn.Module):
    """A sequence tagger: token embeddings, a stacked bidirectional LSTM (batch first), a classifier per token."""
    def __init__(self, vocab, dim, hidden, layers, classes):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.lstm = nn.LSTM(dim, hidden, num_layers=layers, bidirectional=True, batch_first=True)
        self.classifier = nn.Linear(2 * hidden, classes)

    def forward(self, input_ids):
        return self.classifier(self.lstm(self.embed(input_ids))[0])


class GruSpeech(nn.Module):
    """A keyword spotter: a 1-D conv front end over feature frames, a GRU (sequence first) and, from its last
    state, the classes; then a ReLU RNN over the GRU's outputs, whose last state adds to the logits."""
    def __init__(self, features, channels, hidden, classes):
        super().__init__()
        self.frontend = nn.Sequential(nn.Conv1d(features, channels, 3, padding=1), nn.BatchNorm1d(channels), nn.ReLU())
        self.gru = nn.GRU(channels, hidden)
        self.rnn = nn.RNN(hidden, hidden, nonlinearity="relu", bidirectional=True)
        self.classifier = nn.Linear(hidden, classes)
        self.rnn_classifier = nn.Linear(2 * hidden, classes)

    def forward(self, frames):
        x = self.frontend(frames).permute(2, 0, 1)  # [time, batch, channels]
        seq, last = self.gru(x)
        _, h = self.rnn(seq)
        return self.classifier(last[0]) + self.rnn_classifier(torch.cat([h[0], h[1]], dim=1))


def frames(features, t):
    return lambda n, gen: {"frames": torch.randn(n, features, t, generator=gen)}


# --- reduced torchvision configurations ------------------------------------------------

def slim_resnet(block, layers, divisor=8, **kwargs):
    """torchvision's ResNet with every stage's planes divided by `divisor` (its widths are
    hard-coded; full width would make multi-MB fixtures)."""
    original = resnet.ResNet._make_layer
    resnet.ResNet._make_layer = lambda self, b, planes, *a, **k: original(self, b, planes // divisor, *a, **k)
    try:
        model = resnet.ResNet(block, layers, num_classes=10, **kwargs)
    finally:
        resnet.ResNet._make_layer = original
    model.fc = nn.Linear(512 // divisor * block.expansion, 10)
    return model


def slim_squeezenet():
    """SqueezeNet 1.1's layer sequence (ceil-mode max pools, Fire modules whose two expand
    branches are concatenated) at a quarter of its widths."""
    model = squeezenet.SqueezeNet("1_1", num_classes=10)
    fire, pool = squeezenet.Fire, lambda: nn.MaxPool2d(3, 2, ceil_mode=True)
    model.features = nn.Sequential(nn.Conv2d(3, 16, 3, 2), nn.ReLU(), pool(), fire(16, 4, 16, 16), fire(32, 4, 16, 16),
                                   pool(), fire(32, 8, 32, 32), pool(), fire(64, 12, 48, 48), fire(96, 16, 64, 64))
    model.classifier[1] = nn.Conv2d(128, 10, 1)
    return model


def efficientnet_v2_slim():
    fused, mb = efficientnet.FusedMBConvConfig, efficientnet.MBConvConfig
    setting = [fused(1, 3, 1, 8, 8, 1), fused(4, 3, 2, 8, 16, 2), mb(4, 3, 2, 16, 24, 1), mb(6, 3, 2, 24, 32, 2)]
    return efficientnet.EfficientNet(setting, dropout=0.2, num_classes=10, last_channel=64)


def regnet_slim(se_ratio):
    params = regnet.BlockParams.from_init_params(depth=5, w_0=8, w_a=8.0, w_m=2.0, group_width=8, se_ratio=se_ratio)
    return regnet.RegNet(params, num_classes=10, stem_width=8)


def swin_slim(v2=False):
    extra = dict(block=swin_transformer.SwinTransformerBlockV2, downsample_layer=swin_transformer.PatchMergingV2) if v2 else {}
    return swin_transformer.SwinTransformer(patch_size=[4, 4], embed_dim=16, depths=[2, 2], num_heads=[2, 2],
                                            window_size=[4, 4], num_classes=10, **extra)


class InceptionSlim(nn.Module):
    """GoogLeNet's and Inception-v3's module shapes at small widths (their torchvision classes hard-code widths
    of hundreds of channels): two GoogLeNet modules (four branches concatenated: 1x1; 1x1 -> 3x3; 1x1 -> 3x3; a
    3x3 max pool at stride 1, ceil mode -> 1x1), an Inception-v3 module of factorized 1x7 and 7x1 convs beside an
    average pool that counts the padding, and a reduction module (a strided conv beside a strided max pool)."""

    def __init__(self, classes=10):
        super().__init__()
        conv = inception.BasicConv2d  # conv, BatchNorm (eps 1e-3), ReLU
        self.stem = nn.Sequential(conv(3, 16, kernel_size=3, stride=2), conv(16, 16, kernel_size=3, padding=1),
                                  nn.MaxPool2d(3, 2, ceil_mode=True))
        self.a = GoogLeNetModule(16, 8, 8, 12, 4, 8, 8)
        self.b = GoogLeNetModule(36, 12, 8, 16, 4, 8, 8)
        self.b1x1 = conv(44, 12, kernel_size=1)
        self.b7x7 = nn.Sequential(conv(44, 8, kernel_size=1), conv(8, 8, kernel_size=(1, 7), padding=(0, 3)),
                                  conv(8, 12, kernel_size=(7, 1), padding=(3, 0)))
        self.bpool = conv(44, 12, kernel_size=1)
        self.reduce = conv(36, 16, kernel_size=3, stride=2)
        self.head = nn.Linear(52, classes)

    def forward(self, x):
        x = self.b(self.a(self.stem(x)))
        x = torch.cat([self.b1x1(x), self.b7x7(x), self.bpool(nn.functional.avg_pool2d(x, 3, 1, 1))], 1)
        x = torch.cat([self.reduce(x), nn.functional.max_pool2d(x, 3, 2)], 1)
        return self.head(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


def reduced():
    """The committed test fixtures: every family at a size of a few hundred KB."""
    conf = efficientnet._efficientnet_conf
    b0, b0_last = conf("efficientnet_b0", width_mult=0.25, depth_mult=0.34)
    block = convnext.CNBlockConfig
    yield Case("resnet_basic", slim_resnet(resnet.BasicBlock, [2, 1, 1, 1]), image(32))
    yield Case("resnet_bottleneck", slim_resnet(resnet.Bottleneck, [1, 2, 1, 1]), image(32))
    yield Case("resnext", slim_resnet(resnet.Bottleneck, [1, 1, 1, 1], groups=4, width_per_group=16), image(32))
    yield Case("wide_resnet", slim_resnet(resnet.Bottleneck, [1, 1, 1, 1], width_per_group=128), image(32))
    yield Case("mobilenet_v2", mobilenetv2.MobileNetV2(num_classes=10, width_mult=0.25), image(32))
    yield Case("mobilenet_v3_small", mobilenetv3.mobilenet_v3_small(num_classes=10, width_mult=0.25), image(32))
    yield Case("mobilenet_v3_large", mobilenetv3.mobilenet_v3_large(num_classes=10, width_mult=0.25), image(32))
    yield Case("efficientnet", efficientnet.EfficientNet(b0, dropout=0.2, num_classes=10, last_channel=b0_last), image(32))
    yield Case("efficientnet_v2", efficientnet_v2_slim(), image(32))
    yield Case("regnet_x", regnet_slim(None), image(32))
    yield Case("regnet_y", regnet_slim(0.25), image(32))
    yield Case("shufflenet_v2", shufflenetv2.ShuffleNetV2([2, 2, 2], [8, 16, 32, 64, 128], num_classes=10), image(32))
    yield Case("squeezenet", slim_squeezenet(), image(64))
    yield Case("inception", InceptionSlim(), image(64))
    yield Case("densenet", densenet.DenseNet(growth_rate=8, block_config=(2, 2, 2, 2), num_init_features=16, bn_size=2,
                                             num_classes=10), image(32))
    yield Case("mnasnet", mnasnet.MNASNet(0.25, num_classes=10), image(32))
    yield Case("convnext", convnext.ConvNeXt([block(16, 32, 1), block(32, None, 1)], num_classes=10), image(32))
    yield Case("vit", vision_transformer.VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2,
                                                           hidden_dim=32, mlp_dim=64, num_classes=10), image(32))
    yield Case("swin", swin_slim(), image(32))
    yield Case("swin_v2", swin_slim(v2=True), image(32))
    yield Case("maxvit", maxvit.MaxVit(input_size=(32, 32), stem_channels=8, partition_size=2, block_channels=[16, 32],
                                       block_layers=[1, 1], head_dim=8, stochastic_depth_prob=0.0, num_classes=10),
               image(32))
    yield Case("gpt", GptDecoder(vocab=101, ctx=16, dim=32, heads=2, layers=2), tokens(101, 16))
    yield Case("bert", BertEncoder(vocab=101, ctx=16, dim=32, heads=2, layers=2), bert_inputs(101, 16))
    yield Case("lstm_tagger", LstmTagger(vocab=101, dim=16, hidden=12, layers=2, classes=5), tokens(101, 10))
    yield Case("gru_speech", GruSpeech(features=8, channels=16, hidden=12, classes=6), frames(8, 20))


FULL_IMAGE_MODELS = ["resnet18", "resnet50", "resnext50_32x4d", "wide_resnet50_2", "mobilenet_v2", "mobilenet_v3_small",
                     "mobilenet_v3_large", "efficientnet_b0", "efficientnet_v2_s", "regnet_x_400mf", "regnet_y_400mf",
                     "shufflenet_v2_x1_0", "squeezenet1_1", "densenet121", "mnasnet1_0", "convnext_tiny", "vit_b_16",
                     "swin_t", "swin_v2_t", "maxvit_t"]


FULL_NAMES = FULL_IMAGE_MODELS + ["gpt2_small", "bert_base"]

# Recurrent models at working sizes, by name only (not among the families): a tagger over 64 tokens, a keyword
# spotter over 100 frames of 40 features.
RECURRENT_FULL = {
    "lstm_tagger": lambda: Case("lstm_tagger", LstmTagger(vocab=10000, dim=256, hidden=256, layers=2, classes=20),
                                tokens(10000, 64)),
    "gru_speech": lambda: Case("gru_speech", GruSpeech(features=40, channels=128, hidden=256, classes=12),
                               frames(40, 100)),
}


class SegmentationLogits(nn.Module):
    """A torchvision segmentation model's "out" logits (its forward returns a dict)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)["out"]


class UNet(nn.Module):
    """A four-level U-Net in plain PyTorch: two 3x3 conv + BatchNorm + ReLU a level, max-pool down, and up by
    `up`: "bilinear" or "nearest" interpolation (a Resize) or "transpose" (ConvTranspose2d 2x2/2); the skip joins
    by a channel Concat."""

    def __init__(self, up, base=16):
        super().__init__()
        self.up = up

        def block(i, o):
            return nn.Sequential(nn.Conv2d(i, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU(),
                                 nn.Conv2d(o, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU())
        c = base
        self.down = nn.ModuleList([block(3, c), block(c, 2 * c), block(2 * c, 4 * c), block(4 * c, 8 * c)])
        self.ups = nn.ModuleList([block(12 * c, 4 * c), block(6 * c, 2 * c), block(3 * c, c)])
        self.transposed = nn.ModuleList([nn.ConvTranspose2d(k, k, 2, 2) for k in (8 * c, 4 * c, 2 * c)])
        self.head = nn.Conv2d(c, 2, 1)

    def forward(self, x):
        skips = []
        for i, block in enumerate(self.down):
            x = block(x)
            if i < 3:
                skips.append(x)
                x = nn.functional.max_pool2d(x, 2)
        for i, block in enumerate(self.ups):
            x = (self.transposed[i](x) if self.up == "transpose"
                 else nn.functional.interpolate(x, scale_factor=2, mode=self.up))
            x = block(torch.cat([x, skips[-1 - i]], 1))
        return self.head(x)


# Architectures beyond classification, by name: torchvision's segmentation models at 256x256 (their upsampling
# is a Resize, DeepLab's ASPP dilated convs) and the U-Net above at 128x128.
UNETS = {"unet_bilinear": "bilinear", "unet_nearest": "nearest", "unet_transpose": "transpose"}


def torchvision_case(name):
    """Any other torchvision classification model, by name, at the input size of its published weights (their
    crop size, read from the weights' description; nothing is downloaded), auxiliary classifiers off; a video
    classification model (16 frames at its weights' crop size: 3-D convs); or a segmentation model (logits at
    256x256) or one of UNETS."""
    if name in UNETS:
        return Case(name, UNet(UNETS[name]), image(128))
    if name in torchvision.models.list_models(module=torchvision.models.segmentation):
        model = torchvision.models.get_model(name, weights=None, weights_backbone=None, aux_loss=False)
        return Case(name, SegmentationLogits(model), image(256))
    if name in torchvision.models.list_models(module=torchvision.models.video):
        crop = torchvision.models.get_model_weights(name).DEFAULT.transforms.keywords["crop_size"][0]
        return Case(name, torchvision.models.get_model(name, weights=None), clip(16, crop))
    if name not in torchvision.models.list_models(module=torchvision.models):
        raise SystemExit(f"torch_models: '{name}' is neither one of {FULL_NAMES} nor a torchvision classification, "
                         f"segmentation or video model nor one of {list(UNETS)}")
    crop = torchvision.models.get_model_weights(name).DEFAULT.transforms.keywords.get("crop_size", 224)
    kwargs = {"aux_logits": False, "init_weights": False} if name in ("googlenet", "inception_v3") else {}
    return Case(name, torchvision.models.get_model(name, weights=None, **kwargs), image(crop))


def full(names=None):
    """The published sizes (224x224; GPT-2 small and BERT-base at 128 tokens), for benchmarks; `names` may also
    name any other torchvision classification model (torchvision_case)."""
    for name in FULL_IMAGE_MODELS:
        if not names or name in names:
            yield Case(name, torchvision.models.get_model(name, weights=None), image(224))
    for name in names or []:
        if name in RECURRENT_FULL:
            yield RECURRENT_FULL[name]()
        elif name not in FULL_NAMES:
            yield torchvision_case(name)
    if not names or "gpt2_small" in names:
        yield Case("gpt2_small", GptDecoder(vocab=50257, ctx=128, dim=768, heads=12, layers=12), tokens(50257, 128))
    if not names or "bert_base" in names:
        yield Case("bert_base", BertEncoder(vocab=30522, ctx=128, dim=768, heads=12, layers=12), bert_inputs(30522, 128))
