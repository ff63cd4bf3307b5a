#!/usr/bin/python3
"""Checks the names in evaluate's CSV files and in the exports against the
folder they came from, read back as a user reads them (Python's csv
module, torch.load, onnx, torch.jit.load): the predictions name each image
by its path under the folder, and every output names each class by its
folder's name (a spreadsheet's formula, '=...', '+...', '@...', quoted
with a ' before it in CSV). Prints what differs and exits 1, or prints
what it checked.

    check_names.py DIR PREDICTIONS.csv CONFUSION.csv EXPORT.pt EXPORT.onnx EXPORT.ts
"""
import csv
import json
import os
import sys


def in_csv(name):
    return "'" + name if name[:1] in ("=", "+", "-", "@", "\t", "\r") else name


def main():
    folder, predictions, confusion, state, onnx_path, script = sys.argv[1:]
    classes = sorted(os.listdir(os.path.join(folder, "train")))
    shown = [in_csv(c) for c in classes]
    failures = []

    def expect(what, got, want):
        if got != want:
            failures.append(f"{what}: {got!r}, not {want!r}")

    with open(predictions, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    expect("the predictions' header", rows[0], ["image", "label", "predicted"] + shown)
    images = sorted(os.path.join("val", c, name) for c in classes
                    for name in os.listdir(os.path.join(folder, "val", c)))
    expect("the predictions' images", sorted(row[0] for row in rows[1:]), images)
    for row in rows[1:]:
        expect(f"{row[0]!r}'s label", classes[int(row[1])], row[0].split("/")[1])
        expect(f"{row[0]!r}'s columns", len(row), 3 + len(classes))
    with open(confusion, newline="", encoding="utf-8") as f:
        matrix = list(csv.reader(f))
    expect("the confusion matrix's header", matrix[0], ["true\\predicted"] + shown)
    expect("the confusion matrix's rows", [row[0] for row in matrix[1:]], shown)
    expect("the confusion matrix's images", sum(int(v) for row in matrix[1:] for v in row[1:]), len(images))

    import onnx
    import torch
    expect("the state dict's class names", torch.load(state)["class_names"], classes)
    props = {p.key: p.value for p in onnx.load(onnx_path).metadata_props}
    expect("the ONNX metadata's class names", json.loads(props["class_names"]), classes)
    extra = {"class_names.json": ""}
    torch.jit.load(script, _extra_files=extra)
    expect("the TorchScript's class_names.json", json.loads(extra["class_names.json"]), classes)
    if failures:
        print("\n".join(failures))
        sys.exit(1)
    print(f"{len(classes)} class names and {len(images)} image paths read back from the predictions, the "
          "confusion matrix, the state dict, ONNX's metadata and TorchScript's class_names.json")


if __name__ == "__main__":
    main()
