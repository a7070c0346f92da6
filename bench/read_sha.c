/*
 * bench/read_sha.c - the ceiling a file fingerprint can reach on this
 * machine: one thread that reads each file from the page cache with read()
 * into a 1 MiB buffer and feeds it to OpenSSL's SHA-256, with nothing else
 * (no walk, no process start, no cache, no threads).
 *
 *   read_sha REPS < list-of-files
 *
 * Prints one JSON line: {"files", "bytes", "reps", "best_gbps", "median_gbps"}.
 * Built by bench/run.py (it is not part of the CMake build).
 */
#define _POSIX_C_SOURCE 200809L
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BUF ((size_t)1 << 20)

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	char line[4096], **files = NULL;
	size_t n = 0, cap = 0;
	unsigned long long bytes = 0;
	unsigned char *buf = aligned_alloc(4096, BUF), digest[EVP_MAX_MD_SIZE];
	unsigned dlen;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	int reps = argc == 2 ? atoi(argv[1]) : 0;
	double *gbps;

	if (reps < 1 || !buf || !ctx) {
		fprintf(stderr, "usage: read_sha REPS < list-of-files\n");
		return 2;
	}
	while (fgets(line, sizeof line, stdin)) {
		line[strcspn(line, "\n")] = '\0';
		if (n == cap && !(files = realloc(files, (cap = cap ? 2 * cap : 1024) * sizeof *files)))
			return 1;
		if (!(files[n++] = strdup(line)))
			return 1;
	}
	if (!(gbps = calloc((size_t)reps, sizeof *gbps)))
		return 1;
	for (int r = 0; r < reps; r++) {
		double t0 = now_s();
		bytes = 0;
		for (size_t i = 0; i < n; i++) {
			int fd = open(files[i], O_RDONLY);
			ssize_t got;
			if (fd < 0) {
				perror(files[i]);
				return 1;
			}
			EVP_DigestInit_ex2(ctx, EVP_sha256(), NULL);
			while ((got = read(fd, buf, BUF)) > 0) {
				EVP_DigestUpdate(ctx, buf, (size_t)got);
				bytes += (unsigned long long)got;
			}
			EVP_DigestFinal_ex(ctx, digest, &dlen);
			close(fd);
		}
		gbps[r] = bytes / (now_s() - t0) / 1e9;
	}
	qsort(gbps, (size_t)reps, sizeof *gbps, cmp_double);
	printf("{\"files\": %zu, \"bytes\": %llu, \"reps\": %d, \"best_gbps\": %.3f, \"median_gbps\": %.3f}\n",
	       n, bytes, reps, gbps[reps - 1],
	       reps % 2 ? gbps[reps / 2] : (gbps[reps / 2 - 1] + gbps[reps / 2]) / 2);
	return 0;
}
