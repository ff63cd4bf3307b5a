#!/usr/bin/python3
"""resgen's ResNet-50 against torchvision's resnet50, the anchor of the
ImageNet half: the same network, written by others.

1. The f64 binary's seeded weights go into torchvision's resnet50 (in
   float64) by tools/pytorch/resgen_torch.py's names; both run STEPS SGD
   steps on the binary's first batch, and the loss, the logits, every
   parameter's gradient, the weights and BN's statistics after the steps,
   and the batch in evaluation after them are compared (tolerance as
   reference.py's f64).
2. The f32 binary trains, and its weights (after one more step, whose
   evaluation of the batch it dumps) are exported with resgen_torch.py
   export --torchvision; a Python started outside the repository loads the
   .pt into torchvision.models.resnet50() with load_state_dict as it is,
   and its float32 logits in evaluation must agree with the binary's.
3. The other way: torchvision's own resnet50 weights (torch.save of its
   state_dict) go through resgen_torch.py import-torchvision into the f64
   binary, whose first forward pass must give torchvision's logits.

    torchvision_check.py WORK_DIR SPEC F64_BINARY F32_BINARY

Exit status 0 when all agree, 1 otherwise.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torch.nn.functional as F
import torchvision

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "pytorch"))
from resgen_torch import Graph, Spec, read_tensors, torchvision_names, write_tensors  # noqa: E402
from reference import relative, run_binary  # noqa: E402  (the PyTorch check's measure and step dump)

TOOL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "pytorch", "resgen_torch.py")
# f64: as reference.py's. f32: float32 rounds at 6e-8; 50 layers of sums in
# another order than torchvision's (measured below 1e-6, which the issue
# asks for).
F64, F32 = 1e-9, 1e-6
STEPS = 2


class Comparison:
    def __init__(self):
        self.failures, self.worst = [], {}

    def __call__(self, what, tolerance, mine, theirs):
        error = relative(mine, theirs)
        self.worst[tolerance] = max(self.worst.get(tolerance, 0.0), error)
        if not error <= tolerance:
            self.failures.append(f"{what} differs from torchvision by {error:.3g} (tolerance {tolerance:.0e})")


def resnet(graph, dtype):
    depth = graph.spec.depth
    return getattr(torchvision.models, f"resnet{depth}")(num_classes=graph.spec.classes).to(dtype)


def load(model, names, tensors, prefix=""):
    state = model.state_dict()
    for name, key in names.items():
        state[key] = torch.from_numpy(tensors[prefix + name].copy()).reshape(state[key].shape).to(state[key].dtype)
    model.load_state_dict(state)


def float64_steps(graph, names, f64, work, compare):
    spec = graph.spec
    weights = os.path.join(work, "init.weights")
    subprocess.run([f64, "init", "--save-weights", weights], check=True, stdout=subprocess.DEVNULL)
    dump = run_binary(f64, weights, os.path.join(work, "f64.dump"), STEPS)
    model = resnet(graph, torch.float64)
    load(model, names, read_tensors(weights))
    model.train()
    n = len(dump["labels"])
    images = torch.from_numpy(dump["input"].reshape((n,) + spec.input))
    labels = torch.from_numpy(dump["labels"].astype(np.int64))
    optimiser = torch.optim.SGD(model.parameters(), lr=spec.learning_rate(0), momentum=spec.momentum,
                                weight_decay=spec.weight_decay)
    parameters = dict(model.named_parameters())
    for step in range(STEPS):
        for group in optimiser.param_groups:
            group["lr"] = spec.learning_rate(step)
        optimiser.zero_grad()
        logits = model(images)
        loss = F.cross_entropy(logits, labels)
        loss.backward()
        if step == 0:
            compare("loss", F64, dump["loss"], [loss.item()])
            compare("logits", F64, dump["logits"], logits.detach().numpy())
            for name, key in names.items():
                if key in parameters:
                    compare(f"gradient of {key} ({name})", F64, dump[f"grad/{name}"], parameters[key].grad.numpy())
        optimiser.step()
    state = model.state_dict()
    for name, key in names.items():
        compare(f"{key} after {STEPS} steps", F64, dump[f"after/{name}"], state[key].numpy())
    model.eval()
    with torch.no_grad():
        logits = model(images)
    compare(f"logits in evaluation after {STEPS} steps", F64, dump["eval/logits"], logits.numpy())
    compare(f"loss in evaluation after {STEPS} steps", F64, dump["eval/loss"],
            [F.cross_entropy(logits, labels).item()])


# Run by a Python whose working folder is outside the repository and whose
# path does not see it: torch and torchvision alone.
OUTSIDE = """
import sys, numpy, torch, torchvision
model = torchvision.models.resnet{depth}(num_classes={classes})
model.load_state_dict(torch.load(sys.argv[1], weights_only=True))
model.eval()
images = torch.from_numpy(numpy.load(sys.argv[2])).float()
with torch.no_grad():
    numpy.save(sys.argv[3], model(images).double().numpy())
"""


def float32_export(graph, spec_path, f32, work, compare):
    spec = graph.spec
    trained = os.path.join(work, "trained.weights")
    subprocess.run([f32, "train", "--iterations", "3", "--save-weights", trained], check=True,
                   stdout=subprocess.DEVNULL)
    dump = run_binary(f32, trained, os.path.join(work, "f32.dump"), 1)
    # the weights the dump's evaluation used, with the run's normalisation
    tensors = read_tensors(trained)
    after = {name: dump["after/" + name] for name in tensors if not name.startswith("meta/")}
    after.update({name: values for name, values in tensors.items() if name.startswith("meta/")})
    stepped, exported = os.path.join(work, "stepped.weights"), os.path.join(work, "resnet.pt")
    write_tensors(stepped, after)
    subprocess.run([sys.executable, TOOL, "export", spec_path, stepped, exported, "--torchvision"], check=True,
                   stdout=subprocess.DEVNULL)
    n = len(dump["labels"])
    images, logits = os.path.join(work, "images.npy"), os.path.join(work, "logits.npy")
    np.save(images, dump["input"].reshape((n,) + spec.input))
    outside = tempfile.mkdtemp(prefix="outside-")
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    subprocess.run([sys.executable, "-c", OUTSIDE.format(depth=spec.depth, classes=spec.classes),
                    exported, images, logits], check=True, cwd=outside, env=environment)
    os.rmdir(outside)
    compare("float32 logits in evaluation of the exported .pt", F32, dump["eval/logits"], np.load(logits))


def torchvision_import(graph, spec_path, f64, work, compare):
    spec = graph.spec
    torch.manual_seed(5)
    model = resnet(graph, torch.float32)
    # BN's statistics as a trained model's, not torch's initial 0 and 1
    for module in model.modules():
        if isinstance(module, torch.nn.BatchNorm2d):
            module.running_mean.uniform_(-0.5, 0.5)
            module.running_var.uniform_(0.5, 2)
    source, weights = os.path.join(work, "torchvision.pt"), os.path.join(work, "imported.weights")
    torch.save(model.state_dict(), source)
    subprocess.run([sys.executable, TOOL, "import-torchvision", spec_path, source, weights], check=True,
                   stdout=subprocess.DEVNULL)
    dump = run_binary(f64, weights, os.path.join(work, "imported.dump"), 1)
    n = len(dump["labels"])
    model = model.double().train()
    with torch.no_grad():
        logits = model(torch.from_numpy(dump["input"].reshape((n,) + spec.input)))
    compare("logits of torchvision's weights imported", F64, dump["logits"], logits.numpy())


def main():
    if len(sys.argv) != 5:
        print("usage: torchvision_check.py WORK_DIR SPEC F64_BINARY F32_BINARY", file=sys.stderr)
        return 2
    work = os.path.abspath(tempfile.mkdtemp(prefix="torchvision-", dir=sys.argv[1]))
    spec_path, f64, f32 = sys.argv[2:]
    torch.set_num_threads(1)  # beside the binaries on a shared machine
    graph = Graph(Spec(spec_path))
    names = torchvision_names(graph)
    compare = Comparison()
    float64_steps(graph, names, f64, work, compare)
    float32_export(graph, spec_path, f32, work, compare)
    torchvision_import(graph, spec_path, f64, work, compare)
    for line in compare.failures[:12]:
        print("  " + line)
    print(f"torchvision check of {graph.spec.name} (torchvision.models.resnet{graph.spec.depth}): worst relative "
          "error " + ", ".join(f"{v:.2e} (tolerance {k:.0e})" for k, v in sorted(compare.worst.items())) +
          f"; {'FAILED' if compare.failures else 'passed'}")
    return 1 if compare.failures else 0


if __name__ == "__main__":
    sys.exit(main())
