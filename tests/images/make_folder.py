#!/usr/bin/python3
"""Writes a small folder of images in ImageFolder's layout, as ILSVRC 2012's
are: DIR/train/CLASS/NAME.JPEG and DIR/val/CLASS/NAME.JPEG, JPEGs of varied
sizes and aspect ratios, colour, grey and CMYK, and one PNG named .JPEG.
Each class's images are a colour of its own with noise, so that a network
learns them. With --bad, also DIR/bad/: a truncated JPEG, a text file
named .JPEG, a progressive JPEG whose second scan names no component of
the image (Pillow refuses it) and a 16-bit greyscale PNG, for the tests
of files that cannot be decoded. With --odd, train/'s first class also
holds images Pillow decodes that are unusual: a JPEG with junk bytes
before its end (libjpeg warns), images 3 pixels thin, and a 16-bit colour
PNG; and DIR/thin.JPEG is 1 x 32768 pixels, for the bound on an image's
memory. With --awkward, the classes are named as a researcher's folders
may be (spaces, a comma, quotes, a leading '=', '+' or '@', non-ASCII),
and so is each class's first file (a comma and quotes, a leading '=',
a newline), for the tests of names in CSV.

    make_folder.py DIR [--classes C] [--train N] [--val N] [--seed S] [--bad] [--odd] [--imagenet-sizes] [--awkward]
"""
import argparse
import io
import os
import struct
import zlib

import numpy as np
from PIL import Image


# Class folders' names a spreadsheet or a CSV reader trips on, in the
# order of their bytes (as the classes are numbered).
AWKWARD_CLASSES = ["+plus", "=SUM(A1:A9)", "@home", "Ankle boot", "a, b and \"c\"", "Éclair ☕"]
AWKWARD_FILE = '=x, "y"\nz'


def image(rng, colour, width, height):
    base = np.array(colour, dtype=np.float64)[None, None, :]
    noise = rng.normal(0, 40, (height, width, 3))
    # a gradient, so that crops and flips change the pixels
    ramp = np.linspace(-30, 30, width)[None, :, None]
    return Image.fromarray(np.clip(base + noise + ramp, 0, 255).astype(np.uint8), "RGB")


def write(rng, folder, name, picture, kind):
    path = os.path.join(folder, name + ".JPEG")
    if kind == "grey":
        picture.convert("L").save(path, "JPEG", quality=90)
    elif kind == "cmyk":
        picture.convert("CMYK").save(path, "JPEG", quality=90)
    elif kind == "png":  # ILSVRC 2012 has a PNG named .JPEG
        picture.save(path, "PNG")
    else:
        picture.save(path, "JPEG", quality=90)


def png16(path, values):
    """values (height x width, or x 3) as a 16-bit PNG, grey or colour:
    Pillow writes no 16-bit colour, so the chunks are written here."""
    height, width = values.shape[:2]
    rows = b"".join(b"\x00" + values[y].astype(">u2").tobytes() for y in range(height))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    header = struct.pack(">IIBBBBB", width, height, 16, 2 if values.ndim == 3 else 0, 0, 0, 0)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) +
                chunk(b"IEND", b""))


def jpeg_bytes(picture, **options):
    out = io.BytesIO()
    picture.save(out, "JPEG", quality=90, **options)
    return out.getvalue()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dir")
    parser.add_argument("--classes", type=int, default=5)
    parser.add_argument("--train", type=int, default=12, help="images a class in train/")
    parser.add_argument("--val", type=int, default=4, help="images a class in val/")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--bad", action="store_true")
    parser.add_argument("--odd", action="store_true")
    parser.add_argument("--awkward", action="store_true", help="awkward names of classes and files")
    parser.add_argument("--imagenet-sizes", action="store_true",
                        help="images of ILSVRC 2012's typical sizes (about 500 x 375), for the loader's bench")
    o = parser.parse_args()
    if o.awkward and o.classes > len(AWKWARD_CLASSES):
        parser.error(f"--awkward names at most {len(AWKWARD_CLASSES)} classes")
    rng = np.random.default_rng(o.seed)
    colours = rng.uniform(40, 215, (o.classes, 3))
    kinds = ["colour", "colour", "colour", "grey", "cmyk", "png"]
    for split, count in (("train", o.train), ("val", o.val)):
        for c in range(o.classes):
            folder = os.path.join(o.dir, split, AWKWARD_CLASSES[c] if o.awkward else f"n{c:08d}")
            os.makedirs(folder, exist_ok=True)
            for i in range(count):
                width, height = int(rng.integers(64, 400)), int(rng.integers(64, 400))
                if o.imagenet_sizes:
                    width, height = (500, 375) if i % 3 else (375, 500)
                kind = kinds[(c * count + i) % len(kinds)]
                name = AWKWARD_FILE if o.awkward and i == 0 else f"{split}_{c}_{i}"
                write(rng, folder, name, image(rng, colours[c], width, height), kind)
    if o.bad:
        folder = os.path.join(o.dir, "bad")
        os.makedirs(folder, exist_ok=True)
        good = os.path.join(folder, "whole.JPEG")
        image(rng, colours[0], 120, 90).save(good, "JPEG", quality=90)
        data = open(good, "rb").read()
        with open(os.path.join(folder, "truncated.JPEG"), "wb") as f:
            f.write(data[: len(data) * 2 // 3])
        with open(os.path.join(folder, "text.JPEG"), "w") as f:
            f.write("not an image\n")
        # a progressive JPEG whose second scan names component 0x77
        data = bytearray(jpeg_bytes(image(rng, colours[0], 120, 90), progressive=True))
        second = data.find(b"\xff\xda", data.find(b"\xff\xda") + 2)
        data[second + 5] = 0x77
        with open(os.path.join(folder, "bad-scan.JPEG"), "wb") as f:
            f.write(data)
        png16(os.path.join(folder, "grey16.png"), rng.integers(0, 65536, (40, 50)))
    if o.odd:
        folder = os.path.join(o.dir, "train", f"n{0:08d}")
        data = jpeg_bytes(image(rng, colours[0], 120, 90))
        # "Corrupt JPEG data: 15 extraneous bytes before marker 0xd9", as
        # some of ILSVRC 2012's files
        with open(os.path.join(folder, "junk.JPEG"), "wb") as f:
            f.write(data[:-2] + bytes(range(1, 17)) + data[-2:])
        image(rng, colours[0], 3, 900).save(os.path.join(folder, "tall.JPEG"), "JPEG", quality=90)
        image(rng, colours[0], 900, 3).save(os.path.join(folder, "wide.JPEG"), "JPEG", quality=90)
        png16(os.path.join(folder, "colour16.png"), rng.integers(0, 65536, (70, 90, 3)))
        image(rng, colours[0], 1, 32768).save(os.path.join(o.dir, "thin.JPEG"), "JPEG", quality=90)


if __name__ == "__main__":
    main()
