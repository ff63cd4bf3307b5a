#!/usr/bin/python3
"""State dicts of torchvision's resnet18(num_classes=10) as a user might be
handed them, for tests/test_torch_tool.c:

    state_dicts.py DIR MARKER

writes into DIR: good.pt (as torchvision saves it); code.pt, whose
entries include an object that, unpickled, creates MARKER; fc-transposed.pt
and conv1-permuted.pt (the right number of values in the wrong shape);
nan.pt (a NaN weight), negative-variance.pt (a running variance of -1),
list.pt (an entry that is a list) and integer.pt (a weight of integers)."""
import os
import sys

import torch
import torchvision


class RunsCode:
    """Unpickling it calls os.system: what a hostile weights file holds."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch '{self.marker}'",))


def main():
    folder, marker = sys.argv[1], sys.argv[2]
    torch.manual_seed(1)
    good = torchvision.models.resnet18(num_classes=10).state_dict()

    def save(name, change):
        state = dict(good)
        change(state)
        torch.save(state, os.path.join(folder, name))

    save("good.pt", lambda s: None)
    save("code.pt", lambda s: s.update({"zz_code": RunsCode(marker)}))
    save("fc-transposed.pt", lambda s: s.update({"fc.weight": s["fc.weight"].t().contiguous()}))
    save("conv1-permuted.pt", lambda s: s.update({"conv1.weight": s["conv1.weight"].permute(2, 3, 1, 0).contiguous()}))

    def nan(s):
        s["layer1.0.conv1.weight"] = s["layer1.0.conv1.weight"].clone()
        s["layer1.0.conv1.weight"][0, 0, 1, 1] = float("nan")
    save("nan.pt", nan)

    def negative(s):
        s["bn1.running_var"] = s["bn1.running_var"].clone()
        s["bn1.running_var"][3] = -1.0
    save("negative-variance.pt", negative)
    save("list.pt", lambda s: s.update({"fc.bias": s["fc.bias"].tolist()}))
    save("integer.pt", lambda s: s.update({"fc.bias": torch.zeros(10, dtype=torch.int64)}))


if __name__ == "__main__":
    main()
