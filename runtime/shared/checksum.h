/* FNV-1a, 64 bits: resgen's one hash, sealing checkpoints (tensor_file.c)
 * and naming an emitted network's identity (generator/stage4-emit/emit.c). Header-only,
 * so that the generator and the runtime share it. */
#ifndef RESGEN_CHECKSUM_H
#define RESGEN_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define CHECKSUM_BASIS 0xcbf29ce484222325ULL

static inline uint64_t checksum_add(uint64_t hash, const void *bytes, size_t count)
{
	const unsigned char *b = bytes;
	for (size_t i = 0; i < count; i++)
		hash = (hash ^ b[i]) * 0x100000001b3ULL;
	return hash;
}

/* The same step over 8-byte words, then the bytes left over: a data set's
 * fingerprint at a multiply per 8 bytes (not a seal: checksum_add is). */
static inline uint64_t checksum_add_words(uint64_t hash, const void *bytes, size_t count)
{
	const unsigned char *b = bytes;
	size_t words = count / 8;
	for (size_t i = 0; i < words; i++) {
		uint64_t word;
		memcpy(&word, b + 8 * i, 8);
		hash = (hash ^ word) * 0x100000001b3ULL;
	}
	return checksum_add(hash, b + 8 * words, count - 8 * words);
}

#endif
