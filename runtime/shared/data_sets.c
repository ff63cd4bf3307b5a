/* The data sets' table: data_sets.h. */
#include "data_sets.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

static const char *const fashion_mnist_classes[10] = {
	"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot",
};
static const char *const cifar10_classes[10] = {
	"airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck",
};
static const char *const cifar100_classes[100] = {
	"apple", "aquarium_fish", "baby", "bear", "beaver", "bed", "bee", "beetle", "bicycle", "bottle",
	"bowl", "boy", "bridge", "bus", "butterfly", "camel", "can", "castle", "caterpillar", "cattle",
	"chair", "chimpanzee", "clock", "cloud", "cockroach", "couch", "crab", "crocodile", "cup", "dinosaur",
	"dolphin", "elephant", "flatfish", "forest", "fox", "girl", "hamster", "house", "kangaroo", "keyboard",
	"lamp", "lawn_mower", "leopard", "lion", "lizard", "lobster", "man", "maple_tree", "motorcycle", "mountain",
	"mouse", "mushroom", "oak_tree", "orange", "orchid", "otter", "palm_tree", "pear", "pickup_truck", "pine_tree",
	"plain", "plate", "poppy", "porcupine", "possum", "rabbit", "raccoon", "ray", "road", "rocket",
	"rose", "sea", "seal", "shark", "shrew", "skunk", "skyscraper", "snail", "snake", "spider",
	"squirrel", "streetcar", "sunflower", "sweet_pepper", "table", "tank", "telephone", "television", "tiger", "tractor",
	"train", "trout", "tulip", "turtle", "wardrobe", "whale", "willow_tree", "wolf", "woman", "worm",
};

const char *const normalisation_names[NORMALISE_COUNT] = {
	[NORMALISE_IMAGENET] = "imagenet", [NORMALISE_FOLDER] = "folder", [NORMALISE_GIVEN] = "given",
};

const char *const data_format_names[FORMAT_COUNT] = {
	[FORMAT_IDX] = "idx", [FORMAT_CIFAR] = "cifar", [FORMAT_FOLDER] = "folder", [FORMAT_SYNTHETIC] = "synthetic",
};

/* ILSVRC 2012's counts: 1,281,167 training images, 50,000 validation
 * images (its val/ folder, the paper's test split). */
const struct data_set_info data_sets[SET_COUNT] = {
	[SET_CIFAR10] = {"cifar10", "SET_CIFAR10", "CIFAR-10", "data/cifar10", 3, 32, 10, 50000, 10000, FORMAT_CIFAR,
			 cifar10_classes},
	[SET_CIFAR100] = {"cifar100", "SET_CIFAR100", "CIFAR-100", "data/cifar100", 3, 32, 100, 50000, 10000,
			  FORMAT_CIFAR, cifar100_classes},
	[SET_FASHION_MNIST] = {"fashion-mnist", "SET_FASHION_MNIST", "Fashion-MNIST", "/usr/share/datasets/fashion-mnist",
			       1, 28, 10, 60000, 10000, FORMAT_IDX, fashion_mnist_classes},
	[SET_MNIST] = {"mnist", "SET_MNIST", "MNIST", "/usr/share/datasets/mnist", 1, 28, 10, 60000, 10000, FORMAT_IDX,
		       NULL},
	[SET_SYNTHETIC] = {"synthetic", "SET_SYNTHETIC", "synthetic data", "", 0, 0, 0, 0, 0, FORMAT_SYNTHETIC,
			   NULL},
	[SET_IMAGENET] = {"imagenet", "SET_IMAGENET", "ImageNet (ILSVRC 2012)", "data/imagenet", 3, 224, 1000, 1281167,
			  50000, FORMAT_FOLDER, NULL},
	[SET_FOLDER] = {"folder", "SET_FOLDER", "a folder of images", "", 3, 224, 0, 0, 0, FORMAT_FOLDER, NULL},
};

const char *const data_set_names[SET_COUNT] = {
	[SET_CIFAR10] = "cifar10", [SET_CIFAR100] = "cifar100", [SET_FASHION_MNIST] = "fashion-mnist",
	[SET_MNIST] = "mnist",     [SET_SYNTHETIC] = "synthetic", [SET_IMAGENET] = "imagenet",
	[SET_FOLDER] = "folder",
};

const struct data_set_info *data_set_named(const char *name)
{
	for (int i = 0; name && i < SET_COUNT; i++)
		if (strcmp(data_sets[i].name, name) == 0)
			return &data_sets[i];
	return NULL;
}

const char *data_set_class_name(enum data_set set, int classes, int index, char *out, size_t size)
{
	const struct data_set_info *info = set >= 0 && set < SET_COUNT ? &data_sets[set] : NULL;
	if (info && info->class_names && classes == info->classes && index >= 0 && index < classes)
		snprintf(out, size, "%s", info->class_names[index]);
	else
		snprintf(out, size, "%d", index);
	return out;
}
