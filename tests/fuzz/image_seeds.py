#!/usr/bin/python3
"""Seeds for the image fuzzer (tests/fuzz/fuzz_image.c): small files of every
kind a folder of images holds (colour, grey and CMYK JPEGs, progressive,
4:4:4 and 4:2:0, a PNG with alpha, a palette PNG), under 4 KiB each.

    image_seeds.py FOLDER
"""
import os
import sys

import numpy as np
from PIL import Image


def main():
    folder = sys.argv[1]
    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(3)
    picture = Image.fromarray(rng.integers(0, 255, (20, 28, 3), dtype=np.uint8), "RGB")
    picture.save(os.path.join(folder, "colour.jpg"), "JPEG", quality=60)
    picture.save(os.path.join(folder, "colour-444.jpg"), "JPEG", quality=60, subsampling=0)
    picture.save(os.path.join(folder, "progressive.jpg"), "JPEG", quality=60, progressive=True)
    picture.convert("L").save(os.path.join(folder, "grey.jpg"), "JPEG", quality=60)
    picture.convert("CMYK").save(os.path.join(folder, "cmyk.jpg"), "JPEG", quality=60)
    picture.convert("RGBA").save(os.path.join(folder, "alpha.png"), "PNG")
    picture.convert("P").save(os.path.join(folder, "palette.png"), "PNG")
    Image.new("RGB", (1, 300)).save(os.path.join(folder, "thin.jpg"), "JPEG")


if __name__ == "__main__":
    main()
