#!/usr/bin/python3
"""make bench's reference: the same network, from the same spec and the same
initial weights, trained by PyTorch (float32, CPU) on the same machine in the
same run, so that the binary's speed can be read as a ratio (tests/run-bench
takes it).

    bench.py SPEC BINARY [--batch B] [--steps S] [--layout channels-last|nchw]

The layout is the activations' and the convolution weights' in memory. PyTorch
computes the same either way; on its CPU backend (oneDNN) channels-last, the
channels of a pixel side by side, trained the paper's networks faster, in 13
of 15 alternating pairs (the README's Speed section), so it is the default.

A bf16 spec (net.precision: bf16) trains under torch.autocast("cpu",
dtype=torch.bfloat16), what a PyTorch user picks for bf16 mixed precision:
its convolutions and linear layers in bf16, the rest and the weights in
float32. Its bf16 convolutions are fast only where oneDNN has bf16 kernels
for the processor, which takes AVX-512 (avx512f, avx512bw, avx512vl,
avx512dq): without it, on an AMD Zen 3, one 3x3 convolution ran at 0.9
GFLOP/s under autocast against 41.4 in float32, and a round would take
hours. There the script says so in its one line and times nothing
(tests/run-bench reads such a row as not timed).
"""
import argparse
import os
import resource
import tempfile
import time

import torch

import reference


# what oneDNN's bf16 convolutions need of the processor (its avx512_core)
BF16_NEEDS = ("avx512f", "avx512bw", "avx512vl", "avx512dq")


def missing_for_bf16(cpuinfo="/proc/cpuinfo"):
    """The flags of BF16_NEEDS this processor lacks (none where it cannot tell)."""
    try:
        with open(cpuinfo) as f:
            flags = next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), None)
    except OSError:
        return []
    return [] if flags is None else [flag for flag in BF16_NEEDS if flag not in flags]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("spec")
    parser.add_argument("binary")
    parser.add_argument("--batch", type=int, default=128)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--layout", choices=("channels-last", "nchw"), default="channels-last")
    args = parser.parse_args()
    layout = torch.channels_last if args.layout == "channels-last" else torch.contiguous_format
    spec_path, binary = args.spec, args.binary
    batch, steps = args.batch, args.steps
    threads = int(os.environ.get("OMP_NUM_THREADS", os.cpu_count() or 2))
    torch.set_num_threads(threads)
    spec = reference.Spec(spec_path)
    bf16 = spec.precision == "bf16"
    spec.precision = "f32"  # PyTorch's own convolutions; autocast makes them bf16
    missing = missing_for_bf16() if bf16 else []
    if missing:
        print(f"PyTorch {torch.__version__}, bf16 autocast: not timed: this processor lacks "
              f"{', '.join(missing)}, without which oneDNN has no bf16 convolutions and PyTorch "
              f"runs them far slower than in float32 (47 times on one 3x3 convolution on an AMD Zen 3)")
        return
    with tempfile.TemporaryDirectory() as work:
        path = os.path.join(work, "weights")
        reference.subprocess.run([binary, "init", "--save-weights", path], check=True)
        weights = reference.read_tensors(path)
    net = reference.Network(reference.Graph(spec), weights)
    for table in (net.params, net.buffers):
        for name, tensor in table.items():
            tensor = tensor.detach().float()
            if tensor.dim() == 4:  # a convolution's weights
                tensor = tensor.contiguous(memory_format=layout)
            table[name] = tensor.requires_grad_(table is net.params)
    images = torch.randn((batch,) + spec.input, dtype=torch.float32).contiguous(memory_format=layout)
    labels = torch.randint(0, spec.classes, (batch,))
    optimiser = torch.optim.SGD(list(net.params.values()), lr=0.01, momentum=0.9,
                                weight_decay=0.0001)
    elapsed = 0.0
    for step in range(-2, steps):  # two warm-up steps, not timed
        start = time.perf_counter()
        optimiser.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss, _ = net.forward(images, labels, 0, None)
        loss.backward()
        optimiser.step()
        if step >= 0:
            elapsed += time.perf_counter() - start
    theirs = batch * steps / elapsed
    their_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"PyTorch {torch.__version__}, {'bf16 autocast' if bf16 else 'float32'}, {args.layout}, batch {batch}, {threads} threads, {steps} timed "
          f"steps: {1e3 * elapsed / steps:.1f} ms/step, {theirs:.1f} images/s, "
          f"peak RSS {their_rss:.0f} MiB")


if __name__ == "__main__":
    main()
