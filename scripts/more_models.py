# torchvision models beyond the zoo, as entries of export_models.py's ZOO:
# this file is appended to a copy of ../shared/tools/export_models.py (which
# defines ZOO, torch and tvm), so every tool that builds models from that
# file by name (its export(), bench/peers/torch_bench.py, scripts/device/)
# builds these too. scripts/export_more.sh exports them here;
# scripts/device/add_more_models.sh adds them to a pack for the GPU machine.
def _image(n):
    return lambda: torch.randn(1, 3, n, n)


class _FeaturePyramid(nn.Module):
    """A detection backbone (ResNet-50 with its feature pyramid, as Faster
    R-CNN builds it), its five levels flattened into one output."""

    def __init__(self):
        super().__init__()
        from torchvision.models.detection.backbone_utils import resnet_fpn_backbone
        self.body = resnet_fpn_backbone(backbone_name="resnet50", weights=None, trainable_layers=5)

    def forward(self, x):
        return torch.cat([v.flatten(1) for v in self.body(x).values()], 1)


def _vit_b_16():
    """torchvision zeroes ViT's classifier head, so its outputs would be all
    zeros and a check against them would pass any kernel: a random head."""
    m = tvm.vit_b_16()
    nn.init.normal_(m.heads.head.weight, std=0.02)
    nn.init.normal_(m.heads.head.bias, std=0.02)
    return m


def _deeplabv3():
    """DeepLabV3 on MobileNet-V3 untrained: its activations shrink to 4e-9
    through the backbone, so the output is the classifier's bias whatever
    the input and a check against it passes any kernel. Its BatchNorms'
    running statistics are measured on random images instead (cumulative
    averages over three batches), which keeps every layer's activations
    near unit scale."""
    m = tvm.segmentation.deeplabv3_mobilenet_v3_large(weights=None, weights_backbone=None)
    for b in m.modules():
        if isinstance(b, nn.modules.batchnorm._BatchNorm):
            b.momentum = None
            b.reset_running_stats()
    m.train()
    with torch.no_grad():
        for _ in range(3):
            m(torch.randn(2, 3, 224, 224))
    return m.eval()


MORE = {
    "inception_v3": (lambda: tvm.inception_v3(aux_logits=False, init_weights=True), _image(299)),
    "densenet169": (lambda: tvm.densenet169(), _image(224)),
    "mobilenet_v3_large": (lambda: tvm.mobilenet_v3_large(), _image(224)),
    "regnet_y_400mf": (lambda: tvm.regnet_y_400mf(), _image(224)),
    "swin_t": (lambda: tvm.swin_t(), _image(224)),
    "resnext50_32x4d": (lambda: tvm.resnext50_32x4d(), _image(224)),
    "convnext_tiny": (lambda: tvm.convnext_tiny(), _image(224)),
    "efficientnet_b3": (lambda: tvm.efficientnet_b3(), _image(300)),
    "vit_b_16": (_vit_b_16, _image(224)),
    "resnet50_fpn": (lambda: _FeaturePyramid(), _image(224)),
    "deeplabv3_mobilenet_v3_large": (_deeplabv3, _image(224)),
    # Wider and deeper relatives, and segmentation on a ResNet-50 (dilated).
    "convnext_small": (lambda: tvm.convnext_small(), _image(224)),
    "mnasnet1_3": (lambda: tvm.mnasnet1_3(), _image(224)),
    "shufflenet_v2_x2_0": (lambda: tvm.shufflenet_v2_x2_0(), _image(224)),
    "regnet_x_1_6gf": (lambda: tvm.regnet_x_1_6gf(), _image(224)),
    "regnet_y_1_6gf": (lambda: tvm.regnet_y_1_6gf(), _image(224)),
    "efficientnet_b1": (lambda: tvm.efficientnet_b1(), _image(240)),
    "fcn_resnet50": (lambda: tvm.segmentation.fcn_resnet50(weights=None, weights_backbone=None, aux_loss=False), _image(224)),
    "deeplabv3_resnet50": (
        lambda: tvm.segmentation.deeplabv3_resnet50(weights=None, weights_backbone=None, aux_loss=False),
        _image(224),
    ),
    # Video: Conv over three spatial dims, 8 frames of 112x112.
    "r3d_18": (lambda: tvm.video.r3d_18(), lambda: torch.randn(1, 3, 8, 112, 112)),
    "mc3_18": (lambda: tvm.video.mc3_18(), lambda: torch.randn(1, 3, 8, 112, 112)),
    "r2plus1d_18": (lambda: tvm.video.r2plus1d_18(), lambda: torch.randn(1, 3, 8, 112, 112)),
    # MaxPool3d and AvgPool3d besides; 16 frames of 224x224. Untrained, its
    # output hardly moves with the input (--check refuses it as trivial).
    "s3d": (lambda: tvm.video.s3d(), lambda: torch.randn(1, 3, 16, 224, 224)),
}
ZOO.update(MORE)


def _googlenet():
    """The zoo's GoogLeNet with its convolutions He-initialised: torchvision's
    truncated normal (std 0.01) shrinks the activations so far over 22
    layers that the output is the classifier's bias to 1e-12 whatever the
    input, and a check against it passes any kernel."""
    m = tvm.googlenet(aux_logits=False, init_weights=True)
    for c in m.modules():
        if isinstance(c, nn.Conv2d):
            nn.init.kaiming_normal_(c.weight, nonlinearity="relu")
    return m


ZOO["googlenet"] = (_googlenet, ZOO["googlenet"][1])
