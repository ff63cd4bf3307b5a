#!/usr/bin/python3
"""Writes the specs that the PyTorch check covers into a folder: every
ordering x every shortcut kind x every unit kind, at small, odd sizes
(batch 3, widths 3/5/7, inputs 1x28x28 and 3x32x32, both projections);
and in bf16 (net.precision) every ordering x every unit kind, the shortcut
kinds and both arithmetics in turn, the ImageNet stem once, and even
widths once.
Every spec is checked in f64; a third of them, spread so that every
ordering, shortcut and unit is among them, in f32 too: their names go to
FOLDER/f32.list. A file is rewritten only when its text changes, so make
rebuilds nothing that did not change.

    specs.py FOLDER
"""
import itertools
import os
import sys

ORDERINGS = ["original", "bn-after-add", "relu-before-add", "relu-only-preact", "full-preact"]
SHORTCUTS = {
    "identity": "",
    "scaling": "  scaling: {shortcut: 0.5, branch: 0.8}\n",
    "exclusive-gating": "  gating: {bias: -1}\n",
    "shortcut-gating": "  gating: {bias: -1}\n",
    "conv1x1": "",
    "dropout": "  dropout: {rate: 0.3}\n",
}
UNITS = {"basic": 14, "bottleneck": 20, "one-layer": 8}  # two units per stage
# The training recipes, in turn: the paper's warm-up and steps; a cosine
# over an 8-iteration run, so that the five steps checked each have their
# own rate; and a recipe changed at run time by the binary's --set, which
# reference.py reads from the "# set:" line and passes on.
RECIPES = [
    "  lr: {base: 0.1, warmup: {lr: 0.05, iterations: 2}}\n",
    "  iterations: 8\n  lr: {base: 0.1, schedule: cosine, warmup: {lr: 0.05, iterations: 1}}\n",
    "  lr: {base: 0.1, warmup: {lr: 0.05, iterations: 2}}\n"
    "# set: lr.base=0.07 momentum=0.5 weight_decay=0.001 lr.warmup.iterations=1 lr.steps=[3] lr.gamma=0.5\n",
]


def spec_text(about, name, shape, classes, net, recipe):
    """A check spec: synthetic data of shape and classes (6 training and 3
    test images), the net section's lines, batch 3 and the recipe."""
    return (f"# PyTorch check{about}\n"
            f"name: ref-{name}\n"
            f"data:\n  set: synthetic\n  shape: {shape}\n  classes: {classes}\n"
            f"  train_images: 6\n  test_images: 3\n"
            f"net:\n{net}"
            f"train:\n  batch: 3\n{recipe}")


def main():
    folder = sys.argv[1]
    os.makedirs(folder, exist_ok=True)
    f32 = []
    for index, (ordering, shortcut, unit) in enumerate(
            itertools.product(ORDERINGS, SHORTCUTS, UNITS)):
        shape = "[1, 28, 28]" if index % 2 else "[3, 32, 32]"
        projection = "zero-pad" if index % 3 == 0 else "conv1x1"
        shortcut_bn = "true" if index % 4 == 1 else "false"
        name = f"{ordering}-{shortcut}-{unit}"
        text = spec_text(f": {ordering}, {shortcut} shortcut, {unit} units.", name, shape, 5,
                         f"  unit: {unit}\n  ordering: {ordering}\n  depth: {UNITS[unit]}\n"
                         f"  widths: [3, 5, 7]\n  shortcut: {shortcut}\n{SHORTCUTS[shortcut]}"
                         f"  shortcut_bn: {shortcut_bn}\n  projection: {projection}\n",
                         RECIPES[index % len(RECIPES)])
        write(os.path.join(folder, name + ".yaml"), text)
        coordinates = (ORDERINGS.index(ordering), list(SHORTCUTS).index(shortcut),
                       list(UNITS).index(unit))
        if sum(coordinates) % 3 == 0:
            f32.append(name)
    # The ImageNet stem (7x7 stride 2, BN, ReLU, 3x3 stride-2 max pooling)
    # and units given per stage, four stages of their own counts: every
    # ordering, bottleneck units as Table 5's, one of them basic.
    for index, ordering in enumerate(ORDERINGS):
        unit = "basic" if index == 2 else "bottleneck"
        name = f"imagenet-{ordering}-{unit}"
        text = spec_text(f": the ImageNet stem, {ordering}, {unit} units in four stages.", name, "[3, 36, 36]", 6,
                         f"  unit: {unit}\n  ordering: {ordering}\n  stem: imagenet\n"
                         f"  stages: [1, 2, 1, 1]\n  widths: [4, 5, 7, 3]\n"
                         f"  shortcut_bn: {'true' if index % 2 == 0 else 'false'}\n",
                         RECIPES[index % len(RECIPES)])
        write(os.path.join(folder, name + ".yaml"), text)
        if index % 2 == 0:
            f32.append(name)
    # bf16: the products' operands rounded to bf16 (reference.py's Bf16Conv
    # and Bf16Linear), whichever the arithmetic, which an f64 build does
    # not follow (it sums in f64); the f32 binaries follow it.
    shortcuts = list(SHORTCUTS)
    for index, (ordering, unit) in enumerate(itertools.product(ORDERINGS, UNITS)):
        shortcut = shortcuts[index % len(shortcuts)]
        arithmetic = "pairs" if index % 2 else "tiles"
        name = f"bf16-{ordering}-{unit}"
        text = spec_text(f" in bf16: {ordering}, {shortcut} shortcut, {unit} units, the {arithmetic} order.", name,
                         "[1, 28, 28]" if index % 2 else "[3, 32, 32]", 5,
                         f"  unit: {unit}\n  ordering: {ordering}\n  depth: {UNITS[unit]}\n"
                         f"  widths: [3, 5, 7]\n  shortcut: {shortcut}\n{SHORTCUTS[shortcut]}"
                         f"  projection: {'zero-pad' if index % 3 == 0 else 'conv1x1'}\n"
                         f"  precision: bf16\n  arithmetic: {arithmetic}\n",
                         RECIPES[index % len(RECIPES)])
        write(os.path.join(folder, name + ".yaml"), text)
        if index % 3 == 0:
            f32.append(name)
    text = spec_text(" in bf16: the ImageNet stem, full-preact, bottleneck units in four stages.", "bf16-imagenet",
                     "[3, 36, 36]", 6,
                     "  unit: bottleneck\n  ordering: full-preact\n  stem: imagenet\n"
                     "  stages: [1, 2, 1, 1]\n  widths: [4, 5, 7, 3]\n  precision: bf16\n", RECIPES[0])
    write(os.path.join(folder, "bf16-imagenet.yaml"), text)
    f32.append("bf16-imagenet")
    # even widths at 32, 16 and 8 columns: the convolutions whose columns
    # AVX-512's emulation reads in place from the image (bf16_reads_image),
    # at 8 under masks (no border beside the rows)
    text = spec_text(" in bf16: even widths, whose columns the emulation reads in place.", "bf16-even-widths",
                     "[2, 32, 32]", 5,
                     "  unit: basic\n  ordering: full-preact\n  depth: 14\n"
                     "  widths: [4, 6, 8]\n  shortcut: identity\n  projection: conv1x1\n"
                     "  precision: bf16\n  arithmetic: tiles\n", RECIPES[1])
    write(os.path.join(folder, "bf16-even-widths.yaml"), text)
    f32.append("bf16-even-widths")
    write(os.path.join(folder, "f32.list"), "\n".join(f32) + "\n")


def write(path, text):
    if not os.path.exists(path) or open(path).read() != text:
        with open(path, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
