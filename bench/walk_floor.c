/*
 * bench/walk_floor.c - the floor a cached refresh of a file tree stands
 * on: a bare walk that opens each directory once, reads it with getdents64
 * and fstatat()s every entry relative to the directory's fd, doing nothing
 * with the results but counting them.  No allocation per entry.
 *
 *     walk_floor DIR [REPS] [THREADS]
 *
 * prints "<entries> <best seconds>" for the best of REPS walks (default 3)
 * with THREADS workers (default 1) taking top-level subtrees in turn.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

struct linux_dirent64 {
	unsigned long long d_ino;
	long long d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

static _Atomic unsigned long long entries;

static void walk(int dfd, int depth)
{
	char buf[1 << 15];
	unsigned long long n = 0;
	for (;;) {
		long got = syscall(SYS_getdents64, dfd, buf, sizeof buf);
		if (got <= 0)
			break;
		for (long off = 0; off < got;) {
			struct linux_dirent64 *d = (struct linux_dirent64 *)(buf + off);
			off += d->d_reclen;
			if (d->d_name[0] == '.' && (!d->d_name[1] || (d->d_name[1] == '.' && !d->d_name[2])))
				continue;
			struct stat st;
			if (fstatat(dfd, d->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
				continue;
			n++;
			if (S_ISDIR(st.st_mode) && depth < 256) {
				int sub = openat(dfd, d->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
				if (sub >= 0) {
					walk(sub, depth + 1);
					close(sub);
				}
			}
		}
	}
	entries += n;
}

static const char *root;
static char **tops;
static size_t ntops;
static _Atomic size_t next_top;

static void *worker(void *arg)
{
	int rfd = *(int *)arg;
	for (size_t i; (i = next_top++) < ntops;) {
		struct stat st;
		if (fstatat(rfd, tops[i], &st, AT_SYMLINK_NOFOLLOW) != 0)
			continue;
		entries++;
		if (!S_ISDIR(st.st_mode))
			continue;
		int sub = openat(rfd, tops[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		if (sub >= 0) {
			walk(sub, 1);
			close(sub);
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: walk_floor DIR [REPS] [THREADS]\n");
		return 2;
	}
	root = argv[1];
	int reps = argc > 2 ? atoi(argv[2]) : 3, threads = argc > 3 ? atoi(argv[3]) : 1;
	if (reps < 1)
		reps = 1;
	if (threads < 1)
		threads = 1;
	DIR *d = opendir(root);
	if (!d) {
		perror(root);
		return 1;
	}
	struct dirent *e;
	size_t alloc = 0;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (ntops == alloc && !(tops = realloc(tops, (alloc = alloc ? alloc * 2 : 64) * sizeof *tops)))
			return 1;
		tops[ntops++] = strdup(e->d_name);
	}
	closedir(d);
	double best = -1;
	unsigned long long count = 0;
	for (int r = 0; r < reps; r++) {
		struct timespec a, b;
		clock_gettime(CLOCK_MONOTONIC, &a);
		int rfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		entries = 0;
		next_top = 0;
		pthread_t t[64];
		int nt = threads > 64 ? 64 : threads;
		for (int i = 0; i < nt; i++)
			pthread_create(&t[i], NULL, worker, &rfd);
		for (int i = 0; i < nt; i++)
			pthread_join(t[i], NULL);
		close(rfd);
		clock_gettime(CLOCK_MONOTONIC, &b);
		double s = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
		if (best < 0 || s < best)
			best = s;
		count = entries;
	}
	printf("%llu %.6f\n", count, best);
	return 0;
}
