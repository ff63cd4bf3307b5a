#!/usr/bin/python3
"""An independent implementation of resgen's networks in PyTorch, and the check
that runs binaries and this implementation side by side.

For each spec given, with its binaries: the f64 binary exports its seeded
initial weights (`init`) and runs five SGD steps on its first batch (`step
--steps 5 --dump`), dumping the input, labels, logits, loss, every group's
(stem, unit, head) output and input gradient, every parameter gradient and
the weights after the five steps, and the first batch's loss and logits in
evaluation (BN by its running statistics) with those weights. This file
builds the same network from the same YAML spec in float64, loads the same
weights, runs the same five steps with torch.optim.SGD, and compares all of
it. A spec with a "# set: KEY=VALUE..." line runs its steps with those
settings given to the binary as --set, and the reference applies them to
its own schedule and optimiser. Where an f32 binary is given too, its first forward pass on the same
weights is compared as well. A mismatch names the tensor and the unit.

    reference.py WORK_DIR SPEC=F64_BINARY[,F32_BINARY]...

With --ranks P, each spec comes with its f64 binary and that binary's Open
MPI flavour: the flavour runs the five steps under mpirun -np P, each rank
on its part of the first batch, and its weights after them (BN's running
statistics averaged over the ranks) and its first loss are compared with
this implementation computing BN over each part of the batch (over the
whole batch when the spec sets train.bn_sync), the loss over the whole.

    reference.py --ranks P WORK_DIR SPEC=F64_BINARY,MPI_F64_BINARY...

Exit status 0 when every spec matches, 1 otherwise.
"""
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torch.nn.functional as F
import yaml

# The spec, its graph and the weights files are read as the user's tool
# reads them (tools/pytorch/resgen_torch.py).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "pytorch"))
from resgen_nn import parameter_free  # noqa: E402
from resgen_torch import Graph, Spec, read_tensors  # noqa: E402

# Tolerances, all in one place: the norm of the difference over the norm of
# the float64 reference (at least FLOOR), per tensor.
# - f64 binary against float64 PyTorch: both round at 1e-16; sums in other
#   orders through a few dozen ops and five SGD steps stay near 1e-13
#   (measured), so 1e-9 passes any correct network and no wrong one.
# - f32 binary, first forward pass: float32 rounds at 6e-8 and a small net
#   loses a few dozen epsilons (measured 4e-6), so 1e-4. Its gradients and
#   later steps are not compared: on these tiny nets (batch 3, BN over a
#   dozen values) a ReLU input within float32 rounding of zero flips, which
#   moves gradients by percents and is amplified by every SGD step; the f64
#   comparison is the check of the arithmetic.
# - a bf16 network (net.precision): its f64 binary rounds the products'
#   operands to bf16 where this model does (Bf16Conv, Bf16Linear) and sums in
#   f64, so it meets the f64 tolerance (measured 6e-15): a rounding could flip
#   only where the two disagree at 1e-13 within 2^-9 of a tie. Its f32
#   binary's forward pass is another matter: its activations differ from
#   float64's at 1e-7, and each that lies that close to a halfway point
#   between two bf16 numbers rounds the other way, moving that operand by
#   2^-8 of itself, which BN over a dozen values amplifies: measured up to
#   3.7e-3, so 2e-2. That catches a wrong layout, transpose or operand (errors
#   of order 1), not the sums' bits: tests/test_bf16.c checks those against
#   the arithmetic's plain definition, and test_precision that every path
#   gives the same ones.
# FLOOR: gradients that are exactly zero (BN's beta ahead of another BN)
# compare in absolute terms instead of relative to their own rounding noise.
TOLERANCES = {"f64": 1e-9, "f32 forward": 1e-4, "bf16 f32 forward": 2e-2}
FLOOR = 1e-4
STEPS = 5

torch.set_default_dtype(torch.float64)


def mix(z):
    """splitmix64's finaliser on uint64 arrays (the binaries' dropout hash)."""
    with np.errstate(over="ignore"):
        z = z + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def dropout_mask(shape, rate, salt, seed, step, first):
    """The mask of a batch whose elements are counted from `first` (the
    batch's first image within a batch split across ranks)."""
    with np.errstate(over="ignore"):
        base = mix(mix(np.uint64(seed) ^ (np.uint64(step) << np.uint64(20))) + np.uint64(salt))
        draws = mix(base + np.arange(first, first + int(np.prod(shape)), dtype=np.uint64))
    uniform = (draws >> np.uint64(11)).astype(np.float64) * 2.0 ** -53
    return torch.from_numpy((uniform >= rate).astype(np.float64).reshape(shape))


def to_bf16(x):
    """x's values as a bf16 network's products take them: rounded to f32,
    then to bf16 (to nearest, ties to even), as the binaries round."""
    return x.float().bfloat16().double()


class Bf16Conv(torch.autograd.Function):
    """A convolution of a bf16 network (net.precision: bf16): each of its
    three products (the output, the input's gradient, the weights') takes
    its two operands rounded to bf16 (the input, the weights, the output's
    gradient) and sums their exact products, here in float64."""

    @staticmethod
    def forward(ctx, x, weight, stride, padding):
        x, weight = to_bf16(x), to_bf16(weight)
        ctx.save_for_backward(x, weight)
        ctx.stride, ctx.padding = stride, padding
        return F.conv2d(x, weight, stride=stride, padding=padding)

    @staticmethod
    def backward(ctx, dy):
        x, weight = ctx.saved_tensors
        dy = to_bf16(dy)
        dx = torch.nn.grad.conv2d_input(x.shape, weight, dy, stride=ctx.stride, padding=ctx.padding)
        dweight = torch.nn.grad.conv2d_weight(x, weight.shape, dy, stride=ctx.stride, padding=ctx.padding)
        return dx, dweight, None, None


class Bf16Linear(torch.autograd.Function):
    """The classifier's two products in a bf16 network, as Bf16Conv's; the
    bias and its gradient stay float64."""

    @staticmethod
    def forward(ctx, x, weight):
        x, weight = to_bf16(x), to_bf16(weight)
        ctx.save_for_backward(x, weight)
        return x @ weight.T

    @staticmethod
    def backward(ctx, dy):
        x, weight = ctx.saved_tensors
        dy = to_bf16(dy)
        return dy @ weight, dy.T @ x


class Network:
    def __init__(self, graph, weights):
        self.graph, self.spec = graph, graph.spec
        shapes = {}  # the weight tensors' shapes; the files hold them flat
        for op in graph.ops:
            if op["kind"] == "conv":
                shapes[op["name"] + "_weight"] = (graph.shapes[op["name"]][0],
                                                  graph.shapes[op["inputs"][0]][0], op["k"], op["k"])
            elif op["kind"] == "linear":
                shapes[op["name"] + "_weight"] = (graph.shapes[op["name"]][0],
                                                  graph.shapes[op["inputs"][0]][0])
        self.params, self.buffers = {}, {}
        for name, values in weights.items():
            tensor = torch.from_numpy(values.copy()).reshape(shapes.get(name, (-1,)))
            if name.endswith("_running_mean") or name.endswith("_running_var"):
                self.buffers[name] = tensor
            else:
                self.params[name] = tensor.requires_grad_(True)
        expected = {op["name"] + suffix for op in graph.ops for suffix in
                    {"conv": ["_weight"], "linear": ["_weight", "_bias"], "gated_add": ["_bias"],
                     "bn": ["_gamma", "_beta", "_running_mean", "_running_var"]}.get(op["kind"], [])}
        if expected != set(weights):
            raise ValueError(f"{self.spec.name}: the binary's tensors and this network's differ: "
                             f"{sorted(expected ^ set(weights))[:6]}")

    def forward(self, images, labels, step, keep, first_image=0, training=True):
        """Returns the loss and the logits; fills keep[group] with (input, output).
        first_image: where these images start in a batch split across ranks.
        training False: evaluation (BN by its running statistics, dropout
        scaling by 1 - rate)."""
        values = {"input": images}
        for op in self.graph.ops:
            x = [values[i] for i in op["inputs"]]
            name, kind = op["name"], op["kind"]
            if kind == "conv" and self.spec.precision == "bf16":
                y = Bf16Conv.apply(x[0], self.params[name + "_weight"], op["stride"], op["k"] // 2)
            elif kind == "conv":
                y = F.conv2d(x[0], self.params[name + "_weight"], stride=op["stride"],
                             padding=op["k"] // 2)
            elif kind == "bn":
                y = F.batch_norm(x[0], self.buffers[name + "_running_mean"],
                                 self.buffers[name + "_running_var"], self.params[name + "_gamma"],
                                 self.params[name + "_beta"], training, 0.1, 1e-5)
            elif kind == "dropout":
                shape = tuple(x[0].shape)
                y = x[0] * (dropout_mask(shape, op["rate"], op["salt"], self.spec.seed, step,
                                         first_image * int(np.prod(shape[1:])))
                            if training else 1 - op["rate"])
            elif kind == "linear" and self.spec.precision == "bf16":
                y = Bf16Linear.apply(x[0], self.params[name + "_weight"]) + self.params[name + "_bias"]
            elif kind == "linear":
                y = x[0] @ self.params[name + "_weight"].T + self.params[name + "_bias"]
            elif kind == "loss":
                y = F.softmax(x[0], 1)
                loss = F.cross_entropy(x[0], labels)
            else:
                y = parameter_free(op, x, self.graph, self.params.get(name + "_bias"))
            values[name] = y
        if keep is not None:
            for group, first, count in self.graph.groups:
                source = self.graph.ops[first]["inputs"][0]
                keep[group] = (values[source], values[self.graph.ops[first + count - 1]["name"]])
        return loss, values[self.graph.logits]


def relative(a, b):
    a, b = np.asarray(a, dtype=np.float64).ravel(), np.asarray(b, dtype=np.float64).ravel()
    if a.shape != b.shape:
        return float("inf")
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), FLOOR))


class Comparison:
    def __init__(self, spec_name):
        self.spec_name, self.failures = spec_name, []
        self.worst = {k: 0.0 for k in TOLERANCES}

    def __call__(self, what, kind, mine, reference):
        error = relative(mine, reference)
        self.worst[kind] = max(self.worst[kind], error)
        if not error <= TOLERANCES[kind]:
            self.failures.append(f"{self.spec_name} ({kind}): {what} differs from PyTorch by "
                                 f"{error:.3g} (tolerance {TOLERANCES[kind]:.0e})")


def settings(spec_path):
    """The spec's "# set: KEY=VALUE..." line: what the binary is given as
    --set, and what the reference applies to its Spec."""
    with open(spec_path) as f:
        for line in f:
            if line.startswith("# set: "):
                return line[len("# set: "):].split()
    return []


def apply_settings(spec, assignments):
    fields = {"lr.base": "lr_base", "momentum": "momentum", "weight_decay": "weight_decay",
              "lr.warmup.iterations": "warmup_iterations", "lr.gamma": "lr_gamma", "lr.steps": "lr_steps"}
    for assignment in assignments:
        key, value = assignment.split("=", 1)
        setattr(spec, fields[key], yaml.safe_load(value))
    return spec


def run_binary(binary, weights_path, dump_path, steps, assignments=()):
    subprocess.run([binary, "step", "--load-weights", weights_path, "--steps", str(steps),
                    "--dump", dump_path] + [a for s in assignments for a in ("--set", s)],
                   check=True, stdout=subprocess.DEVNULL)
    return read_tensors(dump_path)


def check(spec_path, binaries, work):
    assignments = settings(spec_path)
    spec = apply_settings(Spec(spec_path), assignments)
    f64, f32 = binaries[0], binaries[1] if len(binaries) > 1 else None
    weights_path = os.path.join(work, spec.name + ".weights")
    subprocess.run([f64, "init", "--save-weights", weights_path], check=True)
    weights = read_tensors(weights_path)
    dump = run_binary(f64, weights_path, os.path.join(work, spec.name + "-f64.dump"), STEPS, assignments)
    graph = Graph(spec)
    net = Network(graph, weights)
    n = len(dump["labels"])
    images = torch.from_numpy(dump["input"].reshape((n,) + spec.input))
    labels = torch.from_numpy(dump["labels"].astype(np.int64))
    optimiser = torch.optim.SGD(list(net.params.values()), lr=spec.learning_rate(0),
                                momentum=spec.momentum, weight_decay=spec.weight_decay)
    compare = Comparison(spec.name)
    first = {}
    images.requires_grad_(True)
    for step in range(STEPS):
        for group in optimiser.param_groups:
            group["lr"] = spec.learning_rate(step)
        optimiser.zero_grad()
        keep = {} if step == 0 else None
        loss, logits = net.forward(images, labels, step, keep)
        if step == 0:
            for source, _ in keep.values():
                if source is not images:
                    source.retain_grad()
            first = {"loss": [loss.item()], "logits": logits.detach().numpy().copy()}
            for group, (_, output) in keep.items():
                first[f"act/{group}"] = output.detach().numpy().copy()
        loss.backward()
        if step == 0:
            for name in first:
                compare(name, "f64", dump[name], first[name])
            for group, (source, _) in keep.items():
                gradient = images.grad if source is images else source.grad
                compare(f"{group} input gradient", "f64", dump[f"grad_in/{group}"], gradient.numpy())
            for name, p in net.params.items():
                compare(f"gradient of {name}", "f64", dump[f"grad/{name}"], p.grad.numpy())
        optimiser.step()
    for name, p in list(net.params.items()) + list(net.buffers.items()):
        compare(f"{name} after {STEPS} steps", "f64", dump[f"after/{name}"], p.detach().numpy())
    with torch.no_grad():  # the first batch evaluated with those weights
        loss, logits = net.forward(images, labels, STEPS, None, training=False)
    compare(f"loss in evaluation after {STEPS} steps", "f64", dump["eval/loss"], [loss.item()])
    compare(f"logits in evaluation after {STEPS} steps", "f64", dump["eval/logits"], logits.numpy())
    if f32:
        dump32 = run_binary(f32, weights_path, os.path.join(work, spec.name + "-f32.dump"), 1)
        kind = "bf16 f32 forward" if spec.precision == "bf16" else "f32 forward"
        compare("input", kind, dump32["input"], dump["input"])
        for name in first:
            what = f"{name[4:]} output" if name.startswith("act/") else name
            compare(what, kind, dump32[name], first[name])
    return compare


def check_ranks(spec_path, binaries, ranks, work):
    spec = Spec(spec_path)
    f64, mpi = binaries
    weights_path = os.path.join(work, spec.name + ".weights")
    subprocess.run([f64, "init", "--save-weights", weights_path], check=True)
    weights = read_tensors(weights_path)
    whole = run_binary(f64, weights_path, os.path.join(work, spec.name + "-whole.dump"), 1)
    dump_path = os.path.join(work, f"{spec.name}-{ranks}-ranks.dump")
    subprocess.run(["mpirun", "-np", str(ranks), "--oversubscribe", mpi, "step", "--load-weights",
                    weights_path, "--steps", str(STEPS), "--dump", dump_path],
                   check=True, stdout=subprocess.DEVNULL)
    dump = read_tensors(dump_path)
    graph = Graph(spec)
    net = Network(graph, weights)
    n = len(whole["labels"])
    images = torch.from_numpy(whole["input"].reshape((n,) + spec.input))
    labels = torch.from_numpy(whole["labels"].astype(np.int64))
    parts = 1 if spec.bn_sync else ranks
    size = n // parts
    optimiser = torch.optim.SGD(list(net.params.values()), lr=spec.learning_rate(0),
                                momentum=spec.momentum, weight_decay=spec.weight_decay)
    compare = Comparison(f"{spec.name} on {ranks} ranks")
    for step in range(STEPS):
        for group in optimiser.param_groups:
            group["lr"] = spec.learning_rate(step)
        optimiser.zero_grad()
        # each part from the same running statistics, which then average
        start, ends, loss = dict(net.buffers), [], 0
        for r in range(parts):
            net.buffers = {k: v.clone() for k, v in start.items()}
            part = slice(r * size, (r + 1) * size)
            part_loss, _ = net.forward(images[part], labels[part], step, None, r * size)
            loss = loss + part_loss * size / n
            ends.append(net.buffers)
        net.buffers = {k: sum(e[k] for e in ends) / parts for k in start}
        if step == 0:
            compare("loss", "f64", dump["loss"], [loss.item()])
        loss.backward()
        optimiser.step()
    for name, p in list(net.params.items()) + list(net.buffers.items()):
        compare(f"{name} after {STEPS} steps", "f64", dump[f"after/{name}"], p.detach().numpy())
    return compare


def main():
    arguments = sys.argv[1:]
    ranks = None
    if arguments[:1] == ["--ranks"] and len(arguments) > 1:
        ranks = int(arguments[1])
        arguments = arguments[2:]
    if len(arguments) < 2:
        print("usage: reference.py [--ranks P] WORK_DIR SPEC=F64_BINARY[,F32_BINARY or MPI_F64_BINARY]...",
              file=sys.stderr)
        return 2
    work = tempfile.mkdtemp(prefix="run-", dir=arguments[0])
    failed = passed = 0
    overall = {k: 0.0 for k in TOLERANCES}
    for pair in arguments[1:]:
        spec_path, binaries = pair.split("=", 1)
        if ranks:
            result = check_ranks(spec_path, binaries.split(","), ranks, work)
        else:
            result = check(spec_path, binaries.split(","), work)
        for k in overall:
            overall[k] = max(overall[k], result.worst[k])
        if result.failures:
            failed += 1
            print(f"FAIL {spec_path}")
            for line in result.failures[:12]:
                print("  " + line)
        else:
            passed += 1
    print("worst relative error against PyTorch: " +
          ", ".join(f"{k} {v:.2e} (tolerance {TOLERANCES[k]:.0e})" for k, v in overall.items()))
    print(f"reference: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
