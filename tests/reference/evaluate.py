#!/usr/bin/python3
"""The binaries' evaluate command and the PyTorch export against PyTorch.

A network trained on real Fashion-MNIST for a few steps exports its
weights; the f64 binary's `evaluate` measures them on test images, and so
does PyTorch through tools/pytorch/resgen_torch.py (the module built from
the spec, the weights loaded, the images read and normalised in Python):
the error and top-5 error counts and the confusion matrix must be equal,
the loss equal to the digits printed; each image's row of
`evaluate --predictions` (label, prediction, the softmax of the logits)
equal to that of the exported model (the .pt's state dict in a fresh
module, the images normalised by the .pt's stored statistics alone) to
1e-9; the run's checkpoint, given to `evaluate` as its weights, measures
as the weights file does, with the normalisation the weights carry (the
run's --train-limit, which evaluate then refuses as changing nothing). The export: the state
dict gives the loaded module's logits, the .pt and the ONNX metadata hold
the normalisation (the statistics PyTorch computes over the run's
training images, to 1e-12: the sums' order differs) and the class names, and the ONNX files (float64, and
float32 with --float32) pass onnx's checker with inputs of their type. The
TorchScript export, loaded by a Python started outside the repository,
gives the first 100 test images' probabilities of `evaluate --predictions`
from their raw pixels, to 1e-6, with the class names.

    evaluate.py WORK_DIR SPEC F64_BINARY

Exit status 0 when all of it holds, 1 otherwise.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "pytorch"))
import resgen_torch  # noqa: E402

TRAIN_LIMIT, TEST_LIMIT, SCRIPTED = 2000, 1500, 100
# What a user of the TorchScript export runs: torch alone, outside the
# repository (argv: the module, raw images as .npy, where the
# probabilities go; the class names beside them as .json).
OUTSIDE = """
import json, sys, numpy, torch
files = {"class_names.json": ""}
model = torch.jit.load(sys.argv[1], _extra_files=files)
with torch.no_grad():
    probabilities = model(torch.from_numpy(numpy.load(sys.argv[2]))).softmax(1)
numpy.save(sys.argv[3], probabilities.numpy())
json.dump(json.loads(files["class_names.json"]), open(sys.argv[3] + ".json", "w"))
"""
FASHION_CLASSES = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag",
                   "Ankle boot"]


def main():
    if len(sys.argv) != 4:
        print("usage: evaluate.py WORK_DIR SPEC F64_BINARY", file=sys.stderr)
        return 2
    work = os.path.abspath(tempfile.mkdtemp(prefix="evaluate-", dir=sys.argv[1]))
    spec_path, binary = sys.argv[2], sys.argv[3]
    weights = os.path.join(work, "trained.weights")
    checkpoint = os.path.join(work, "trained.ckpt")
    confusion_path = os.path.join(work, "confusion.csv")
    predictions_path = os.path.join(work, "predictions.csv")
    limits = ["--train-limit", str(TRAIN_LIMIT)]
    subprocess.run([binary, "train", "--iterations", "30", "--eval-every", "30", "--save-weights", weights,
                    "--checkpoint", checkpoint] + limits, check=True, stdout=subprocess.DEVNULL)
    # the weights keep the run's normalisation: evaluate needs no --train-limit, and refuses one
    printed = subprocess.run([binary, "evaluate", "--load-weights", weights, "--test-limit", str(TEST_LIMIT),
                              "--confusion", confusion_path, "--predictions", predictions_path],
                             check=True, stdout=subprocess.PIPE, text=True).stdout
    from_checkpoint = subprocess.run([binary, "evaluate", "--load-weights", checkpoint, "--test-limit",
                                      str(TEST_LIMIT)], check=True, stdout=subprocess.PIPE, text=True).stdout
    with_limit = subprocess.run([binary, "evaluate", "--load-weights", weights, "--test-limit", str(TEST_LIMIT)]
                                + limits, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    found = re.search(r"^error [0-9.]+% \((\d+) of (\d+)\), top-5 error [0-9.]+% \((\d+)\), loss (\S+)$",
                      printed, re.M)
    if not found:
        print(f"evaluate printed no line of error, top-5 error and loss:\n{printed}")
        return 1
    errors, images, top5, loss = int(found[1]), int(found[2]), int(found[3]), float(found[4])
    with open(confusion_path) as file:
        confusion_header = file.readline().strip()
    binary_confusion = np.loadtxt(confusion_path, delimiter=",", skiprows=1, dtype=np.int64,
                                  usecols=range(1, len(FASHION_CLASSES) + 1))

    net = resgen_torch.load(spec_path, weights)
    train_images, _ = resgen_torch.read_split(net.spec, net.spec.data_dir, "train")
    mean, std = resgen_torch.channel_statistics(train_images[:TRAIN_LIMIT])
    test_images, test_labels = resgen_torch.read_split(net.spec, net.spec.data_dir, "test")
    inputs = resgen_torch.normalise(test_images[:TEST_LIMIT], mean, std)
    labels = test_labels[:TEST_LIMIT]
    error, top5_error, torch_loss, confusion = resgen_torch.evaluate(net, inputs, labels)

    failures = []
    def expect(what, mine, theirs):
        if mine != theirs:
            failures.append(f"{what}: the binary's evaluate {mine}, PyTorch {theirs}")
    expect("images", images, len(labels))
    expect("errors", errors, int(round(error * len(labels))))
    expect("top-5 errors", top5, int(round(top5_error * len(labels))))
    expect("confusion matrix", binary_confusion.tolist(), confusion.tolist())
    if not abs(loss - torch_loss) <= 1e-9 * abs(torch_loss):  # printed to 10 digits
        failures.append(f"loss: the binary's evaluate {loss!r}, PyTorch {torch_loss!r}")
    if errors == 0 or errors == images:
        failures.append(f"{errors} errors of {images}: the check needs a network that is neither")
    measured = re.compile(r"^error .*$", re.M)
    expect("the checkpoint's evaluation", measured.findall(from_checkpoint), measured.findall(printed))
    expect("evaluate given --train-limit", (with_limit.returncode, with_limit.stderr),
           (2, f"fashion-tiny: --train-limit: {weights} keeps the normalisation it was trained with "
               f"({TRAIN_LIMIT} training images), so the limit would change nothing on the test split; leave it "
               "out\n"))
    expect("the training's normalisation, in evaluate's words", re.search(r"inputs normalised by the (\d+) training "
           r"images' channel statistics, as stored with the weights", printed)[1], str(TRAIN_LIMIT))
    expect("the confusion matrix's header", confusion_header, "true\\predicted," + ",".join(FASHION_CLASSES))

    exported, onnx_path = os.path.join(work, "trained.pt"), os.path.join(work, "trained.onnx")
    onnx32_path = os.path.join(work, "trained32.onnx")
    printed_export = subprocess.run(["/usr/bin/python3", resgen_torch.__file__, "export", spec_path, weights,
                                     exported, "--onnx", onnx_path], check=True, stdout=subprocess.PIPE,
                                    text=True).stdout
    printed_export += subprocess.run(["/usr/bin/python3", resgen_torch.__file__, "export", spec_path, weights,
                                      os.path.join(work, "again.pt"), "--onnx", onnx32_path, "--float32"],
                                     check=True, stdout=subprocess.PIPE, text=True).stdout
    # the export this check wrote above, so trusted: its metadata's floats
    # are more than PyTorch 1.13's weights-only reader takes
    saved = torch.load(exported)
    fresh = resgen_torch.network(resgen_torch.Graph(resgen_torch.Spec(spec_path)))
    fresh.load_state_dict(saved["state_dict"])
    fresh.eval()
    with torch.no_grad():
        same = torch.equal(fresh(inputs[:64]), net(inputs[:64]))
    if not same:
        failures.append("the exported state dict, loaded into a fresh module, gives other logits")
    stored_mean, stored_std = np.array(saved["input_mean"]), np.array(saved["input_std"])
    # the binary and numpy sum 1.6 million pixels in other orders: equal to about 1e-13
    if not (np.abs(stored_mean - mean).max() <= 1e-12 and np.abs(stored_std - std).max() <= 1e-12):
        failures.append(f"the .pt's normalisation {saved['input_mean']}, {saved['input_std']} is not the training "
                        f"images' {mean.tolist()}, {std.tolist()}")
    expect("the .pt's images of the normalisation", saved["input_images"], TRAIN_LIMIT)
    expect("the .pt's class names", saved["class_names"], FASHION_CLASSES)
    import onnx
    for path, elem_type, word in ((onnx_path, onnx.TensorProto.DOUBLE, "float64"),
                                  (onnx32_path, onnx.TensorProto.FLOAT, "float32")):
        model = onnx.load(path)
        onnx.checker.check_model(model)
        props = {p.key: p.value for p in model.metadata_props}
        expect(f"{word} ONNX input type", model.graph.input[0].type.tensor_type.elem_type, elem_type)
        expect(f"{word} ONNX metadata's class names", json.loads(props.get("class_names", "null")), FASHION_CLASSES)
        expect(f"{word} ONNX metadata's mean", json.loads(props.get("input_mean", "null")), saved["input_mean"])
        expect(f"{word} ONNX metadata's deviation", json.loads(props.get("input_std", "null")), saved["input_std"])
        if f"ONNX in {word}, checked" not in printed_export:
            failures.append(f"the {word} ONNX export did not say so: {printed_export!r}")

    with open(predictions_path) as file:
        header = file.readline().strip()
    expect("the predictions' header", header, "image,label,predicted," + ",".join(FASHION_CLASSES))
    import csv
    expect("the predictions' header as a CSV reader takes it", next(csv.reader([header]))[3:], FASHION_CLASSES)
    rows = np.loadtxt(predictions_path, delimiter=",", skiprows=1)
    # the exported model alone: its state dict, its stored normalisation
    stored_inputs = resgen_torch.normalise(test_images[:TEST_LIMIT], stored_mean, stored_std)
    with torch.no_grad():
        probabilities = torch.cat([torch.softmax(fresh(stored_inputs[start:start + 256]), 1)
                                   for start in range(0, len(labels), 256)]).numpy()
    expect("the predictions' indices", rows[:, 0].astype(int).tolist(), list(range(len(labels))))
    expect("the predictions' labels", rows[:, 1].astype(int).tolist(), labels.tolist())
    expect("the predicted classes", rows[:, 2].astype(int).tolist(), probabilities.argmax(1).tolist())
    worst = float(np.abs(rows[:, 3:] - probabilities).max())
    if not worst <= 1e-9:
        failures.append(f"the predictions' probabilities differ from PyTorch's softmax by up to {worst:.3g}")

    # The TorchScript export in a Python started outside the repository,
    # with no path to it: raw test images in, the binary's predictions out.
    scripted, raw, loaded = (os.path.join(work, name) for name in ("trained.ts", "raw.npy", "scripted.npy"))
    subprocess.run(["/usr/bin/python3", resgen_torch.__file__, "export", spec_path, weights,
                    os.path.join(work, "third.pt"), "--torchscript", scripted], check=True, stdout=subprocess.DEVNULL)
    np.save(raw, test_images[:SCRIPTED])
    outside = tempfile.mkdtemp(prefix="outside-")
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    subprocess.run(["/usr/bin/python3", "-c", OUTSIDE, scripted, raw, loaded], check=True, cwd=outside,
                   env=environment)
    os.rmdir(outside)
    with open(loaded + ".json") as file:
        expect("the TorchScript file's class names", json.load(file), FASHION_CLASSES)
    # fed torchvision's usual ToTensor + Normalize, the module refuses in
    # one line rather than answer on images normalised twice
    model = torch.jit.load(scripted)
    for kind, batch in (("ToTensor's 0..1", test_images[:2] / 255.0),
                        ("Normalize's", (test_images[:2] / 255.0 - 0.5) / 0.25)):
        try:
            model(torch.from_numpy(batch))
            failures.append(f"the TorchScript module answered on images as {kind}")
        except torch.jit.Error as e:
            if "feed PILToTensor's output" not in str(e):
                failures.append(f"the TorchScript module refused {kind} images saying {str(e)[-300:]!r}")
    scripted_worst = float(np.abs(np.load(loaded) - rows[:SCRIPTED, 3:]).max())
    if not scripted_worst <= 1e-6:
        failures.append(f"the TorchScript module's probabilities differ from evaluate --predictions by up to "
                        f"{scripted_worst:.3g}")


    for line in failures:
        print("FAIL " + line)
    print(f"evaluate and export against PyTorch: {images} test images, {errors} errors, top-5 {top5}, "
          f"loss {loss} (PyTorch {torch_loss:.10g}); predictions within {worst:.3g} of PyTorch's softmax; "
          f"the TorchScript export's within {scripted_worst:.3g} on {SCRIPTED} images, outside the repository")
    print(f"evaluate: {0 if failures else 1} passed, {1 if failures else 0} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
