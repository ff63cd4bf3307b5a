#!/usr/bin/python3
"""resgen's networks in PyTorch: build the torch.nn.Module of a spec's variant,
load a binary's weights file into it, and export it or measure it.

    resgen_torch.py export SPEC WEIGHTS OUT.pt [--onnx OUT.onnx] [--float32]
        the state dict of the variant with the weights loaded (BN's running
        statistics included), saved with torch.save as a dict: "state_dict",
        and what the weights file says of the input beside it ("input_mean",
        "input_std" and "input_images": the normalisation; "data_set" and
        "class_names"); with --onnx, the network in evaluation also as ONNX
        (checked with the onnx package), the same in its metadata, in float64
        or with --float32 in float32
    resgen_torch.py export SPEC WEIGHTS OUT.pt --torchscript MODEL.ts
        also the network as TorchScript, which torch.jit.load runs in any
        Python with PyTorch (no resgen, no spec): raw images (N x C x H x W
        pixels, 0 to 255) in, logits out, the stored normalisation applied
        inside; class names, normalisation and spec as its extra files
    resgen_torch.py export SPEC WEIGHTS OUT.pt --torchvision
        for a network that is one of torchvision's ResNets (specs/resnet-50.yaml):
        torchvision's own state dict, which torchvision.models.resnet50()
        loads with load_state_dict as it is (float32)
    resgen_torch.py import-torchvision SPEC SOURCE.pt OUT.weights [--fresh-classifier]
        the other way: a state dict saved from torchvision's model as the
        binary's weights file, with torchvision's ImageNet normalisation;
        --fresh-classifier: fine-tuning to the spec's classes, the
        classifier (fc, of any number of classes) left out, for the
        binary's train --load-weights OUT.weights --fresh-classifier
    resgen_torch.py evaluate SPEC WEIGHTS [--data DIR] [--split train|test]
                             [--train-limit N] [--test-limit N] [--batch B]
        error, top-5 error, loss and the confusion matrix of the split, as the
        binary's evaluate command measures them, normalised as the weights
        file says (older files: by the first --train-limit training images);
        a folder of images cropped as the binaries evaluate it (Resize,
        CenterCrop), its first --train-limit or --test-limit images in the
        binaries' order

In Python:

    import sys; sys.path.insert(0, "tools/pytorch")
    import resgen_torch
    net = resgen_torch.load("specs/demo.yaml", "demo.weights")   # in eval mode
    logits = net(images)  # images normalised as resgen_torch.normalise does

The module works in float64, the binaries' weights files' precision (call
net.float() for float32). Its inputs are images normalised as the binaries
normalise them: per channel, pixel / 255 less the mean, over the standard
deviation, of the training images the run used, then rounded to float32.
net.meta holds what the weights file said of them: "input_mean",
"input_std", "input_images", "data_set" and "class_names" (empty for a file
written before resgen stored them).

The torch.nn modules are resgen_nn.py's, imported once a network is built:
every check of the input comes first, without torch's seconds of import.
"""
import argparse
import copy
import gzip
import json
import math
import os
import stat
import struct
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import yaml
except ImportError as missing:  # another Python than Debian's, which make deps equips
    print(f"resgen_torch: this Python ({sys.executable}) lacks {missing.name}; run the tool as "
          "tools/pytorch/resgen_torch.py, with Debian's /usr/bin/python3 (make deps installs python3-numpy and "
          "python3-yaml)", file=sys.stderr)
    sys.exit(2)


class Refused(ValueError):
    """Input the tool will not take: a one-line message and exit 2 (exit 3
    for weights whose outputs are not finite)."""

    def __init__(self, message, status=2):
        super().__init__(message)
        self.status = status


def shown(text):
    """text with every control byte and every byte that is not UTF-8 as \\xNN,
    so that a message can neither drive the terminal nor forge a line."""
    if isinstance(text, str):
        text = text.encode("utf-8", "surrogateescape")
    out = []
    for ch in text.decode("utf-8", "surrogateescape"):
        if 0xDC80 <= ord(ch) <= 0xDCFF:
            out.append(f"\\x{ord(ch) - 0xDC00:02x}")
        elif ord(ch) < 0x20 or 0x7F <= ord(ch) < 0xA0:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return "".join(out)


def read_regular(path, max_bytes):
    """The bytes of path, a regular file of at most max_bytes (a FIFO or a
    device is refused without waiting on it or reading it)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as error:
        raise Refused(f"{shown(path)}: cannot open: {error.strerror}")
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise Refused(f"{shown(path)}: cannot open: it is a folder, not a file")
        if not stat.S_ISREG(info.st_mode):
            raise Refused(f"{shown(path)}: cannot open: it is not a regular file (a FIFO, device or socket)")
        if info.st_size > max_bytes:
            raise Refused(f"{shown(path)}: {info.st_size} bytes, more than such a file can hold ({max_bytes}); "
                          "is it the file you meant?")
        return f.read(max_bytes + 1)


def checksum(data):
    """FNV-1a of 64 bits, resgen's seal of a checkpoint (runtime/shared/checksum.h)."""
    h, prime, mask = 0xCBF29CE484222325, 0x100000001B3, (1 << 64) - 1
    for byte in data:
        h = ((h ^ byte) * prime) & mask
    return h


def check_values(named, array, running_variance):
    """Refuses what no weights hold, as the binaries refuse it: a value that
    is NaN or infinite, or a running variance below zero. named says whose
    values they are ("FILE: tensor NAME")."""
    bad = np.flatnonzero(~np.isfinite(array))
    if bad.size:
        what = "NaN" if np.isnan(array[bad[0]]) else "infinite"
        raise Refused(f"{named} value {bad[0]} is {what}; weights must be finite numbers")
    if running_variance and (array < 0).any():
        j = int(np.flatnonzero(array < 0)[0])
        raise Refused(f"{named} value {j} is {array[j]:g}; a running variance is never negative")


def read_tensors(path, max_bytes=1 << 34):
    """A resgen tensor file (runtime/run/tensor_file.h), or a checkpoint
    (its seal checked), of at most max_bytes as {name: float64 array},
    checked as the binaries check it (a checkpoint's run state left out):
    whole, each name once, nothing after the last tensor, every value
    finite, no running variance negative. Refused (one line) otherwise."""
    data = read_regular(path, max_bytes)
    where, run_state = shown(path), ()
    if len(data) >= 20 and data[:8] == b"RESGENK1":
        # a checkpoint: the same layout, sealed by the FNV-1a checksum of all
        # before its last 8 bytes, checked first (runtime/run/tensor_file.c)
        (sealed,) = struct.unpack_from("<Q", data, len(data) - 8)
        if checksum(data[:-8]) != sealed:
            raise Refused(f"{where}: its checksum does not match its contents; the file is damaged")
        data, run_state = b"RESGENT1" + data[8:-8], ("checkpoint/", "velocity/")
    elif len(data) < 12 or data[:8] != b"RESGENT1":
        raise Refused(f"{where}: not a resgen tensor file or checkpoint (it should start with RESGENT1 or "
                      "RESGENK1)")
    truncated = Refused(f"{where}: truncated; the file ends inside a tensor")
    (count,) = struct.unpack_from("<I", data, 8)
    at, tensors = 12, {}
    for index in range(count):
        if len(data) - at < 4:
            raise truncated
        (length,) = struct.unpack_from("<I", data, at)
        if not 1 <= length <= 255:
            raise Refused(f"{where}: tensor {index} has a name of {length} bytes; expected 1 to 255")
        if len(data) - at - 4 < length + 8:
            raise truncated
        raw = data[at + 4:at + 4 + length]
        name = raw.decode("utf-8", "surrogateescape")
        (values,) = struct.unpack_from("<Q", data, at + 4 + length)
        at += 12 + length
        if values > (len(data) - at) // 8:
            raise truncated
        if name in tensors:
            raise Refused(f"{where}: tensor {shown(raw)} appears twice; a weights file names each tensor once")
        array = np.frombuffer(data, dtype="<f8", count=values, offset=at).astype(np.float64)
        check_values(f"{where}: tensor {shown(raw)}", array, name.endswith("_running_var"))
        tensors[name] = array
        at += 8 * values
    if at != len(data):
        raise Refused(f"{where}: {len(data) - at} bytes after the last tensor; the file is damaged")
    # a checkpoint's run state beside its weights (its settings, data order
    # and momenta) is not the network's
    return {name: array for name, array in tensors.items() if not name.startswith(run_state)}


class Spec:
    """The fields of a spec that decide the computation, with the defaults of
    specs/README.md. resgen accepts one notation for numbers (plain decimal;
    reals may have an exponent, 1e-4), which PyYAML reads as a string when
    it has no '.': real fields go through float(), so both read the same."""

    def __init__(self, path):
        with open(path) as f:
            raw = yaml.safe_load(f)
        net, train = raw["net"], raw.get("train", {}) or {}
        self.name = raw["name"]
        # the data as resgen reads the spec, from its one table of sets
        # (runtime/shared/data_sets.c): no copy of it here
        data = spec_data(path)
        self.data_set, self.data_format, self.data_dir = data["set"], data["format"], data["dir"] or None
        # a folder's data.normalise: imagenet, folder (its images' own statistics) or given values
        self.normalise = data.get("normalise", "images")
        self.normalise_given = (data.get("normalise_mean"), data.get("normalise_std"))
        self.input, self.classes = (data["channels"], data["height"], data["width"]), data["classes"]
        self.class_names = data["class_names"]
        self.unit = net["unit"]
        self.ordering = net["ordering"]
        self.widths = net.get("widths", [16, 32, 64])
        self.stem = net.get("stem", "cifar")
        if "stages" in net:  # units per stage; else depth's formula of equal stages
            self.units = list(net["stages"])
        else:
            per_stage = (net["depth"] - 2) // (self.layers_per_unit() * len(self.widths))
            self.units = [per_stage] * len(self.widths)
        self.depth = self.layers_per_unit() * sum(self.units) + 2
        self.shortcut = net.get("shortcut", "identity")
        scaling = net.get("scaling", {}) or {}
        self.scale_shortcut = float(scaling.get("shortcut", 0.5))
        self.scale_branch = float(scaling.get("branch", 1))
        self.gate_bias = float((net.get("gating", {}) or {}).get("bias", -6))
        self.dropout_rate = float((net.get("dropout", {}) or {}).get("rate", 0.5))
        self.shortcut_bn = net.get("shortcut_bn", False)
        self.projection = net.get("projection", "conv1x1")
        # bf16: the binaries' convolutions and classifier multiply bf16
        # operands; the weights are f32 masters all the same
        self.precision = net.get("precision", "f32")
        self.arithmetic = net.get("arithmetic", "tiles")
        lr = train.get("lr", {}) or {}
        warmup = lr.get("warmup", {}) or {}
        self.lr_base = float(lr.get("base", 0.1))
        self.lr_schedule = lr.get("schedule", "step")
        self.iterations = train.get("iterations", 64000)
        self.warmup_lr = float(warmup.get("lr", 0.01))
        self.warmup_iterations = warmup.get("iterations", 400)
        self.lr_steps = [float(s) if isinstance(s, str) else s for s in lr.get("steps", [32000, 48000])]
        self.lr_gamma = float(lr.get("gamma", 0.1))
        self.momentum = float(train.get("momentum", 0.9))
        self.weight_decay = float(train.get("weight_decay", 0.0001))
        self.seed = train.get("seed", 1)
        self.bn_sync = train.get("bn_sync", False)

    def learning_rate(self, iteration):
        """The rate at iteration of a run of self.iterations: a warm-up, then
        steps (iterations, or fractions of the run rounded to the nearest) or
        a cosine from base to 0 at the end of the run."""
        if iteration < self.warmup_iterations:
            return self.warmup_lr
        if self.lr_schedule == "cosine":
            span = self.iterations - self.warmup_iterations
            done = (iteration - self.warmup_iterations) / span if span > 0 else 1
            return 0.5 * self.lr_base * (1 + math.cos(math.pi * done))
        at = [math.floor(s * self.iterations + 0.5) if isinstance(s, float) else s for s in self.lr_steps]
        return self.lr_base * self.lr_gamma ** sum(iteration >= s for s in at)

    def layers_per_unit(self):
        return {"basic": 2, "bottleneck": 3, "one-layer": 1}[self.unit]


class Graph:
    """The ops of the network in execution order, named as the generator names
    them. Written from the paper and specs/README.md, not from graph.c."""

    def __init__(self, spec):
        self.spec = spec
        self.ops = []      # dicts: kind, name, group, inputs, output and attributes
        self.shapes = {"input": spec.input}
        self.groups = []   # (name, first op index, op count)
        self.build()

    def begin(self, name):
        self.group = name
        self.counts = {"bn": 0, "relu": 0}
        self.groups.append([name, len(self.ops), 0])

    def op(self, kind, local, inputs, shape, **attributes):
        name = f"{self.group}_{local}"
        self.ops.append(dict(kind=kind, name=name, group=self.group, inputs=inputs, **attributes))
        self.groups[-1][2] += 1
        self.shapes[name] = shape
        return name

    def conv(self, local, x, channels, k, stride):
        c, h, w = self.shapes[x]
        p = k // 2
        shape = (channels, (h + 2 * p - k) // stride + 1, (w + 2 * p - k) // stride + 1)
        return self.op("conv", local, [x], shape, k=k, stride=stride)

    def bn(self, x, local=None):
        if local is None:
            self.counts["bn"] += 1
            local = f"bn{self.counts['bn']}"
        return self.op("bn", local, [x], self.shapes[x])

    def relu(self, x, local=None):
        if local is None:
            self.counts["relu"] += 1
            local = f"relu{self.counts['relu']}"
        return self.op("relu", local, [x], self.shapes[x])

    def preact(self):
        return self.spec.ordering in ("relu-only-preact", "full-preact")

    def unit(self, x, layers, channels, stride, first):
        s, order = self.spec, self.spec.ordering
        changes = stride != 1 or self.shapes[x][0] != channels
        branch = x
        if self.preact() and not first:
            if order == "full-preact":
                branch = self.bn(branch)
            branch = self.relu(branch)
        source = branch if changes and self.preact() else x
        for i, (k, conv_stride, width) in enumerate(layers):
            last = i == len(layers) - 1
            branch = self.conv(f"conv{i + 1}", branch, width, k, conv_stride)
            if order in ("original", "relu-only-preact"):
                branch = self.bn(branch)
                if not last:
                    branch = self.relu(branch)
            elif order == "relu-before-add":
                branch = self.relu(self.bn(branch))
            elif not last:  # bn-after-add, full-preact
                branch = self.relu(self.bn(branch))
        shortcut = source
        if s.shortcut == "conv1x1" or (changes and s.projection == "conv1x1"):
            shortcut = self.conv("shortcut_conv", source, channels, 1, stride)
            if s.shortcut_bn:
                shortcut = self.bn(shortcut, "shortcut_bn")
        elif changes:
            c, h, w = self.shapes[source]
            shortcut = self.op("pad", "shortcut_pad", [source],
                               (channels, -(-h // stride), -(-w // stride)), stride=stride)
        if s.shortcut in ("exclusive-gating", "shortcut-gating"):
            gate = self.conv("gate_conv", source, channels, 1, stride)
            y = self.op("gated_add", "gated_add", [shortcut, branch, gate], self.shapes[branch],
                        exclusive=s.shortcut == "exclusive-gating", bias=s.gate_bias)
        else:
            if s.shortcut == "scaling":
                shortcut = self.op("scale", "shortcut_scale", [shortcut], self.shapes[shortcut],
                                   factor=s.scale_shortcut)
                if s.scale_branch != 1:
                    branch = self.op("scale", "branch_scale", [branch], self.shapes[branch],
                                     factor=s.scale_branch)
            elif s.shortcut == "dropout":
                shortcut = self.op("dropout", "shortcut_dropout", [shortcut], self.shapes[shortcut],
                                   rate=s.dropout_rate, salt=len(self.ops) + 1)
            y = self.op("add", "add", [shortcut, branch], self.shapes[branch])
        if order == "original":
            y = self.relu(y, "post_relu")
        elif order == "bn-after-add":
            y = self.relu(self.bn(y, "post_bn"), "post_relu")
        return y

    def build(self):
        s = self.spec
        self.begin("stem")
        imagenet = s.stem == "imagenet"  # 7x7 stride 2, BN, ReLU, 3x3 stride-2 max pooling
        x = self.conv("conv", "input", s.widths[0], 7 if imagenet else 3, 2 if imagenet else 1)
        x = self.relu(self.bn(x, "bn"), "relu")
        if imagenet:
            c, h, w = self.shapes[x]
            x = self.op("max_pool", "pool", [x], (c, (h - 1) // 2 + 1, (w - 1) // 2 + 1), k=3, stride=2)
        digits = 3 if max(s.units) >= 100 else 2
        for stage, width in enumerate(s.widths, 1):
            for unit in range(1, s.units[stage - 1] + 1):
                self.begin(f"stage{stage}_unit{unit:0{digits}d}")
                stride = 2 if stage > 1 and unit == 1 else 1
                if s.unit == "bottleneck":
                    layers, out = [(1, 1, width), (3, stride, width), (1, 1, 4 * width)], 4 * width
                else:
                    layers, out = [(3, stride, width), (3, 1, width)][:s.layers_per_unit()], width
                x = self.unit(x, layers, out, stride, stage == 1 and unit == 1)
        self.begin("head")
        if s.ordering == "full-preact":
            x = self.relu(self.bn(x, "bn"), "relu")
        elif s.ordering == "relu-only-preact":
            x = self.relu(x, "relu")
        x = self.op("pool", "pool", [x], (self.shapes[x][0], 1, 1))
        self.logits = self.op("linear", "fc", [x], (s.classes, 1, 1))
        self.op("loss", "loss", [self.logits], (s.classes, 1, 1))


# resgen's tensor names, by the kind of op: suffix -> the module's own name.
NAMES = {"conv": {"_weight": "weight"}, "linear": {"_weight": "weight", "_bias": "bias"},
         "gated_add": {"_bias": "bias"},
         "bn": {"_gamma": "weight", "_beta": "bias", "_running_mean": "running_mean",
                "_running_var": "running_var"}}


def tensors_of(graph):
    """{resgen's tensor name: (the module's state-dict key, its value count)}
    for graph's network, as its weights file holds them
    (resgen_nn.ResgenNet's modules hold as many)."""
    tensors = {}
    for op in graph.ops:
        name, inputs, outputs = op["name"], graph.shapes[op["inputs"][0]][0], graph.shapes[op["name"]][0]
        weight = outputs * inputs * (op["k"] ** 2 if op["kind"] == "conv" else 1)
        for suffix, field in NAMES.get(op["kind"], {}).items():
            tensors[name + suffix] = (f"layers.{name}.{field}", weight if suffix == "_weight" else outputs)
    return tensors


def weights_bytes(graph):
    """The size of the weights file of graph's network: what reading one may take."""
    return 12 + sum(12 + len(name.encode()) + 8 * count for name, (_, count) in tensors_of(graph).items())


def text_of(values):
    """A string stored as a tensor, a byte a value (runtime/run/state.c)."""
    return bytes(int(v) for v in values if 0 <= v < 256).decode("utf-8", "replace")


CLASS_NAME_MAX = 1024  # bytes of a class's name, with its end (runtime/data/data.h)


def class_names_of(values):
    """The names meta/class_names holds, a line each of 1 to
    CLASS_NAME_MAX - 1 bytes of printable UTF-8 (no control characters,
    C0 or C1, as runtime/shared/printable.c); None where it holds
    anything else."""
    if not all(v == math.floor(v) and 0 <= v < 256 for v in values) or not values.size or values[-1] != 10:
        return None
    lines = bytes(int(v) for v in values).split(b"\n")[:-1]
    names = []
    for line in lines:
        try:
            name = line.decode("utf-8")
        except UnicodeDecodeError:
            return None
        if not 1 <= len(line) < CLASS_NAME_MAX or any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in name):
            return None
        names.append(name)
    return names


def read_meta(tensors, graph, path):
    """The meta/ tensors of a weights file, as net.meta holds them: {} for a
    file that has none. They leave tensors. Refused, as the binaries refuse
    them (runtime/run/state.c, check_meta), where no run could have stored
    them: the channel statistics of pixels in 0..1 units (a mean from 0 to
    1, a standard deviation above 0 and at most 0.5, or 1 for images of one
    value), a whole number of images, a data set's name, a name a class."""
    stored = {name[5:]: tensors.pop(name) for name in [n for n in tensors if n.startswith("meta/")]}
    where, forged = shown(path), "; were these weights edited or damaged?"
    normalisation = ("input_mean", "input_std", "input_images")
    if not any(key in stored for key in normalisation):
        return {}
    for key in normalisation:
        if key not in stored:
            raise Refused(f"{where}: meta/{key} is missing beside the rest of the input's normalisation; a "
                          "weights file holds all of meta/input_mean, input_std and input_images or none" + forged)
    channels = graph.spec.input[0]
    for key in normalisation[:2]:
        if stored[key].size != channels:
            raise Refused(f"{where}: meta/{key} has {stored[key].size} values, but {graph.spec.name} takes "
                          f"{channels} channel{'' if channels == 1 else 's'}" + forged)
    for c, (mean, std) in enumerate(zip(stored["input_mean"], stored["input_std"])):
        if not 0 <= mean <= 1:
            raise Refused(f"{where}: meta/input_mean value {c} is {mean:g}; a mean of pixels in 0..1 units is "
                          "from 0 to 1" + forged)
        if not (0 < std <= 0.5 or std == 1):
            raise Refused(f"{where}: meta/input_std value {c} is {std:g}; a standard deviation of pixels in "
                          "0..1 units is above 0 and at most 0.5 (1 for images of one value)" + forged)
    images = stored["input_images"]
    if not (images.size == 1 and 1 <= images[0] <= 1e9 and images[0] == math.floor(images[0])):
        raise Refused(f"{where}: meta/input_images is not a whole number of training images from 1 to "
                      "1000000000" + forged)

    def printable(values):
        return all(v == math.floor(v) and 0x20 <= v < 0x7F for v in values)
    meta = {"input_mean": [float(v) for v in stored["input_mean"]],
            "input_std": [float(v) for v in stored["input_std"]], "input_images": int(images[0])}
    if "data_set" in stored:
        if not 1 <= stored["data_set"].size <= 63 or not printable(stored["data_set"]):
            raise Refused(f"{where}: meta/data_set is not a data set's name (1 to 63 printable characters)" + forged)
        meta["data_set"] = text_of(stored["data_set"])
    if "class_names" in stored:
        names = class_names_of(stored["class_names"])
        if names is None or len(names) != graph.spec.classes:
            raise Refused(f"{where}: meta/class_names holds "
                          f"{'another number of names' if names is not None else 'unprintable or overlong names'}, "
                          f"but {graph.spec.name} has {graph.spec.classes} classes, a name each of 1 to "
                          f"{CLASS_NAME_MAX - 1} bytes of printable UTF-8" + forged)
        meta["class_names"] = names
    return meta


def check_tensors(graph, tensors, path="the weights"):
    """Refuses a weights file's tensors ({name: flat float64 array}, its
    meta/ tensors taken out) with a tensor missing, extra or of another size
    than graph's network has, naming it."""
    wanted = tensors_of(graph)
    for name in sorted(set(tensors) ^ set(wanted)):
        where = "is not one of this network's" if name in tensors else "is missing"
        raise Refused(f"{shown(path)}: tensor {shown(name)} {where}; were these weights exported by "
                      f"{graph.spec.name}'s binary?")
    for name, (_, count) in wanted.items():
        if tensors[name].size != count:
            raise Refused(f"{shown(path)}: tensor {name} has {tensors[name].size} values, but "
                          f"{graph.spec.name}'s has {count}")


def load_weights(net, tensors):
    """Puts checked tensors (check_tensors) into net's state dict."""
    import torch
    state = net.state_dict()
    for name, (key, _) in tensors_of(net.graph).items():
        target = state[key]
        state[key] = torch.from_numpy(tensors[name].copy()).reshape(target.shape).to(target.dtype)
    net.load_state_dict(state)
    return net


def write_tensors(path, tensors):
    """{name: float64 array} as a resgen tensor file (runtime/run/tensor_file.h),
    written beside path and renamed over it."""
    def write(to):
        with open(to, "wb") as f:
            f.write(b"RESGENT1" + struct.pack("<I", len(tensors)))
            for name, values in tensors.items():
                raw = name.encode()
                values = np.ascontiguousarray(values, dtype="<f8").ravel()
                f.write(struct.pack("<I", len(raw)) + raw + struct.pack("<Q", values.size) + values.tobytes())
    replace(path, write)


# ---- torchvision's ResNets: the same networks under other names ----

# ImageNet's per-channel mean and standard deviation of pixels in 0..1
# units, as torchvision's pretrained weights expect their inputs
# normalised (its transforms.Normalize).
IMAGENET_MEAN, IMAGENET_STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
# ILSVRC 2012's training images
IMAGENET_IMAGES = 1281167

TORCHVISION_FIELDS = {"_weight": "weight", "_gamma": "weight", "_beta": "bias", "_running_mean": "running_mean",
                      "_running_var": "running_var", "_bias": "bias"}


def torchvision_names(graph):
    """{resgen's tensor name: torchvision's state-dict key} for a network that
    is one of torchvision's ResNets (resnet18 to resnet152): the ImageNet
    stem, the original ordering, identity shortcuts with projections and
    their BN where the shape changes (option B), widths 64 to 512 in four
    stages. Refused, saying what differs, for any other."""
    s = graph.spec
    differs = [what for what, same in [
        ("its stem is not the ImageNet one (net.stem: imagenet)", s.stem == "imagenet"),
        ("its ordering is not the original one", s.ordering == "original"),
        ("its units are not basic or bottleneck", s.unit in ("basic", "bottleneck")),
        ("its shortcuts are not identities", s.shortcut == "identity"),
        ("its projections are not 1x1 convolutions with BN (projection: conv1x1, shortcut_bn: true)",
         s.projection == "conv1x1" and s.shortcut_bn),
        ("its widths are not [64, 128, 256, 512]", list(s.widths) == [64, 128, 256, 512]),
        ("its input is not 3 channels", s.input[0] == 3),
        ("its units per stage are none of resnet18's to resnet152's ([2, 2, 2, 2] and [3, 4, 6, 3] of basic "
         "units, [3, 4, 6, 3], [3, 4, 23, 3] and [3, 8, 36, 3] of bottlenecks)",
         (s.unit, s.units) in (("basic", [2, 2, 2, 2]), ("basic", [3, 4, 6, 3]), ("bottleneck", [3, 4, 6, 3]),
                               ("bottleneck", [3, 4, 23, 3]), ("bottleneck", [3, 8, 36, 3])))] if not same]
    if differs:
        raise Refused(f"{s.name} is not one of torchvision's ResNets: {differs[0]}")
    names = {}
    for name, (key, _) in tensors_of(graph).items():
        op = key.split(".")[1]
        field = next(TORCHVISION_FIELDS[suffix] for suffix in TORCHVISION_FIELDS if name == op + suffix)
        group, _, local = op.partition("_")
        if group == "stem":
            module = {"conv": "conv1", "bn": "bn1"}[local]
        elif group == "head":
            module = "fc"
        else:
            stage, unit = group.removeprefix("stage"), int(local.split("_")[0].removeprefix("unit"))
            local = local.split("_", 1)[1]
            module = f"layer{stage}.{unit - 1}." + {"shortcut_conv": "downsample.0",
                                                      "shortcut_bn": "downsample.1"}.get(local, local)
        names[name] = f"{module}.{field}"
    return names


def torchvision_state(net):
    """net's weights (a ResgenNet of one of torchvision's ResNets) as
    torchvision's state dict, in float32, BN's batch counts at 0."""
    import torch
    state, tensors = net.state_dict(), tensors_of(net.graph)
    out = {}
    for name, key in torchvision_names(net.graph).items():
        out[key] = state[tensors[name][0]].detach().to(torch.float32).clone()
        if key.endswith(".running_var"):
            out[key.replace(".running_var", ".num_batches_tracked")] = torch.tensor(0, dtype=torch.long)
    return out


def resgen_binary():
    """resgen: the RESGEN variable's, else this checkout's build/bin/resgen."""
    here = os.path.dirname(os.path.abspath(__file__))
    resgen = os.environ.get("RESGEN") or os.path.join(here, "..", "..", "build", "bin", "resgen")
    if not os.access(resgen, os.X_OK):
        raise Refused(f"{shown(resgen)} is missing: the tool reads specs with it; build it with make "
                      "build/bin/resgen, or set RESGEN to it")
    return resgen


def spec_data(spec_path):
    """The spec's data as resgen reads it (resgen summary --json): its set,
    format, folder, input shape, classes and their names."""
    done = subprocess.run([resgen_binary(), "summary", spec_path, "--json"], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        lines = done.stderr.decode("utf-8", "surrogateescape").strip().splitlines() or [
            f"resgen summary {shown(spec_path)} --json failed with status {done.returncode}"]
        raise Refused(lines[0].removeprefix("resgen: "))
    return json.loads(done.stdout.decode("utf-8", "surrogateescape"))["data"]


def check_spec(spec_path):
    """Refuses a spec that resgen refuses, with resgen's own line: its
    limits (depth, widths, memory, names) are the tool's. resgen is the
    RESGEN variable's, else this checkout's build/bin/resgen."""
    done = subprocess.run([resgen_binary(), "check", spec_path], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        lines = done.stderr.decode("utf-8", "surrogateescape").strip().splitlines() or [
            f"resgen check {shown(spec_path)} failed with status {done.returncode}"]
        raise Refused(lines[0].removeprefix("resgen: "))


def network(graph):
    """graph's network as a torch.nn.Module in float64 (resgen_nn.ResgenNet),
    its parameters as torch initialises them."""
    from resgen_nn import ResgenNet
    return ResgenNet(graph).double()


def load(spec_path, weights_path):
    """The variant of spec_path, checked by resgen, with the weights of
    weights_path, in evaluation mode, in float64. Everything is checked
    before torch is imported."""
    check_spec(spec_path)
    graph = Graph(Spec(spec_path))
    # room for a damaged file's extra bytes to be found and named, and for
    # a checkpoint's momenta and data order
    tensors = read_tensors(weights_path, 3 * weights_bytes(graph) + (64 << 20))
    meta = read_meta(tensors, graph, weights_path)
    check_tensors(graph, tensors, weights_path)
    net = load_weights(network(graph), tensors)
    net.meta = meta
    return net.eval()


# ---- data, read and normalised as the binaries do (runtime/data/data.c) ----

# The largest data file read: CIFAR-100's training images are 150 MB.
DATA_BYTES = 1 << 30


def _idx(path, dimensions):
    if os.path.exists(path + ".gz"):
        with gzip.GzipFile(fileobj=__import__("io").BytesIO(read_regular(path + ".gz", DATA_BYTES))) as f:
            data = f.read(DATA_BYTES + 1)
    else:
        data = read_regular(path, DATA_BYTES)
    dims = data[3] if len(data) >= 4 else 0
    if len(data) < 4 + 4 * dims or data[:2] != b"\0\0" or data[2] != 8 or dims != dimensions:
        raise Refused(f"{shown(path)}: not an IDX file of bytes in {dimensions} dimension"
                      f"{'s' if dimensions > 1 else ''}")
    shape = struct.unpack_from(">" + "I" * dims, data, 4)
    if math.prod(shape) != len(data) - 4 - 4 * dims:
        raise Refused(f"{shown(path)}: its header says {math.prod(shape)} values, but it holds "
                      f"{len(data) - 4 - 4 * dims}")
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def folder_files(data_dir, split):
    """A folder of images' split (train/, or val/ for the test split) as
    the binaries list it (runtime/data/image_folder.c): (path under the
    split, label) in the order of FNV-1a of CLASS/FILE, the classes
    train/'s folders in the order of their names, hidden names left out."""
    def entries(folder, folders):
        try:
            names = os.listdir(folder)
        except OSError as e:
            raise Refused(f"{shown(folder)}: cannot read the folder: {e.strerror}; a folder of images holds "
                          "train/CLASS/*.JPEG and val/CLASS/*.JPEG")
        return sorted(n for n in names if not n.startswith(".") and
                      (os.path.isdir if folders else os.path.isfile)(os.path.join(folder, n)))
    classes = entries(os.path.join(data_dir, "train"), True)
    root = os.path.join(data_dir, "train" if split == "train" else "val")
    files = []
    for c in entries(root, True):
        if c not in classes:
            raise Refused(f"{shown(root)}: class folder {shown(c)} is not one of the {len(classes)} of "
                          f"{shown(os.path.join(data_dir, 'train'))}")
        files += [(f"{c}/{name}", classes.index(c)) for name in entries(os.path.join(root, c), False)
                  if os.path.splitext(name)[1].lower() in (".jpeg", ".jpg", ".png")]
    return root, sorted(files, key=lambda item: (checksum(os.fsencode(item[0])), os.fsencode(item[0])))


def read_folder(spec, data_dir, split, limit=0):
    """The first limit images (0: all) of a folder of images' split,
    cropped as the binaries' evaluate crops them: the shorter side resized
    to round(256 C / 224), the center C x C crop (torchvision's Resize and
    CenterCrop, which the binaries equal pixel for pixel), as uint8."""
    from PIL import Image
    from torchvision import transforms
    root, files = folder_files(data_dir, split)
    files = files[:limit] if limit else files
    crop = spec.input[1]
    transform = transforms.Compose([transforms.Resize(round(256 * crop / 224)), transforms.CenterCrop(crop)])
    images = np.empty((len(files),) + tuple(spec.input), dtype=np.uint8)
    for i, (path, _) in enumerate(files):
        try:
            with Image.open(os.path.join(root, path)) as picture:
                images[i] = np.asarray(transform(picture.convert("RGB")), dtype=np.uint8).transpose(2, 0, 1)
        except (OSError, ValueError, Image.DecompressionBombError) as e:
            raise Refused(f"{shown(os.path.join(root, path))}: Pillow cannot decode it ({e}); the binaries' "
                          "--skip-bad-images leaves such files out, this tool does not")
    return images, np.array([label for _, label in files], dtype=np.int64)


def read_split(spec, data_dir, split, limit=0):
    """(images as uint8 N x C x H x W, labels) of a split of the spec's
    data; a folder of images' first limit (0: all), as its evaluation
    crops them."""
    if spec.data_format == "folder":
        images, labels = read_folder(spec, data_dir, split, limit)
    else:
        images, labels = _read_split(spec, data_dir, split)
    if len(images) != len(labels) or images.shape[1:] != spec.input:
        raise Refused(f"{spec.name}: the {split} split in {shown(data_dir)} has {len(images)} images of "
                      f"{'x'.join(map(str, images.shape[1:]))} and {len(labels)} labels; the network takes "
                      f"{'x'.join(map(str, spec.input))}, a label each")
    if len(labels) and labels.max() >= spec.classes:
        raise Refused(f"{spec.name}: the {split} split in {shown(data_dir)} has the label {labels.max()}; "
                      f"the network has {spec.classes} classes")
    return images, labels


def _read_split(spec, data_dir, split):
    kind = spec.data_format
    if kind == "idx":
        prefix = "train" if split == "train" else "t10k"
        images = _idx(os.path.join(data_dir, f"{prefix}-images-idx3-ubyte"), 3)
        labels = _idx(os.path.join(data_dir, f"{prefix}-labels-idx1-ubyte"), 1)
        return images[:, None, :, :], labels.astype(np.int64)
    if kind == "cifar":
        hundred = spec.classes == 100  # CIFAR-100's binary files: a coarse and a fine label
        files = (["train.bin"] if split == "train" else ["test.bin"]) if hundred else \
            ([f"data_batch_{i}.bin" for i in range(1, 6)] if split == "train" else ["test_batch.bin"])
        base = data_dir
        if not os.path.exists(os.path.join(base, files[0])):
            base = os.path.join(data_dir, "cifar-100-binary" if hundred else "cifar-10-batches-bin")
        label_bytes = 2 if hundred else 1
        parts = []
        for f in files:
            data = read_regular(os.path.join(base, f), DATA_BYTES)
            if len(data) % (label_bytes + 3072):
                raise Refused(f"{shown(os.path.join(base, f))}: {len(data)} bytes, not whole records of "
                              f"{label_bytes + 3072}")
            parts.append(np.frombuffer(data, dtype=np.uint8).reshape(-1, label_bytes + 3072))
        records = np.concatenate(parts)
        return records[:, label_bytes:].reshape(-1, 3, 32, 32), records[:, label_bytes - 1].astype(np.int64)
    raise Refused(f"{spec.name}: data set {spec.data_set} is not read from files")


def channel_statistics(images):
    """Per channel: the mean and standard deviation of the pixels / 255."""
    values = images.astype(np.float64) / 255.0
    mean = values.mean(axis=(0, 2, 3))
    variance = (values * values).mean(axis=(0, 2, 3)) - mean * mean
    return mean, np.where(variance > 1e-12, np.sqrt(np.maximum(variance, 0)), 1.0)


def normalise(images, mean, std):
    """uint8 images as the network's float64 inputs, rounded through float32
    as the binaries round them."""
    import torch
    scale, shift = 1.0 / (255.0 * std), -mean / std
    values = images.astype(np.float64) * scale[None, :, None, None] + shift[None, :, None, None]
    return torch.from_numpy(values.astype(np.float32).astype(np.float64))


def evaluate(net, images, labels, batch=256):
    """(error, top-5 error, mean loss, confusion matrix) of normalised images."""
    import torch
    import torch.nn.functional as F
    classes = net.spec.classes
    confusion = np.zeros((classes, classes), dtype=np.int64)
    loss_sum, top5 = 0.0, 0
    with torch.no_grad():
        for start in range(0, len(labels), batch):
            logits = net(images[start:start + batch])
            truth = torch.from_numpy(labels[start:start + batch])
            loss_sum += F.cross_entropy(logits, truth, reduction="sum").item()
            # ties and NaNs count against the label, as in the binaries
            above = (~(logits < logits.gather(1, truth[:, None]))).sum(1) - 1
            top5 += int((above >= 5).sum())
            np.add.at(confusion, (truth.numpy(), logits.argmax(1).numpy()), 1)
    n = len(labels)
    return 1 - np.trace(confusion) / n, top5 / n, loss_sum / n, confusion


class Parser(argparse.ArgumentParser):
    """argparse whose errors are one line and exit 2."""

    def error(self, message):
        print(f"resgen_torch: {shown(message)}; see resgen_torch.py {self.prog.split()[-1]} --help"
              if " " in self.prog else f"resgen_torch: {shown(message)}; see resgen_torch.py --help",
              file=sys.stderr)
        sys.exit(2)


def count(text):
    """A whole number from 1, in plain decimal (--train-limit 100)."""
    if not text.isdigit() or text.startswith("0") or len(text) > 10:
        raise argparse.ArgumentTypeError(f"'{shown(text)}' is not a whole number from 1 in plain decimal")
    return int(text)


def same_file(a, b):
    """Whether paths a and b name one file: as files where both exist
    (device and inode), else as resolved paths (a dangling link as the
    file it would create)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def check_output(path):
    """An output must go to a regular file in a folder that exists."""
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise Refused(f"{shown(path)}: cannot write: its folder does not exist")
    if os.path.lexists(path) and not (os.path.isfile(path) and not os.path.islink(path)):
        raise Refused(f"{shown(path)}: cannot write: it exists and is not a regular file (a folder, link, "
                      "FIFO or device); it is left as it is")


def replace(path, write):
    """Calls write(temporary path) in a new folder beside path, then renames
    the result over path: a failure leaves path as it was. The temporary
    file has path's own name (torch.save names the archive inside after
    it)."""
    folder = tempfile.mkdtemp(prefix=".resgen_torch-", dir=os.path.dirname(os.path.abspath(path)))
    temporary = os.path.join(folder, os.path.basename(path))
    try:
        write(temporary)
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
        os.rmdir(folder)


def is_imagenet(mean, std):
    """Whether a normalisation is ImageNet's fixed one (a folder's runs and
    torchvision's imported weights store it), not a set's own statistics."""
    return [float(v) for v in mean] == list(IMAGENET_MEAN) and [float(v) for v in std] == list(IMAGENET_STD)


def normalisation(meta):
    """How the inputs are made from images, for whoever reads an export
    alone: ImageNet's fixed mean and deviation (a folder's runs and
    torchvision's imported weights store them), or the statistics of the
    run's training images."""
    said = "ImageNet's channel mean and deviation, as torchvision normalises" \
        if is_imagenet(meta.get("input_mean", ()), meta.get("input_std", ())) else \
        "the statistics of input_images training images"
    return f"each channel of an image: pixel / 255, less input_mean, over input_std ({said}), rounded to float32"


def trained_precision(spec):
    """How the weights were trained, for an export to say: a bf16 network's
    are the f32 masters of bf16 products; None for an f32 network."""
    if spec.precision != "bf16":
        return None
    return (f"trained in bf16 mixed precision: its convolutions and classifier multiplied bf16 operands, "
            f"summed in f32 in the {spec.arithmetic} order; these are its f32 weights, and the export computes "
            "in full precision")


def export(net, output, onnx_path, float32=False):
    import torch
    saved = {"state_dict": net.state_dict(), **net.meta}
    if net.meta:
        saved["normalisation"] = normalisation(net.meta)
    if trained_precision(net.spec):
        saved["trained_precision"] = trained_precision(net.spec)
    replace(output, lambda to: torch.save(saved, to))
    said = "with its input normalisation and class names" if net.meta else \
        "without normalisation or class names (the weights file holds none: written by init, or by a resgen " \
        "before they were stored)"
    print(f"wrote {shown(output)}: the state dict of {net.spec.name} "
          f"({sum(p.numel() for p in net.parameters())} parameters, float64) under \"state_dict\", {said}")
    if trained_precision(net.spec):
        print(f"{net.spec.name} was {trained_precision(net.spec)} (under \"trained_precision\" too)")
    if onnx_path:
        import onnx
        dtype = torch.float32 if float32 else torch.float64
        exported = copy.deepcopy(net).to(dtype) if float32 else net

        def write_onnx(to):
            example = torch.zeros((1,) + net.spec.input, dtype=dtype)
            torch.onnx.export(exported, example, to, input_names=["images"], output_names=["logits"],
                              dynamic_axes={"images": {0: "batch"}, "logits": {0: "batch"}})
            model = onnx.load(to)
            props = {"network": net.spec.name, "normalisation": normalisation(net.meta) if net.meta else ""}
            props.update({key: json.dumps(value) for key, value in net.meta.items()})
            if trained_precision(net.spec):
                props["trained_precision"] = trained_precision(net.spec)
            onnx.helper.set_model_props(model, props)
            onnx.checker.check_model(model)
            onnx.save(model, to)
        replace(onnx_path, write_onnx)
        print(f"wrote {shown(onnx_path)}: the network in evaluation as ONNX in "
              f"{'float32' if float32 else 'float64'}, checked; its metadata "
              f"{'holds the normalisation and class names' if net.meta else 'holds neither'}")


def export_torchscript(net, spec_path, output):
    """net, its normalisation inside, as a TorchScript module that
    torch.jit.load runs in any Python with PyTorch: raw images in, logits
    out; its class names, normalisation and spec in the file beside it."""
    import torch
    from resgen_nn import RawPixels, Standalone
    module = Standalone(net, net.meta["input_mean"], net.meta["input_std"]).eval()
    example = torch.zeros((1,) + net.spec.input, dtype=torch.uint8)
    with torch.no_grad():
        traced = torch.jit.script(RawPixels(torch.jit.trace(module, example, check_trace=False)))
    with open(spec_path, "rb") as f:
        spec_text = f.read()
    extra = {"class_names.json": json.dumps(net.meta.get("class_names", [str(i) for i in range(net.spec.classes)])),
             "normalisation.json": json.dumps({key: net.meta[key] for key in ("input_mean", "input_std",
                                                                             "input_images")}),
             "spec.yaml": spec_text}
    if trained_precision(net.spec):
        extra["trained_precision.txt"] = trained_precision(net.spec)
    replace(output, lambda to: torch.jit.save(traced, to, _extra_files=extra))
    print(f"wrote {shown(output)}: {net.spec.name} as TorchScript (float64), taking raw images of "
          f"{'x'.join(map(str, net.spec.input))} pixels from 0 to 255 (refusing 0..1 or normalised ones) and "
          "normalising them inside; class names, "
          "normalisation and spec in its extra files (class_names.json, normalisation.json, spec.yaml)")


def export_torchvision(net, output):
    """net's weights as torchvision's state dict: torchvision.models.resnet50()
    (or whichever the network is) loads it with load_state_dict as it is."""
    import torch
    state = torchvision_state(net)
    replace(output, lambda to: torch.save(state, to))
    depth = net.spec.depth
    said = (f"normalise its inputs by mean {list(net.meta['input_mean'])} and std {list(net.meta['input_std'])} "
            "(pixels in 0..1 units)") if net.meta else "the weights file holds no normalisation"
    print(f"wrote {shown(output)}: torchvision's state dict of {net.spec.name} (torchvision.models.resnet{depth}"
          f"(num_classes={net.spec.classes}).load_state_dict(torch.load(FILE)), float32); {said}")
    if trained_precision(net.spec):
        print(f"{net.spec.name} was {trained_precision(net.spec)}")


def kind_of(value):
    """What a state dict's entry is, in words, for a refusal."""
    import torch
    if isinstance(value, torch.Tensor):
        return f"a tensor of {str(value.dtype).removeprefix('torch.')}"
    return f"a {type(value).__name__}"


def load_state_dict(source):
    """The dict of tensors torch.save wrote to source, read with PyTorch's
    weights-only unpickler: tensors, numbers, strings and the containers
    of a state dict, and nothing that runs code (an object whose unpickling
    would call a function is refused before anything of it runs)."""
    import pickle
    import torch
    try:
        state = torch.load(source, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as error:
        said = (str(error).rpartition("WeightsUnpickler error: ")[2].splitlines() or ["not a state dict"])[0]
        if said.startswith("Unsupported class "):
            said = f"an object of {said.removeprefix('Unsupported class ')}"
        elif said.startswith("Unsupported operand "):
            said = f"a value other than a tensor, a whole number or a string: pickle opcode {said.split()[-1]}"
        raise Refused(f"{shown(source)}: holds more than tensors ({shown(said)}); a file of weights is read "
                      "for its tensors alone, and nothing in it was run")
    except Exception as error:  # torch raises many kinds for a file that is not its own
        lines = str(error).splitlines() or [type(error).__name__]
        raise Refused(f"{shown(source)}: not a file torch.save wrote ({shown(lines[0])})")
    if isinstance(state, dict) and "state_dict" in state:
        state = state["state_dict"]
    if not isinstance(state, dict):
        raise Refused(f"{shown(source)}: holds no state dict")
    return state


def torchvision_shapes(graph):
    """{resgen's tensor name: its shape in torchvision's state dict}: a
    convolution's weight [out, in, k, k], the classifier's [classes, in],
    the rest [channels]."""
    shapes = {}
    for op in graph.ops:
        name, inputs, outputs = op["name"], graph.shapes[op["inputs"][0]][0], graph.shapes[op["name"]][0]
        for suffix in NAMES.get(op["kind"], {}):
            if suffix == "_weight" and op["kind"] == "conv":
                shapes[name + suffix] = (outputs, inputs, op["k"], op["k"])
            elif suffix == "_weight":
                shapes[name + suffix] = (outputs, inputs)
            else:
                shapes[name + suffix] = (outputs,)
    return shapes


def import_torchvision(spec_path, source, output, fresh_classifier=False):
    """Weights saved from one of torchvision's ResNets (torch.save of its
    state_dict()) as the weights file of spec_path's binary, with
    torchvision's ImageNet normalisation stored beside them. With
    fresh_classifier, the classifier (fc, of any number of classes) is left
    out, for the binary's train --load-weights --fresh-classifier to
    initialise for the spec's classes."""
    check_spec(spec_path)
    graph = Graph(Spec(spec_path))
    names = torchvision_names(graph)
    import torch
    state = load_state_dict(source)
    tensors = {}
    shapes = torchvision_shapes(graph)
    left_out = {}
    if fresh_classifier:
        for name in [n for n in names if n.startswith("head_fc_")]:
            key = names.pop(name)
            if isinstance(state.get(key), torch.Tensor):
                left_out[key] = list(state[key].shape)
            elif key in state:
                raise Refused(f"{shown(source)}: {key} is {kind_of(state[key])}, not a tensor")
        classifier = {k for k in state if isinstance(k, str) and k.startswith("fc.")}
    for name, key in names.items():
        if key not in state:
            raise Refused(f"{shown(source)}: {key} is missing; it is not the state dict of torchvision's "
                          f"resnet{graph.spec.depth}")
        value = state[key]
        if not isinstance(value, torch.Tensor) or not value.is_floating_point():
            raise Refused(f"{shown(source)}: {key} is {kind_of(value)}, not a tensor of floating-point numbers")
        if tuple(value.shape) != shapes[name] and name.startswith("head_fc_") and \
                tuple(value.shape)[1:] == shapes[name][1:]:
            raise Refused(f"{shown(source)}: {key} has the shape {list(value.shape)}, for {value.shape[0]} classes, "
                          f"but {graph.spec.name} has {graph.spec.classes}; to fine-tune these weights to its "
                          "classes, give --fresh-classifier")
        if tuple(value.shape) != shapes[name]:
            raise Refused(f"{shown(source)}: {key} has the shape {list(value.shape)}, but {graph.spec.name}'s "
                          f"{name} is {list(shapes[name])} in torchvision's layout; is it resnet{graph.spec.depth} "
                          f"with {graph.spec.classes} classes, saved from torchvision's model?")
        values = value.detach().to(torch.float64).numpy().ravel()
        check_values(f"{shown(source)}: {key}", values, key.endswith(".running_var"))
        tensors[name] = values
    extra = sorted(str(k) for k in state if not isinstance(k, str) or
                   (k not in set(names.values()) and not k.endswith("num_batches_tracked") and
                    not (fresh_classifier and k in classifier)))
    if extra:
        raise Refused(f"{shown(source)}: {shown(extra[0])} is not one of resnet{graph.spec.depth}'s tensors")
    tensors["meta/input_mean"] = np.array(IMAGENET_MEAN)
    tensors["meta/input_std"] = np.array(IMAGENET_STD)
    tensors["meta/input_images"] = np.array([IMAGENET_IMAGES], dtype=np.float64)
    tensors["meta/data_set"] = np.frombuffer(b"imagenet", dtype=np.uint8).astype(np.float64)
    write_tensors(output, tensors)
    print(f"wrote {shown(output)}: {len(names)} tensors of {shown(source)} as {graph.spec.name}'s weights, "
          f"normalised as torchvision's ImageNet weights expect: mean {list(IMAGENET_MEAN)}, std "
          f"{list(IMAGENET_STD)} (pixels in 0..1 units)")
    if fresh_classifier:
        said = " and ".join(f"{key} {shape}" for key, shape in left_out.items()) or "no classifier (there was none)"
        print(f"left out {said}: {graph.spec.name}'s binary initialises its classifier for {graph.spec.classes} "
              f"classes with train --load-weights {shown(output)} --fresh-classifier")


def measure(net, o):
    data_dir = o.data or net.spec.data_dir
    folder = net.spec.data_format == "folder"
    if folder:  # a folder's images are read as far as the split and limit need
        train_images = train_labels = None
        if o.split == "train":
            train_images, train_labels = read_split(net.spec, data_dir, "train", o.train_limit)
    else:
        train_images, train_labels = read_split(net.spec, data_dir, "train")
    if o.train_limit and not folder:
        train_images, train_labels = train_images[:o.train_limit], train_labels[:o.train_limit]
    if folder and "input_mean" not in net.meta:  # as the spec's data.normalise says
        if net.spec.normalise == "given":
            mean, std = (np.array(v) for v in net.spec.normalise_given)
            print("inputs normalised by the spec's channel mean and deviation (data.normalise)")
        elif net.spec.normalise == "folder":
            if train_images is None:
                train_images, train_labels = read_split(net.spec, data_dir, "train", o.train_limit)
            mean, std = channel_statistics(train_images)
            print("inputs normalised by the training images' own channel statistics (data.normalise: folder)")
        else:
            mean, std = np.array(IMAGENET_MEAN), np.array(IMAGENET_STD)
            print("inputs normalised by ImageNet's channel mean and deviation, as the binaries normalise a "
                  "folder of images")
    elif "input_mean" in net.meta:
        mean, std = np.array(net.meta["input_mean"]), np.array(net.meta["input_std"])
        if is_imagenet(mean, std):
            print("inputs normalised as the weights file says (ImageNet's channel mean and deviation, as "
                  "torchvision normalises)")
        else:
            print(f"inputs normalised as the weights file says (the statistics of "
                  f"{net.meta.get('input_images', '?')} training images)")
    else:
        mean, std = channel_statistics(train_images)
        print(f"inputs normalised by the statistics of {len(train_images)} training images (the weights file "
              "does not say)")
    images, labels = (train_images, train_labels) if o.split == "train" else \
        read_split(net.spec, data_dir, "test", o.test_limit)
    if o.split == "test" and o.test_limit:
        images, labels = images[:o.test_limit], labels[:o.test_limit]
    error, top5, loss, confusion = evaluate(net, normalise(images, mean, std), labels, o.batch)
    if not math.isfinite(loss):
        raise Refused(f"{net.spec.name}: the loss on these weights is {loss:g}: the network's outputs are not "
                      "finite numbers, so no error can be measured; were these weights from a run that "
                      "diverged?", 3)
    line = f"error {100 * error:.2f}% ({int(round(error * len(labels)))} of {len(labels)})"
    if net.spec.classes > 5:
        line += f", top-5 error {100 * top5:.2f}% ({int(round(top5 * len(labels)))})"
    print(line + f", loss {loss:.10g}")
    print("confusion (a row for each true class): " + ";".join(",".join(map(str, r)) for r in confusion))


def main(arguments=None):
    parser = Parser(prog="resgen_torch.py", description="resgen's networks in PyTorch: export a binary's "
                    "weights as a state dict (and ONNX), or measure them.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    export_command = commands.add_parser("export", help="save the state dict (torch.save), and ONNX with --onnx")
    measure_command = commands.add_parser("evaluate", help="error, top-5 error, loss and confusion on a split")
    for command in (export_command, measure_command):
        command.add_argument("spec", help="the variant's YAML spec (checked by build/bin/resgen check)")
        command.add_argument("weights", help="its weights file (NAME train --save-weights FILE)")
    export_command.add_argument("output", help="where the state dict goes (.pt)")
    export_command.add_argument("--onnx", metavar="FILE", help="the network in evaluation as ONNX too")
    export_command.add_argument("--float32", action="store_true",
                                help="the ONNX model in float32 (default: float64, the weights' precision)")
    export_command.add_argument("--torchscript", metavar="FILE",
                                help="the network as TorchScript too, its normalisation inside: torch.jit.load(FILE) "
                                "runs it on raw images in any Python with PyTorch")
    export_command.add_argument("--torchvision", action="store_true",
                                help="OUT.pt is torchvision's state dict (for networks that are one of its "
                                "ResNets: torchvision.models.resnet50().load_state_dict(torch.load(OUT.pt)))")
    import_command = commands.add_parser("import-torchvision", help="weights of one of torchvision's ResNets "
                                         "as a binary's weights file")
    import_command.add_argument("spec", help="the network's spec (such as specs/resnet-50.yaml)")
    import_command.add_argument("source", help="torch.save(model.state_dict(), FILE) of torchvision's model")
    import_command.add_argument("output", help="the weights file to write (NAME evaluate --load-weights FILE)")
    import_command.add_argument("--fresh-classifier", action="store_true",
                                help="leave the classifier out, of any number of classes, for the binary's "
                                     "train --load-weights OUT --fresh-classifier to initialise (fine-tuning)")
    measure_command.add_argument("--data", metavar="DIR", help="data folder (default: the spec's)")
    measure_command.add_argument("--split", choices=["train", "test"], default="test")
    measure_command.add_argument("--train-limit", type=count, default=0, metavar="N",
                                 help="the run's --train-limit, for weights files that do not store their "
                                 "normalisation (written before resgen stored it)")
    measure_command.add_argument("--test-limit", type=count, default=0, metavar="N")
    measure_command.add_argument("--batch", type=count, default=256, metavar="B")
    o = parser.parse_args(arguments)
    try:
        if o.command == "import-torchvision":
            for what, path in (("the spec", o.spec), ("SOURCE", o.source)):
                if same_file(o.output, path):
                    raise Refused(f"{shown(o.output)}: OUTPUT and {what} name one file; writing one would "
                                  "destroy the other, so give another name")
            check_output(o.output)
            import_torchvision(o.spec, o.source, o.output, o.fresh_classifier)
            return 0
        if o.command == "export":
            # every output apart from every input and from each other,
            # before any work, as the binaries check theirs
            named = [("the spec", o.spec), ("the weights", o.weights), ("OUT", o.output)]
            if o.onnx:
                named.append(("--onnx", o.onnx))
            if o.torchscript:
                named.append(("--torchscript", o.torchscript))
            for i, (what, path) in enumerate(named[2:], 2):
                for other_what, other in named[:i]:
                    if same_file(path, other):
                        raise Refused(f"{shown(path)}: {what} and {other_what} name one file; writing one "
                                      "would destroy the other, so give another name")
                check_output(path)
        if o.command == "export" and o.torchvision and (o.onnx or o.torchscript):
            other = "--onnx" if o.onnx else "--torchscript"
            raise Refused(f"--torchvision writes torchvision's state dict alone, not {other}'s file; export "
                          f"{'ONNX' if o.onnx else 'TorchScript'} in another run, without --torchvision")
        net = load(o.spec, o.weights)
        if o.command == "export" and o.torchvision:
            export_torchvision(net, o.output)
        elif o.command == "export":
            if o.torchscript and not net.meta:
                raise Refused(f"{shown(o.weights)}: --torchscript needs weights that keep their input normalisation "
                              "(written by train, or a checkpoint; init's hold none)")
            export(net, o.output, o.onnx, o.float32)
            if o.torchscript:
                export_torchscript(net, o.spec, o.torchscript)
        else:
            measure(net, o)
    except Refused as error:
        print(f"resgen_torch: {error}", file=sys.stderr)
        return error.status
    except (OSError, ValueError, KeyError, TypeError, yaml.YAMLError) as error:
        print(f"resgen_torch: {shown(str(error))}", file=sys.stderr)
        return 2
    except MemoryError:
        print("resgen_torch: out of memory", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
