"""resgen's networks as torch.nn modules: the variant of a graph
(resgen_torch.Graph) whose layers are named as resgen names them, and the
ops that hold no weights, shared with the PyTorch check (tests/reference/).

resgen_torch.py imports this module only once a network is built: importing
torch takes seconds, and every refusal of bad input comes before it.
"""
import torch
import torch.nn.functional as F
from torch import nn


def parameter_free(op, x, graph, gate_bias=None):
    """The output of an op that holds no weights (relu, add, pad, scale,
    gated_add with its gate's bias, pool, max_pool) from its inputs x; None for the
    others. Shared with the PyTorch check (tests/reference/)."""
    kind = op["kind"]
    if kind == "relu":
        return F.relu(x[0])
    if kind == "add":
        return x[0] + x[1]
    if kind == "pad":
        sub = x[0][:, :, ::op["stride"], ::op["stride"]]
        c = graph.shapes[op["name"]][0]
        return torch.cat([sub, sub.new_zeros(sub.shape[0], c - sub.shape[1], sub.shape[2], sub.shape[3])], 1)
    if kind == "scale":
        return op["factor"] * x[0]
    if kind == "gated_add":
        g = torch.sigmoid(x[2] + gate_bias.view(1, -1, 1, 1))
        return (1 - g) * x[0] + (g if op["exclusive"] else 1) * x[1]
    if kind == "pool":
        return x[0].mean((2, 3))
    if kind == "max_pool":
        return F.max_pool2d(x[0], op["k"], op["stride"], op["k"] // 2)
    return None


class Standalone(nn.Module):
    """A network with its input normalisation inside, for a TorchScript
    export: forward takes raw images (N x C x H x W pixels, 0 to 255, of
    any type) and returns the logits, normalising as the binaries do
    (pixel / 255 less the mean, over the deviation, rounded to float32)."""

    def __init__(self, net, mean, std):
        super().__init__()
        self.net = net
        std = torch.tensor(std, dtype=torch.float64).view(1, -1, 1, 1)
        self.register_buffer("scale", 1.0 / (255.0 * std))
        self.register_buffer("shift", -torch.tensor(mean, dtype=torch.float64).view(1, -1, 1, 1) / std)

    def forward(self, images):
        x = images.to(torch.float64) * self.scale + self.shift
        return self.net(x.to(torch.float32).to(torch.float64))


class RawPixels(nn.Module):
    """The TorchScript export's outer module: refuses images that are not
    raw pixels, as torchvision's usual preprocessing gives them (ToTensor's
    0..1, Normalize's negative values), rather than answer on them
    silently, then runs the traced network."""

    def __init__(self, traced):
        super().__init__()
        self.traced = traced

    def forward(self, images):
        if bool((images < 0).any()):
            raise ValueError("this model takes raw pixels from 0 to 255 and normalises them inside; these images "
                             "hold negative values, as torchvision's Normalize gives: feed PILToTensor's output")
        if images.is_floating_point() and bool((images > 0).any()) and bool((images <= 1).all()):
            raise ValueError("this model takes raw pixels from 0 to 255 and normalises them inside; these images "
                             "lie within 0..1, as torchvision's ToTensor gives: feed PILToTensor's output")
        return self.traced(images)


class GateBias(nn.Module):
    """The bias of a gated shortcut's gate, one per channel."""

    def __init__(self, channels):
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(channels))


class ResgenNet(nn.Module):
    """The variant of a graph as a torch.nn.Module whose layers are named as
    resgen names them (layers.stage1_unit01_conv1...); forward returns the
    logits. In training mode a dropout shortcut draws its mask with torch's
    generator, not the binaries' hash: the same distribution, other draws."""

    def __init__(self, graph):
        super().__init__()
        self.spec, self.graph = graph.spec, graph
        layers = {}
        for op in self.graph.ops:
            name, kind = op["name"], op["kind"]
            inputs = self.graph.shapes[op["inputs"][0]][0]
            outputs = self.graph.shapes[name][0]
            if kind == "conv":
                layers[name] = nn.Conv2d(inputs, outputs, op["k"], op["stride"], op["k"] // 2, bias=False)
            elif kind == "bn":
                layers[name] = nn.BatchNorm2d(outputs, eps=1e-5, momentum=0.1)
            elif kind == "linear":
                layers[name] = nn.Linear(inputs, outputs)
            elif kind == "gated_add":
                layers[name] = GateBias(outputs)
        self.layers = nn.ModuleDict(layers)

    def forward(self, images):
        values = {"input": images}
        for op in self.graph.ops:
            x = [values[i] for i in op["inputs"]]
            name, kind = op["name"], op["kind"]
            if kind in ("conv", "bn", "linear"):
                y = self.layers[name](x[0])
            elif kind == "dropout":
                keep = 1 - op["rate"]
                y = x[0] * (torch.bernoulli(torch.full_like(x[0], keep)) if self.training else keep)
            elif kind == "loss":
                return x[0]
            else:
                y = parameter_free(op, x, self.graph, self.layers[name].bias if kind == "gated_add" else None)
            values[name] = y
        raise AssertionError("a resgen graph ends with its loss")
