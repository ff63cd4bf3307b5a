#!/usr/bin/python3
"""A binary's evaluation crops of a folder of images against torchvision's
transforms of the same files: Resize(256 * crop / 224) + CenterCrop(crop),
ToTensor and Normalize by ImageNet's statistics, on images Pillow opens
and converts to RGB (colour, grey, CMYK and a PNG named .JPEG, from
make_folder.py). The binary's step --dump holds its first batch of
training images, cropped as evaluation crops them, in the folder's order
(by the FNV-1a hash of CLASS/FILE). Pixel for pixel: the largest
difference in grey levels must be 0 (both decode with libjpeg-turbo and
resize with Pillow's bilinear arithmetic, image_folder.h).

    check_crops.py DIR BINARY

Exit status 0 when every crop agrees, 1 otherwise.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
from PIL import Image
from torchvision import transforms

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "pytorch"))
from resgen_torch import IMAGENET_MEAN, IMAGENET_STD, checksum, read_tensors  # noqa: E402


def folder_order(root):
    """The images of root (CLASS/FILE) in the binary's order, with labels."""
    classes = sorted(c for c in os.listdir(root) if os.path.isdir(os.path.join(root, c)) and not c.startswith("."))
    files = [(f"{c}/{name}", label) for label, c in enumerate(classes)
             for name in os.listdir(os.path.join(root, c))
             if os.path.splitext(name)[1].lower() in (".jpeg", ".jpg", ".png")]
    return sorted(files, key=lambda item: (checksum(item[0].encode()), item[0]))


def main():
    if len(sys.argv) != 3:
        print("usage: check_crops.py DIR BINARY", file=sys.stderr)
        return 2
    folder, binary = sys.argv[1:]
    files = folder_order(os.path.join(folder, "train"))
    with tempfile.TemporaryDirectory() as work:
        dump_path = os.path.join(work, "crops.dump")
        subprocess.run([binary, "step", "--data", folder, "--batch", str(len(files)), "--dump", dump_path],
                       check=True, stdout=subprocess.DEVNULL)
        dump = read_tensors(dump_path)
    n = len(files)
    crops = dump["input"].reshape(n, 3, -1)
    crop = int(round(np.sqrt(crops.shape[2])))
    mean, std = np.array(IMAGENET_MEAN), np.array(IMAGENET_STD)
    # back to grey levels: the normalisation undone
    mine = np.rint((crops.reshape(n, 3, crop, crop) * std[None, :, None, None] + mean[None, :, None, None]) * 255)
    transform = transforms.Compose([transforms.Resize(round(256 * crop / 224)), transforms.CenterCrop(crop)])
    worst, labels = 0, dump["labels"].astype(int)
    for i, (path, label) in enumerate(files):
        with Image.open(os.path.join(folder, "train", path)) as picture:
            theirs = np.asarray(transform(picture.convert("RGB")), dtype=np.float64).transpose(2, 0, 1)
        difference = np.abs(mine[i] - theirs).max()
        worst = max(worst, difference)
        if difference > 0 or labels[i] != label:
            print(f"  {path} ({picture.mode}): largest difference {difference:g} grey levels, label "
                  f"{labels[i]} (torchvision's ImageFolder: {label})")
    # the normalisation as torchvision's Normalize, to float32 rounding
    reference = transforms.Normalize(IMAGENET_MEAN, IMAGENET_STD)(torch.from_numpy(mine[0] / 255))
    normalised = float(np.abs(crops[0].reshape(3, crop, crop) - reference.numpy()).max())
    print(f"crops of {n} images at {crop}x{crop} against torchvision's Resize + CenterCrop: largest difference "
          f"{worst:g} grey levels; normalisation {normalised:.1e}")
    return 0 if worst == 0 and normalised < 1e-6 else 1


if __name__ == "__main__":
    sys.exit(main())
