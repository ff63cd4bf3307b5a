#!/usr/bin/python3
"""Fuzzes resgen_torch.py's weights reader (read_tensors) against the
binaries' (runtime/run/tensor_file.c, through tensor_check): mutated weights
files must be read or refused with one line (resgen_torch.Refused), never
a traceback, and both readers must agree on every file, but for what only
the Python reader checks of the values (a NaN, an infinity, a negative
running variance) and of the names (a tensor twice), which the binaries
check as they load weights (runtime/run/state.c).

    fuzz_weights.py SECONDS TENSOR_CHECK WORK_DIR SEED_FILE...
"""
import os
import random
import struct
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "pytorch"))
import resgen_torch  # noqa: E402

EXTREMES = [0, 1, 2, 255, 256, 2**31 - 1, 2**31, 2**32 - 1]
EXTREMES_64 = EXTREMES + [2**32, 2**62, 2**63, 2**64 - 1]
VALUES = [float("nan"), float("inf"), -float("inf"), -1.0, 3e38, 1e308, -0.0]
CHECKED_BY_THE_LOADER = ("is NaN", "is infinite", "appears twice", "a running variance is never negative")


def records(data):
    """The offsets of each tensor's name length and value count, as far as
    the file can be parsed."""
    at, found = 12, []
    (count,) = struct.unpack_from("<I", data, 8)
    for _ in range(min(count, 10000)):
        if at + 4 > len(data):
            break
        (length,) = struct.unpack_from("<I", data, at)
        if at + 12 + length > len(data):
            break
        (values,) = struct.unpack_from("<Q", data, at + 4 + length)
        found.append((at, at + 4 + length, at + 12 + length, values))
        at += 12 + length + 8 * values
    return found


def mutate(data, rng):
    data = bytearray(data)
    for _ in range(rng.randint(1, 3)):
        kind = rng.randrange(8)
        parsed = records(bytes(data)) if len(data) >= 12 else []
        if kind == 0 and data:
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        elif kind == 1 and data:
            del data[rng.randrange(len(data)):]
        elif kind == 2:
            data += bytes(rng.randrange(256) for _ in range(rng.randint(1, 24)))
        elif kind == 3 and len(data) >= 12:
            struct.pack_into("<I", data, 8, rng.choice(EXTREMES))
        elif kind == 4 and parsed:
            name_at, count_at, _, _ = rng.choice(parsed)
            if rng.random() < 0.5:
                struct.pack_into("<I", data, name_at, rng.choice(EXTREMES))
            elif count_at + 8 <= len(data):
                struct.pack_into("<Q", data, count_at, rng.choice(EXTREMES_64))
        elif kind == 5 and parsed:
            _, _, values_at, values = rng.choice(parsed)
            if values and values_at + 8 * values <= len(data):
                struct.pack_into("<d", data, values_at + 8 * rng.randrange(values), rng.choice(VALUES))
        elif kind == 6 and len(parsed) >= 2:
            # a record given again, and counted
            first, second = rng.sample(parsed, 2)
            record = data[first[0]:first[2] + 8 * first[3]]
            data[second[0]:second[0]] = record
            struct.pack_into("<I", data, 8, (struct.unpack_from("<I", data, 8)[0] + 1) % 2**32)
        elif kind == 7 and len(data) > 8:
            start = rng.randrange(len(data))
            del data[start:start + rng.randint(1, 16)]
    return bytes(data)


def main():
    if len(sys.argv) < 5:
        print("usage: fuzz_weights.py SECONDS TENSOR_CHECK WORK_DIR SEED_FILE...", file=sys.stderr)
        return 2
    seconds, checker, work = float(sys.argv[1]), sys.argv[2], sys.argv[3]
    seeds = []
    for path in sys.argv[4:]:
        with open(path, "rb") as f:
            seeds.append(f.read())
    os.makedirs(work, exist_ok=True)
    rng, end = random.Random(1), time.monotonic() + seconds
    inputs = accepted = refused = 0
    while time.monotonic() < end:
        batch = [mutate(rng.choice(seeds), rng) for _ in range(200)]
        paths = []
        for i, data in enumerate(batch):
            paths.append(os.path.join(work, f"input-{i}"))
            with open(paths[-1], "wb") as f:
                f.write(data)
        verdicts = subprocess.run([checker] + paths, check=True, stdout=subprocess.PIPE,
                                  text=True).stdout.splitlines()
        for path, data, verdict in zip(paths, batch, verdicts):
            inputs += 1
            try:
                resgen_torch.read_tensors(path, 1 << 20)
                mine = None
            except resgen_torch.Refused as error:
                mine = str(error)
            except Exception as error:  # the failure this fuzzer looks for
                kept = os.path.join(work, "crash")
                os.replace(path, kept)
                print(f"fuzz weights: {type(error).__name__} ({error}) on {kept}")
                return 1
            if mine and "\n" in mine:
                print(f"fuzz weights: a refusal of more than one line on {path}: {mine!r}")
                return 1
            theirs_ok = verdict.startswith("ok")
            if mine is None and not theirs_ok:
                os.replace(path, os.path.join(work, "disagreement"))
                print(f"fuzz weights: read, but the binaries refuse {work}/disagreement")
                return 1
            if mine is not None and theirs_ok and not any(why in mine for why in CHECKED_BY_THE_LOADER):
                os.replace(path, os.path.join(work, "disagreement"))
                print(f"fuzz weights: refused ({mine}), but the binaries read {work}/disagreement")
                return 1
            accepted += mine is None
            refused += mine is not None
    print(f"fuzz weights: {inputs} inputs, {accepted} read and {refused} refused alike by resgen_torch.py and "
          "the binaries: no traceback, no disagreement")
    return 0


if __name__ == "__main__":
    sys.exit(main())
