/* The last-level cache's size from sysfs, read once. */
#include "cache.h"

#include <stdio.h>

/* The size of cache index i of cpu0 at *level and *bytes; 0 if there is no
 * such index or its files do not read as Linux writes them ("3", "32768K"). */
static int cache_index(int i, int *level, size_t *bytes)
{
	char path[96];
	snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	int read_level = fscanf(f, "%d", level) == 1;
	fclose(f);
	snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
	f = fopen(path, "r");
	if (!f)
		return 0;
	unsigned long size;
	char unit = 0;
	int fields = fscanf(f, "%lu%c", &size, &unit);
	fclose(f);
	if (!read_level || fields < 1)
		return 0;
	*bytes = unit == 'K' ? size << 10 : unit == 'M' ? size << 20 : unit == 'G' ? size << 30 : size;
	return 1;
}

size_t cache_last_level_bytes(void)
{
	/* read once; every thread that races to it reads the same files */
	static size_t known = (size_t)-1;
	size_t bytes = __atomic_load_n(&known, __ATOMIC_RELAXED);
	if (bytes != (size_t)-1)
		return bytes;
	int highest = 0;
	bytes = 0;
	for (int i = 0; i < 16; i++) {
		int level;
		size_t size;
		if (cache_index(i, &level, &size) && level >= highest) {
			if (level > highest || size > bytes)
				bytes = size;
			highest = level;
		}
	}
	__atomic_store_n(&known, bytes, __ATOMIC_RELAXED);
	return bytes;
}
