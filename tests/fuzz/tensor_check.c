/* The binaries' tensor file reader over many files, for the weights
 * fuzzer (fuzz_weights.py): one line per file, "ok COUNT" or "refused". */
#include <stdio.h>

#include "tensor_file.h"

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		struct tensor_file f;
		char error[1024];
		if (tensor_file_load(&f, argv[i], error, sizeof error) == 0) {
			printf("ok %d\n", f.count);
			tensor_file_free(&f);
		} else {
			printf("refused\n");
		}
	}
	return fflush(stdout) == 0 ? 0 : 1;
}
