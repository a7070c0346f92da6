/*
 * Lance version views (engine/cmd/query_lance.c): the directory DuckDB reads as
 * one recorded version.  Built over a dataset laid out as Lance lays it out
 * (the manifest's bytes are not interpreted, so any bytes do): the view
 * holds that manifest alone and links to the store's files in directories
 * of its own; it lives in a private cache directory, is rebuilt when
 * written through, agrees under concurrent builders, refuses a manifest
 * that is no regular file and never turns an entry into a path outside.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "engine/cmd/query.h"
#include "harness.h"
#include "util/fs.h"

static char *at(const char *a, const char *b)
{
	char *p = NULL;
	if (asprintf(&p, "%s/%s", a, b) < 0)
		abort();
	return p;
}

static void put(const char *dir, const char *name, const char *text)
{
	char *p = at(dir, name);
	char *d = tt_dirname(p);
	tt_mkdirs(d, 0755, NULL);
	FILE *f = fopen(p, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
	free(d);
	free(p);
}

static size_t entries(const char *dir, const char *prefix)
{
	DIR *d = opendir(dir);
	size_t n = 0;
	struct dirent *e;
	while (d && (e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strncmp(e->d_name, prefix, strlen(prefix)) == 0)
			n++;
	if (d)
		closedir(d);
	return n;
}

/* A dataset root with two versions, data, deletions, a legacy latest
 * pointer, refs and a branch tree; the cache in the case's directory. */
static char *dataset(void)
{
	char *root = at(tt_test_tmpdir(), "ds.lance"), *cache = at(tt_test_tmpdir(), "cache");
	put(root, "_versions/1.manifest", "manifest one");
	put(root, "_versions/2.manifest", "manifest two");
	put(root, "_versions/latest_version_hint.json", "{\"version\": 2}");
	put(root, "_latest.manifest", "manifest two");
	put(root, "data/a.lance", "rows a");
	put(root, "data/b.lance", "rows b");
	put(root, "_deletions/0-1-7.arrow", "deleted");
	put(root, "_refs/tags/t.json", "{}");
	put(root, "tree/dev/_versions/1.manifest", "dev one");
	setenv("XDG_CACHE_HOME", cache, 1);
	free(cache);
	return root;
}

static char *views(void)
{
	return at(tt_test_tmpdir(), "cache/tether/lance-views");
}

TT_TEST(a_view_holds_the_version_alone_and_links_in_directories_of_its_own)
{
	char *root = dataset(), *man = at(root, "_versions/1.manifest"), *view = NULL;
	tt_error err = TT_ERROR_INIT;
	CHECK_INT(tt_query_lance_view(root, man, "vecs", &view, &err), 0);
	char *base = views();
	CHECK_MSG(strncmp(view, base, strlen(base)) == 0, "%s is not under %s", view, base);
	struct stat st;
	CHECK(lstat(base, &st) == 0 && (st.st_mode & 0777) == 0700);

	char *vers = at(view, "_versions"), *copy = at(vers, "1.manifest");
	CHECK_INT((long long)entries(vers, ""), 1);
	tt_buf b = TT_BUF_INIT;
	CHECK(lstat(copy, &st) == 0 && S_ISREG(st.st_mode));
	CHECK(tt_read_file(copy, &b, 0, NULL) == 0 && strcmp(b.ptr, "manifest one") == 0);
	tt_buf_release(&b);
	/* data and _deletions: the view's own directories of links */
	char *data = at(view, "data"), *link = at(data, "a.lance"), *want = at(root, "data/a.lance");
	CHECK(lstat(data, &st) == 0 && S_ISDIR(st.st_mode));
	char got[4096];
	ssize_t n = readlink(link, got, sizeof got - 1);
	CHECK(n > 0);
	got[n] = '\0';
	char *real_want = tt_realpath(want);
	CHECK_STR(got, real_want);
	CHECK_INT((long long)entries(data, ""), 2);
	char *dels = at(view, "_deletions");
	CHECK_INT((long long)entries(dels, ""), 1);
	/* no refs, no branch tree, no legacy pointer to the newest version */
	CHECK_INT((long long)entries(view, ""), 3);

	/* the same version again: the same view */
	char *again = NULL;
	CHECK_INT(tt_query_lance_view(root, man, "vecs", &again, &err), 0);
	CHECK_STR(again, view);
	/* the other version: another view */
	char *man2 = at(root, "_versions/2.manifest"), *other = NULL;
	CHECK_INT(tt_query_lance_view(root, man2, "vecs", &other, &err), 0);
	CHECK(strcmp(other, view) != 0);
	CHECK_INT((long long)entries(base, "."), 0); /* no staging left */
	free(root), free(man), free(view), free(base), free(vers), free(copy), free(data), free(link), free(want);
	free(real_want), free(dels), free(again), free(man2), free(other);
	tt_error_clear(&err);
}

TT_TEST(a_write_through_the_view_lands_in_the_cache_and_the_view_is_rebuilt)
{
	char *root = dataset(), *man = at(root, "_versions/1.manifest"), *view = NULL;
	tt_error err = TT_ERROR_INIT;
	CHECK_INT(tt_query_lance_view(root, man, "vecs", &view, &err), 0);
	/* what a Lance append through the view's path writes */
	put(view, "data/new.lance", "appended");
	put(view, "_versions/2.manifest", "appended version");
	char *store_new = at(root, "data/new.lance");
	CHECK(access(store_new, F_OK) != 0); /* the store has no such file */
	char *again = NULL;
	CHECK_INT(tt_query_lance_view(root, man, "vecs", &again, &err), 0);
	CHECK_STR(again, view);
	char *vers = at(again, "_versions"), *data = at(again, "data");
	CHECK_INT((long long)entries(vers, ""), 1);
	CHECK_INT((long long)entries(data, ""), 2);
	/* a changed copy of the manifest is found too */
	char *mine = at(again, "_versions/1.manifest");
	CHECK(chmod(mine, 0600) == 0);
	put(again, "_versions/1.manifest", "tampered");
	free(mine);
	char *third = NULL;
	CHECK_INT(tt_query_lance_view(root, man, "vecs", &third, &err), 0);
	char *copy = at(vers, "1.manifest");
	tt_buf b = TT_BUF_INIT;
	CHECK(tt_read_file(copy, &b, 0, NULL) == 0 && strcmp(b.ptr, "manifest one") == 0);
	tt_buf_release(&b);
	free(root), free(man), free(view), free(store_new), free(again), free(vers), free(data), free(third);
	free(copy);
	tt_error_clear(&err);
}

TT_TEST(another_manifest_at_the_same_path_is_another_view)
{
	char *root = dataset(), *man = at(root, "_versions/1.manifest"), *a = NULL, *b = NULL;
	tt_error err = TT_ERROR_INIT;
	CHECK_INT(tt_query_lance_view(root, man, "vecs", &a, &err), 0);
	/* the dataset written again from scratch at the same path */
	put(root, "_versions/1.manifest", "a new life's version one");
	CHECK_INT(tt_query_lance_view(root, man, "vecs", &b, &err), 0);
	CHECK(strcmp(a, b) != 0);
	free(root), free(man), free(a), free(b);
	tt_error_clear(&err);
}

TT_TEST(concurrent_builders_agree_on_one_view)
{
	char *root = dataset(), *man = at(root, "_versions/1.manifest");
	enum { N = 8 };
	pid_t kids[N];
	for (int i = 0; i < N; i++) {
		if ((kids[i] = fork()) == 0) {
			tt_error e = TT_ERROR_INIT;
			char *v = NULL;
			int rc = tt_query_lance_view(root, man, "vecs", &v, &e);
			char *vers = rc ? NULL : at(v, "_versions");
			_exit(rc == 0 && entries(vers, "") == 1 ? 0 : 1);
		}
	}
	int failed = 0;
	for (int i = 0; i < N; i++) {
		int st = 0;
		waitpid(kids[i], &st, 0);
		failed += !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	CHECK_INT(failed, 0);
	char *base = views();
	CHECK_INT((long long)entries(base, ""), 1); /* one view, nothing staged left */
	free(root), free(man), free(base);
}

TT_TEST(a_manifest_that_is_no_regular_file_is_refused_unread)
{
	char *root = dataset(), *fifo = at(root, "_versions/3.manifest"), *view = NULL;
	CHECK(mkfifo(fifo, 0600) == 0);
	tt_error err = TT_ERROR_INIT;
	/* a FIFO would block a reader forever: refused at once */
	CHECK(tt_query_lance_view(root, fifo, "vecs", &view, &err) < 0);
	CHECK_MSG(strstr(err.message, "no regular file") && strstr(err.message, "[vecs]"), "%s", err.message);
	CHECK(view == NULL);
	tt_error_clear(&err);
	char *dir = at(root, "_versions/4.manifest");
	CHECK(mkdir(dir, 0700) == 0);
	CHECK(tt_query_lance_view(root, dir, "vecs", &view, &err) < 0);
	tt_error_clear(&err);
	free(root), free(fifo), free(dir);
}

TT_TEST(a_store_directory_that_is_a_link_is_read_through_and_never_written)
{
	/* data/ a link to another directory: the view links its files, and its
	 * own data/ is a directory, so nothing written there reaches the target */
	char *root = dataset(), *elsewhere = at(tt_test_tmpdir(), "elsewhere"), *data = at(root, "data");
	put(elsewhere, "c.lance", "rows c");
	CHECK(tt_remove_tree(data, NULL) == 0);
	CHECK(symlink(elsewhere, data) == 0);
	char *man = at(root, "_versions/1.manifest"), *view = NULL;
	tt_error err = TT_ERROR_INIT;
	CHECK_INT(tt_query_lance_view(root, man, "vecs", &view, &err), 0);
	char *vdata = at(view, "data");
	struct stat st;
	CHECK(lstat(vdata, &st) == 0 && S_ISDIR(st.st_mode));
	CHECK_INT((long long)entries(vdata, ""), 1);
	put(view, "data/written.lance", "x");
	CHECK_INT((long long)entries(elsewhere, ""), 1);
	free(root), free(elsewhere), free(data), free(man), free(view), free(vdata);
	tt_error_clear(&err);
}

TT_TEST(a_cache_directory_others_can_write_is_refused)
{
	char *root = dataset(), *man = at(root, "_versions/1.manifest"), *view = NULL, *base = views();
	CHECK(tt_mkdirs(base, 0700, NULL) == 0);
	CHECK(chmod(base, 0777) == 0);
	tt_error err = TT_ERROR_INIT;
	CHECK(tt_query_lance_view(root, man, "vecs", &view, &err) == TT_ECONFIG);
	CHECK_MSG(strstr(err.message, base) && strstr(err.message, "not this user's own"), "%s", err.message);
	tt_error_clear(&err);
	/* a link in its place is refused too */
	CHECK(tt_remove_tree(base, NULL) == 0);
	char *real = at(tt_test_tmpdir(), "other-cache");
	CHECK(mkdir(real, 0700) == 0);
	CHECK(symlink(real, base) == 0);
	CHECK(tt_query_lance_view(root, man, "vecs", &view, &err) == TT_ECONFIG);
	CHECK_INT((long long)entries(real, ""), 0);
	tt_error_clear(&err);
	free(root), free(man), free(base), free(real);
}

TT_TEST(views_unused_for_a_month_and_stale_staging_are_cleaned)
{
	char *root = dataset(), *m1 = at(root, "_versions/1.manifest"), *m2 = at(root, "_versions/2.manifest");
	char *old = NULL, *fresh = NULL, *base = views();
	tt_error err = TT_ERROR_INIT;
	CHECK_INT(tt_query_lance_view(root, m1, "vecs", &old, &err), 0);
	struct timespec long_ago[2] = { { .tv_sec = time(NULL) - 40 * 86400 }, { .tv_sec = time(NULL) - 40 * 86400 } };
	CHECK(utimensat(AT_FDCWD, old, long_ago, AT_SYMLINK_NOFOLLOW) == 0);
	char *stage = at(base, ".stage-crashed");
	put(stage, "_versions/1.manifest", "x");
	struct timespec yesterday[2] = { { .tv_sec = time(NULL) - 2 * 86400 }, { .tv_sec = time(NULL) - 2 * 86400 } };
	CHECK(utimensat(AT_FDCWD, stage, yesterday, AT_SYMLINK_NOFOLLOW) == 0);
	/* building another view cleans; the store's files are untouched */
	CHECK_INT(tt_query_lance_view(root, m2, "vecs", &fresh, &err), 0);
	CHECK(access(old, F_OK) != 0);
	CHECK(access(stage, F_OK) != 0);
	CHECK(access(fresh, F_OK) == 0);
	char *a = at(root, "data/a.lance");
	CHECK(access(a, F_OK) == 0);
	/* a view in use is touched, so it stays */
	char *again = NULL;
	CHECK_INT(tt_query_lance_view(root, m1, "vecs", &again, &err), 0);
	CHECK(utimensat(AT_FDCWD, again, long_ago, AT_SYMLINK_NOFOLLOW) == 0);
	char *third = NULL;
	CHECK_INT(tt_query_lance_view(root, m1, "vecs", &third, &err), 0); /* reused: touched */
	struct stat st;
	CHECK(lstat(third, &st) == 0 && time(NULL) - st.st_mtime < 3600);
	free(root), free(m1), free(m2), free(old), free(fresh), free(base), free(stage), free(a), free(again);
	free(third);
	tt_error_clear(&err);
}
