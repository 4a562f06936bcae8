/*
 * alloc_bench.c - the allocator against the in-cluster provider's way of
 * finding an address, side by side in one process.
 *
 * For an IPv4 /8 and an IPv6 /64 pool: allocate N addresses, release a
 * random half, allocate that half again; print ns per operation, the
 * allocator's own memory and the process's peak RSS.
 *
 * The baseline does per allocation what the in-cluster provider does per
 * reconcile: parse the address of every IPAddress in use, build the set of
 * used addresses (sort and merge), then scan up from the pool's first
 * address for one not in it. It is timed for a sample of allocations at
 * the same number of addresses in use, and the ratio is printed.
 *
 * Usage: pk_alloc_bench [N] [baseline-at] [baseline-samples]
 *        (defaults 1000000, 100000, 30)
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "addr_spec.h"
#include "allocator.h"

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static long peak_rss_kib(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

static uint64_t rng = 0x9E3779B97F4A7C15ULL;
static uint64_t rnd64(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static struct pk_range_set *usable_of(const char *cidr, struct pk_addr_spec *sp)
{
	struct pk_err err;
	if (pk_addr_spec_parse(cidr, sp, "bench", &err) != PK_OK) {
		fprintf(stderr, "%s\n", err.msg);
		exit(2);
	}
	struct pk_range_set *u = pk_range_set_new();
	/* as a pool without allocateReservedIPAddresses: first (and IPv4 last) reserved */
	pk_u128 lo = sp->first + 1, hi = sp->family == PK_FAMILY_V4 ? sp->last - 1 : sp->last;
	if (u == NULL || pk_range_set_add(u, lo, hi) != PK_OK)
		exit(3);
	return u;
}

/* ---- baseline: rebuild the used set from every address, scan from the start ---- */

static int cmp_u128(const void *a, const void *b)
{
	pk_u128 x = *(const pk_u128 *)a, y = *(const pk_u128 *)b;
	return x < y ? -1 : x > y;
}

static bool sorted_contains(const pk_u128 *v, size_t n, pk_u128 x)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (v[mid] < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && v[lo] == x;
}

/* One allocation the baseline's way; texts are the IPAddresses' spec.address. */
static pk_u128 baseline_alloc(char (*texts)[PK_ADDR_STRLEN], size_t n, pk_u128 *scratch,
                              const struct pk_range_set *usable, enum pk_family fam)
{
	int af = fam == PK_FAMILY_V4 ? AF_INET : AF_INET6;
	for (size_t i = 0; i < n; i++) {
		unsigned char b[16];
		if (inet_pton(af, texts[i], b) != 1)
			exit(4);
		pk_u128 v = 0;
		for (int k = 0; k < (fam == PK_FAMILY_V4 ? 4 : 16); k++)
			v = (v << 8) | b[k];
		scratch[i] = v;
	}
	qsort(scratch, n, sizeof(*scratch), cmp_u128);
	size_t nr;
	const struct pk_range *r = pk_range_set_ranges(usable, &nr);
	for (size_t i = 0; i < nr; i++)
		for (pk_u128 v = r[i].lo;; v++) {
			if (!sorted_contains(scratch, n, v))
				return v;
			if (v == r[i].hi)
				break;
		}
	exit(5);
}

/*
 * Allocation cost with `at` addresses in use, poolkeeper and the baseline
 * side by side; the baseline is timed over `samples` allocations.
 */
static void side_by_side(const char *label, const char *cidr, const struct pk_addr_spec *spp,
                         const struct pk_range_set *u, size_t base_at, size_t base_samples)
{
	const struct pk_addr_spec sp = *spp;
	double t0;
	struct pk_allocator *b = pk_allocator_new(u);
	pk_u128 v;
	for (size_t i = 0; i < base_at; i++)
		if (pk_allocator_next(b, 0, &v) != PK_OK)
			exit(6);
	/* ours: allocate and give back, many times, at base_at in use */
	const size_t reps = 200000;
	t0 = now_ns();
	for (size_t i = 0; i < reps; i++) {
		if (pk_allocator_next(b, 0, &v) != PK_OK ||
		    pk_allocator_release(b, v, 0, 0) != PK_OK)
			exit(9);
	}
	double ours = (now_ns() - t0) / (double)reps / 2.0;
	pk_allocator_free(b);

	char(*texts)[PK_ADDR_STRLEN] = malloc(base_at * sizeof(*texts));
	pk_u128 *scratch = malloc(base_at * sizeof(*scratch));
	if (texts == NULL || scratch == NULL)
		exit(3);
	for (size_t i = 0; i < base_at; i++)
		pk_address_format_v(sp.first + 1 + i, sp.family, texts[i]);
	t0 = now_ns();
	pk_u128 got = 0;
	for (size_t i = 0; i < base_samples; i++)
		got = baseline_alloc(texts, base_at, scratch, u, sp.family);
	double base = (now_ns() - t0) / (double)base_samples;
	if (got != sp.first + 1 + base_at)
		exit(10);
	printf("%-9s %-14s at %zu in use: poolkeeper %.1f ns/alloc, baseline (rebuild + "
	       "scan) %.0f ns/alloc, ratio %.0fx\n",
	       label, cidr, base_at, ours, base, base / ours);
	free(texts);
	free(scratch);
}

static void run(const char *label, const char *cidr, size_t n, size_t base_at, size_t base_samples)
{
	struct pk_addr_spec sp;
	struct pk_range_set *u = usable_of(cidr, &sp);
	struct pk_allocator *a = pk_allocator_new(u);
	pk_u128 *held = malloc(n * sizeof(*held));
	if (a == NULL || held == NULL)
		exit(3);

	double t0 = now_ns();
	for (size_t i = 0; i < n; i++)
		if (pk_allocator_next(a, 0, &held[i]) != PK_OK)
			exit(6);
	double t_alloc = (now_ns() - t0) / (double)n;

	/* release a random half: shuffle, then give back the first n/2 */
	for (size_t i = n - 1; i > 0; i--) {
		size_t j = (size_t)(rnd64() % (i + 1));
		pk_u128 t = held[i];
		held[i] = held[j];
		held[j] = t;
	}
	size_t half = n / 2;
	t0 = now_ns();
	for (size_t i = 0; i < half; i++)
		if (pk_allocator_release(a, held[i], 0, 0) != PK_OK)
			exit(7);
	double t_release = (now_ns() - t0) / (double)half;
	struct pk_alloc_counts c;
	pk_allocator_counts(a, &c);
	size_t frag = c.fragments;
	size_t mem_frag = pk_allocator_memory(a);

	t0 = now_ns();
	for (size_t i = 0; i < half; i++)
		if (pk_allocator_next(a, 0, &held[i]) != PK_OK)
			exit(8);
	double t_realloc = (now_ns() - t0) / (double)half;
	pk_allocator_counts(a, &c);
	char used[PK_COUNT_STRLEN];
	pk_count_format(c.used, used);

	printf("%-9s %-14s N=%-8zu alloc %7.1f ns/op  release %7.1f ns/op  realloc %7.1f "
	       "ns/op  used=%s  fragments(after release)=%zu  allocator memory %.1f MiB\n",
	       label, cidr, n, t_alloc, t_release, t_realloc, used, frag,
	       (double)mem_frag / 1048576.0);
	pk_allocator_free(a);

	side_by_side(label, cidr, &sp, u, base_at, base_samples);
	if (n != base_at)
		side_by_side(label, cidr, &sp, u, n, base_samples / 6 + 1);
	free(held);
	pk_range_set_free(u);
}

static size_t arg(int argc, char **argv, int i, size_t def)
{
	if (argc <= i)
		return def;
	char *end;
	unsigned long long v = strtoull(argv[i], &end, 10);
	if (*end != '\0' || v == 0 || v > 100000000ULL) {
		fprintf(stderr, "pk_alloc_bench: argument %d: \"%s\" is not a count 1..1e8\n", i,
		        argv[i]);
		exit(2);
	}
	return (size_t)v;
}

int main(int argc, char **argv)
{
	size_t n = arg(argc, argv, 1, 1000000);
	size_t base_at = arg(argc, argv, 2, 100000);
	size_t samples = arg(argc, argv, 3, 30);
	printf("pk_alloc_bench: N=%zu, baseline at %zu in use over %zu samples\n", n, base_at,
	       samples);
	run("IPv4 /8", "10.0.0.0/8", n, base_at, samples);
	run("IPv6 /64", "2001:db8::/64", n, base_at, samples);
	printf("peak RSS %.1f MiB\n", (double)peak_rss_kib() / 1024.0);
	return 0;
}
