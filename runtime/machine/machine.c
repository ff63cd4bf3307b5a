/* What the machine is: which BLIS kernels run, the last-level cache's
 * size from sysfs, where the threads' cores lie (measured), and the one
 * override, RESGEN_CHOICES (machine.h says each). */
#include "machine.h"

#include <blis.h>
#include <cpuid.h>
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bf16.h"
#include "printable.h" /* the program's name, shown before anything else is known */
#include "profile.h" /* profile_clock: the monotonic clock in seconds */

#ifndef RESGEN_MARCH
#define RESGEN_MARCH "native" /* the Makefile's MARCH */
#endif

const char *machine_built_for(void) { return RESGEN_MARCH; }

#if defined(__x86_64__)
/* Before anything else of the binary runs (the first functions of its
 * preinit array, MACHINE_BASELINE whatever MARCH is): a processor without
 * an instruction the build may use (-march=MARCH, as GCC's predefined
 * macros say) gets one line and exit 2, never an illegal instruction
 * somewhere later. */
MACHINE_BASELINE static void refuse_missing_instructions(int argc, char **argv, char **envp)
{
	(void)envp;
	__builtin_cpu_init();
#define NEEDED(name) {name, __builtin_cpu_supports(name)}
	const struct {
		const char *name;
		int present;
	} needed[] = {
#ifdef __SSE3__
		NEEDED("sse3"),
#endif
#ifdef __SSSE3__
		NEEDED("ssse3"),
#endif
#ifdef __SSE4_1__
		NEEDED("sse4.1"),
#endif
#ifdef __SSE4_2__
		NEEDED("sse4.2"),
#endif
#ifdef __POPCNT__
		NEEDED("popcnt"),
#endif
#ifdef __AVX__
		NEEDED("avx"),
#endif
#ifdef __AVX2__
		NEEDED("avx2"),
#endif
#ifdef __FMA__
		NEEDED("fma"),
#endif
#ifdef __F16C__
		NEEDED("f16c"),
#endif
#ifdef __BMI__
		NEEDED("bmi"),
#endif
#ifdef __BMI2__
		NEEDED("bmi2"),
#endif
#ifdef __LZCNT__
		NEEDED("lzcnt"),
#endif
#ifdef __MOVBE__
		NEEDED("movbe"),
#endif
#ifdef __AVX512F__
		NEEDED("avx512f"),
#endif
#ifdef __AVX512CD__
		NEEDED("avx512cd"),
#endif
#ifdef __AVX512DQ__
		NEEDED("avx512dq"),
#endif
#ifdef __AVX512BW__
		NEEDED("avx512bw"),
#endif
#ifdef __AVX512VL__
		NEEDED("avx512vl"),
#endif
#ifdef __AVX512IFMA__
		NEEDED("avx512ifma"),
#endif
#ifdef __AVX512VBMI__
		NEEDED("avx512vbmi"),
#endif
#ifdef __AVX512VBMI2__
		NEEDED("avx512vbmi2"),
#endif
#ifdef __AVX512VNNI__
		NEEDED("avx512vnni"),
#endif
#ifdef __AVX512BITALG__
		NEEDED("avx512bitalg"),
#endif
#ifdef __AVX512VPOPCNTDQ__
		NEEDED("avx512vpopcntdq"),
#endif
#ifdef __AVX512BF16__
		NEEDED("avx512bf16"),
#endif
#ifdef __AVX512FP16__
		NEEDED("avx512fp16"),
#endif
#ifdef __AVXVNNI__
		NEEDED("avxvnni"),
#endif
		{NULL, 1}};
#undef NEEDED
	char missing[128] = "";
	size_t length = 0;
	int count = 0;
	for (int i = 0; needed[i].name; i++)
		if (!needed[i].present && count++ < 3)
			length += (size_t)snprintf(missing + length, sizeof missing - length, "%s%s", length ? ", " : "",
						   needed[i].name);
	if (!count)
		return;
	if (count > 3)
		snprintf(missing + length, sizeof missing - length, " and %d more", count - 3);
	const char *program = argc > 0 && argv[0] ? argv[0] : "resgen binary";
	const char *base = strrchr(program, '/');
	char name[101], shown[4 * sizeof name], line[1024];
	snprintf(name, sizeof name, "%s", base ? base + 1 : program);
	printable_text(shown, sizeof shown, name);
	bool baseline = strcmp(RESGEN_MARCH, "x86-64-v3") == 0;
	int written = snprintf(line, sizeof line,
			       "%s: this processor lacks %s, which this binary was built to use (MARCH=%s%s); %s "
			       "(docs/cluster.md)\n",
			       shown, missing, RESGEN_MARCH,
			       strcmp(RESGEN_MARCH, "native") == 0 ? ", the processor of the machine that built it"
			       : baseline                          ? ", the default build's baseline"
								   : "",
			       baseline ? "resgen runs on processors with AVX2 and FMA (x86-64-v3) and newer"
					: "build it with the default MARCH (x86-64-v3), which runs on every node with AVX2 and "
					  "FMA, as fast as a native build");
	ssize_t ignored = write(2, line, written > 0 && (size_t)written < sizeof line ? (size_t)written : strlen(line));
	(void)ignored;
	_exit(2);
}

__attribute__((section(".preinit_array"), used)) static void (*const refuse_missing)(int, char **, char **) =
	refuse_missing_instructions;
#endif

/* Which kernels BLIS 0.9 runs is chosen here, before it first runs, where
 * its own choice is known to be slow; a choice the user made in
 * BLIS_ARCH_TYPE stands.
 * - AMD: BLIS knows processors by family, up to Zen 3 (family 0x19), and
 *   gives newer ones (Zen 4 and Zen 5 models) its portable C kernels: on a
 *   Zen 5 that made preact-110 train 3.3 times slower. A later family gets
 *   the skx kernels if it has every AVX-512 extension they use (on a Zen 5
 *   they ran the packed convolutions 1.6 times faster than the zen3
 *   kernels), else the zen3 kernels if it has AVX2 and FMA. A Zen 4 (family
 *   0x19 with AVX-512) runs a 512-bit multiply-add as two 256-bit halves,
 *   so skx's 32 x 12 blocks do no more per cycle than zen3's 6 x 16, and
 *   fill worse with 16 channels: on one, with zen3's, preact-110,
 *   original-110 and preact-164 trained 3 to 4% faster, and ResNet-1001 at
 *   batch 16 3% faster in 5 of 7 alternating pairs.
 * - Intel: BLIS gives the skx kernels only to a processor whose name
 *   string it can read as a Xeon or Core model with two 512-bit FMA units,
 *   and the haswell kernels to the rest. A virtual machine's processor is
 *   often named just "Intel(R) Xeon(R) Processor": on one such (a 2-core
 *   Xeon of model 0xcf, two FMA units), haswell's left preact-164 1.22 to
 *   1.27 times slower than skx's. So every Intel processor with the
 *   AVX-512 extensions gets skx's; with one FMA unit, AVX-512 multiplies
 *   and adds as many reals a cycle as AVX2 does with two. */
bool machine_has_baseline(void) { return true; }

bool machine_has_skx_extensions(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512cd") &&
	       __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
}

void machine_processor(char *out, size_t size)
{
	unsigned words[12] = {0};
	bool named = true;
	for (unsigned leaf = 0; named && leaf < 3; leaf++)
		named = __get_cpuid(0x80000002 + leaf, &words[4 * leaf], &words[4 * leaf + 1], &words[4 * leaf + 2],
				    &words[4 * leaf + 3]);
	char name[49] = "";
	if (named)
		memcpy(name, words, 48);
	name[48] = '\0';
	const char *at = name;
	while (*at == ' ')
		at++;
	size_t length = strlen(at);
	while (length > 0 && at[length - 1] == ' ')
		length--;
	snprintf(out, size, "%.*s", (int)length, length ? at : "an unnamed processor");
}

/* Whether this processor runs BLIS's kernel set called name, one of those
 * Debian's BLIS 0.9 builds for x86-64 (the others, ARM's, POWER's and
 * knc, are not in it: BLIS aborts on their numbers). */
static bool blis_kernels_run_here(const char *name)
{
	__builtin_cpu_init();
	if (strcmp(name, "skx") == 0)
		return machine_has_skx_extensions();
	if (strcmp(name, "knl") == 0)
		return __builtin_cpu_supports("avx512er");
	if (strcmp(name, "haswell") == 0 || strcmp(name, "zen") == 0 || strcmp(name, "zen2") == 0 ||
	    strcmp(name, "zen3") == 0)
		return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
	if (strcmp(name, "sandybridge") == 0)
		return __builtin_cpu_supports("avx");
	if (strcmp(name, "penryn") == 0)
		return __builtin_cpu_supports("ssse3");
	if (strcmp(name, "excavator") == 0 || strcmp(name, "steamroller") == 0 || strcmp(name, "piledriver") == 0 ||
	    strcmp(name, "bulldozer") == 0)
		return __builtin_cpu_supports("fma4");
	return strcmp(name, "generic") == 0;
}

/* A user's BLIS_ARCH_TYPE, checked before BLIS reads it: BLIS aborts on a
 * number it has no kernels for, and an illegal instruction ends a run
 * given kernels this processor lacks (and it reads "3x" as 3, "zen3" as
 * 0). A plain decimal number of a kernel set that runs here, or one line
 * and exit 2. */
static void check_blis_choice(const char *value, const char *program)
{
	int id = -1;
	if (value[0] >= '0' && value[0] <= '9' && strlen(value) <= 3 && strspn(value, "0123456789") == strlen(value))
		id = atoi(value);
	if (id >= 0 && id < BLIS_NUM_ARCHS && blis_kernels_run_here(bli_arch_string((arch_t)id)))
		return;
	char works[512] = "", shown[128], line[1024];
	size_t length = 0;
	for (int i = 0; i < BLIS_NUM_ARCHS; i++)
		if (blis_kernels_run_here(bli_arch_string((arch_t)i)))
			length += (size_t)snprintf(works + length, sizeof works - length, "%s%d (%s)", length ? ", " : "",
						   i, bli_arch_string((arch_t)i));
	printable_text(shown, sizeof shown, value);
	int written = snprintf(line, sizeof line,
			       "%s: BLIS_ARCH_TYPE is '%.64s', not the number of a kernel set of BLIS that this processor "
			       "runs; give one of %s, or unset it for resgen's choice\n",
			       program, shown, works);
	ssize_t ignored = write(2, line, written > 0 && (size_t)written < sizeof line ? (size_t)written : strlen(line));
	(void)ignored;
	_exit(2);
}

__attribute__((constructor)) static void choose_blis_kernels(int argc, char **argv, char **envp)
{
	(void)envp;
	unsigned eax, ebx, ecx, edx;
	const char *chosen = getenv("BLIS_ARCH_TYPE");
	if (chosen) {
		const char *program = argc > 0 && argv[0] ? argv[0] : "resgen binary";
		const char *base = strrchr(program, '/');
		char name[101], shown[4 * sizeof name];
		snprintf(name, sizeof name, "%s", base ? base + 1 : program);
		printable_text(shown, sizeof shown, name);
		check_blis_choice(chosen, shown);
		return;
	}
	if (!__get_cpuid(0, &eax, &ebx, &ecx, &edx))
		return;
	char vendor[13];
	memcpy(vendor, &ebx, 4);
	memcpy(vendor + 4, &edx, 4);
	memcpy(vendor + 8, &ecx, 4);
	vendor[12] = '\0';
	if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx))
		return;
	unsigned family = (eax >> 8) & 0xf;
	if (family == 0xf)
		family += (eax >> 20) & 0xff;
	__builtin_cpu_init();
	int kernels = -1;
	if (strcmp(vendor, "GenuineIntel") == 0 && machine_has_skx_extensions())
		kernels = BLIS_ARCH_SKX;
	else if (strcmp(vendor, "AuthenticAMD") == 0 && family >= 0x19 && __builtin_cpu_supports("avx2") &&
		 __builtin_cpu_supports("fma"))
		kernels = machine_has_skx_extensions() && family > 0x19 ? BLIS_ARCH_SKX : BLIS_ARCH_ZEN3;
	if (kernels < 0)
		return;
	/* BLIS reads its choice from the environment only, once, as it first
	 * runs: the variable is there for that read alone, every library's
	 * constructor having run and no other code running, and gone before
	 * main, so that no other code sees it. */
	char id[16];
	snprintf(id, sizeof id, "%d", kernels);
	if (setenv("BLIS_ARCH_TYPE", id, 0) != 0)
		return;
	bli_init();
	(void)bli_arch_query_id();
	unsetenv("BLIS_ARCH_TYPE");
}

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

size_t machine_last_level_bytes(void)
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

/* The number of CPUs in a Linux CPU list ("0-1,4,6-7"); 0 if unreadable. */
static int cpu_list_count(const char *list)
{
	int count = 0;
	for (const char *at = list; *at && *at != '\n';) {
		char *end;
		long first = strtol(at, &end, 10), last = first;
		if (end == at || first < 0)
			return 0;
		if (*end == '-') {
			at = end + 1;
			last = strtol(at, &end, 10);
			if (end == at || last < first)
				return 0;
		}
		count += (int)(last - first + 1);
		at = *end == ',' ? end + 1 : end;
		if (*end && *end != ',' && *end != '\n')
			return 0;
	}
	return count;
}

int machine_last_level_sharing(void)
{
	int highest = 0, sharing = 0;
	for (int i = 0; i < 16; i++) {
		int level;
		size_t size;
		if (!cache_index(i, &level, &size) || level < highest)
			continue;
		char path[96], list[256] = "";
		snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/shared_cpu_list", i);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(list, sizeof list, f))
			sharing = cpu_list_count(list);
		fclose(f);
		highest = level;
	}
	return sharing;
}

/* Thread 1 says it is there by writing 2; thread 0, once it reads that,
 * starts the clock and writes odd counts from 3, thread 1 answering each
 * with the even one after it, and ends the exchange with -1. Thread 1
 * writes only by compare-and-swap, so that nothing it writes can cover
 * the end. Waiting for thread 1 first keeps its waking out of the time:
 * a thread the pool let sleep took from 3 us to over 1 ms to wake on the
 * Zen 4, even after a barrier (whose last arrival goes on at once while
 * it wakes the others). It is waited for up to MACHINE_WAKE_SECONDS. */
#define MACHINE_WAKE_SECONDS 0.1
static struct {
	_Alignas(64) int value; /* alone on its line */
	char rest[60];
} machine_line;

double machine_round_trip_ns(int trips, double seconds)
{
	if (omp_in_parallel() || omp_get_max_threads() < 2 || trips < 1)
		return 0;
	double elapsed = 0;
	int done = 0;
	__atomic_store_n(&machine_line.value, 0, __ATOMIC_RELAXED);
	#pragma omp parallel num_threads(2)
	{
		if (omp_get_num_threads() < 2) {
			/* no partner: nothing measured */
		} else if (omp_get_thread_num() == 0) {
			double start = profile_clock();
			while (__atomic_load_n(&machine_line.value, __ATOMIC_ACQUIRE) != 2 && profile_clock() - start <= MACHINE_WAKE_SECONDS)
				;
			if (__atomic_load_n(&machine_line.value, __ATOMIC_ACQUIRE) == 2)
				start = profile_clock(); /* else: no partner: the wait counts, over the limit */
			for (int spins = 0; done < trips && elapsed <= seconds;) {
				int sent = 2 * done + 3;
				if (spins == 0)
					__atomic_store_n(&machine_line.value, sent, __ATOMIC_RELEASE);
				if (__atomic_load_n(&machine_line.value, __ATOMIC_ACQUIRE) == sent + 1) {
					done++;
					spins = 0;
				} else if (++spins % 256 == 0) {
					elapsed = profile_clock() - start;
				}
			}
			elapsed = profile_clock() - start;
			__atomic_store_n(&machine_line.value, -1, __ATOMIC_RELEASE);
		} else {
			int seen = 0;
			__atomic_compare_exchange_n(&machine_line.value, &seen, 2, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
			while ((seen = __atomic_load_n(&machine_line.value, __ATOMIC_ACQUIRE)) != -1)
				if (seen % 2)
					__atomic_compare_exchange_n(&machine_line.value, &seen, seen + 1, 0, __ATOMIC_ACQ_REL,
								    __ATOMIC_ACQUIRE);
		}
	}
	return done < trips ? 1e9 * elapsed : 1e9 * elapsed / done;
}

double machine_round_trip_median(int rounds, int trips, double seconds)
{
	double times[MACHINE_ROUNDS_MAX];
	rounds = rounds < 1 ? 1 : rounds > MACHINE_ROUNDS_MAX ? MACHINE_ROUNDS_MAX : rounds;
	for (int round = 0; round < rounds; round++) {
		double time = machine_round_trip_ns(trips, seconds);
		int j = round;
		for (; j > 0 && time < times[j - 1]; j--) /* kept sorted */
			times[j] = times[j - 1];
		times[j] = time;
	}
	return times[rounds / 2];
}

static double placement_checked_at = -1;
static bool threads_apart;

void machine_check_placement(void)
{
	double now = profile_clock();
	if (omp_in_parallel() || (placement_checked_at >= 0 && now - placement_checked_at < MACHINE_PROBE_SECONDS))
		return;
	placement_checked_at = now;
	threads_apart = machine_round_trip_median(3, MACHINE_PROBE_TRIPS, 1e-3) > MACHINE_APART_NS;
}

bool machine_threads_apart(void) { return threads_apart; }

const char *const machine_override_names[MACHINE_OVERRIDE_NAMES] = {"winograd", "row_split", "weight_split", "swap", "stream"};

int machine_override_parse(const char *text, struct choice_override *override, char *why, size_t why_size)
{
	signed char *choice[MACHINE_OVERRIDE_NAMES] = {&override->winograd, &override->row_split, &override->weight_split,
						       &override->swap, &override->stream};
	for (int i = 0; i < MACHINE_OVERRIDE_NAMES; i++)
		*choice[i] = -1;
	unsigned given = 0;
	for (const char *at = text; at && *at;) {
		size_t length = strcspn(at, ",");
		const char *equals = memchr(at, '=', length);
		int name = -1, value = -2;
		for (int i = 0; equals && i < MACHINE_OVERRIDE_NAMES; i++)
			if (strlen(machine_override_names[i]) == (size_t)(equals - at) &&
			    strncmp(at, machine_override_names[i], equals - at) == 0)
				name = i;
		if (name >= 0) {
			size_t given = length - (equals + 1 - at);
			const char *v = equals + 1;
			value = given == 2 && strncmp(v, "on", 2) == 0 ? 1 : given == 3 && strncmp(v, "off", 3) == 0 ? 0
				: given == 4 && strncmp(v, "rule", 4) == 0 ? -1 : -2;
		}
		if (name < 0 || value == -2) {
			char names[96] = "";
			for (int i = 0; i < MACHINE_OVERRIDE_NAMES; i++)
				snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "",
					 machine_override_names[i]);
			snprintf(why, why_size,
				 "RESGEN_CHOICES, character %d: '%.*s' is not a choice; expected NAME=on, off or rule, NAME one of "
				 "%s, separated by commas",
				 (int)(at - text) + 1, (int)(length < 40 ? length : 40), at, names);
			return -1;
		}
		if (given & (1u << name)) {
			snprintf(why, why_size, "RESGEN_CHOICES, character %d: '%s' is given twice; give each choice once",
				 (int)(at - text) + 1, machine_override_names[name]);
			return -1;
		}
		given |= 1u << name;
		*choice[name] = (signed char)value;
		at += length + (at[length] == ',');
	}
	return 0;
}

static struct machine found;
static char override_why[256]; /* empty, or why RESGEN_CHOICES is unreadable */
static pthread_once_t found_once = PTHREAD_ONCE_INIT;

static void find_machine(void)
{
	found.micro = gemm_micro();
	found.kernels = gemm_kernels();
	found.last_level_bytes = machine_last_level_bytes();
	found.override_text = getenv("RESGEN_CHOICES");
	if (machine_override_parse(found.override_text, &found.override, override_why, sizeof override_why) != 0)
		machine_override_parse(NULL, &found.override, NULL, 0);
	else
		override_why[0] = '\0';
	found.bf16_text = getenv("RESGEN_BF16");
	found.bf16_path = found.bf16_text && found.bf16_text[0] ? bf16_path_named(found.bf16_text) : -1;
	if (found.bf16_text && found.bf16_text[0] && found.bf16_path < 0 && !override_why[0]) {
		char shown[64], names[128] = "";
		printable_text(shown, sizeof shown, found.bf16_text);
		for (int p = 0; p < BF16_PATH_COUNT; p++) /* "portable, avx2, ... or amx" */
			snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s",
				 p == 0 ? "" : p == BF16_PATH_COUNT - 1 ? " or " : ", ", bf16_path_names[p]);
		snprintf(override_why, sizeof override_why, "RESGEN_BF16=%s names no path of bf16 products: %s", shown,
			 names);
	}
}

const struct machine *machine(void)
{
	pthread_once(&found_once, find_machine);
	return &found;
}

int machine_override_error(char *why, size_t why_size)
{
	machine();
	if (!override_why[0])
		return 0;
	snprintf(why, why_size, "%s", override_why);
	return -1;
}

void machine_refuse_algorithm(const char *instance)
{
	char shown[128];
	printable_text(shown, sizeof shown, machine()->override_text ? machine()->override_text : "");
	fprintf(stderr,
		"%s: RESGEN_CHOICES=%s would change the algorithm of %s, whose code this build compiles for its rule "
		"alone; force algorithms in a build of every one (make EVERY_ALGORITHM=1, build/every-algorithm/), or unset it\n",
		program_invocation_short_name, shown, instance);
	exit(2);
}

int machine_bf16_path(int arithmetic)
{
	const struct machine *m = machine();
	if (m->bf16_path < 0)
		return bf16_best_path((enum bf16_arithmetic)arithmetic);
	char why[160];
	if (!bf16_path_available((enum bf16_path)m->bf16_path, (enum bf16_arithmetic)arithmetic, why, sizeof why)) {
		fprintf(stderr, "%s: RESGEN_BF16=%s cannot compute this network's bf16 products (the %s order): %s; unset it "
			"for the fastest path there is\n",
			program_invocation_short_name, m->bf16_text, bf16_arithmetic_names[arithmetic], why);
		exit(2);
	}
	return m->bf16_path;
}
