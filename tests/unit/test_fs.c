/* Unit tests for util/fs: atomic and exclusive writes, journal appends,
 * capped reads, directories, and path arithmetic. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "util/fs.h"
#include "util/mem.h"

/* Number of entries in dir (without . and ..); names containing ".tmp"
 * are counted in *tmps. */
static int count_entries(const char *dir, int *tmps)
{
	int n = 0;
	*tmps = 0;
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		n++;
		if (strstr(e->d_name, ".tmp"))
			(*tmps)++;
	}
	closedir(d);
	return n;
}

static char *path_in(const char *rel)
{
	return tt_path_join(tt_test_tmpdir(), rel);
}

/* Read a file; returns a malloc'd string or NULL. */
static char *slurp(const char *path)
{
	tt_buf b = TT_BUF_INIT;
	tt_error err = TT_ERROR_INIT;
	if (tt_read_file(path, &b, 0, &err) != 0) {
		tt_error_clear(&err);
		tt_buf_release(&b);
		return NULL;
	}
	return tt_buf_detach(&b);
}

TT_TEST(atomic_write_creates_and_replaces)
{
	tt_error err = TT_ERROR_INIT;
	char *dir = path_in("sub/dir");
	char *p = path_in("sub/dir/file.toml");
	CHECK_OK(tt_write_file_atomic(p, "one\n", 4, 0644, &err));
	char *s = slurp(p);
	CHECK_STR(s, "one\n");
	free(s);
	CHECK_OK(tt_write_file_atomic(p, "second version\n", 15, 0600, &err));
	s = slurp(p);
	CHECK_STR(s, "second version\n");
	free(s);
	struct stat st;
	CHECK(stat(p, &st) == 0);
	mode_t um = umask(022);
	umask(um);
	CHECK_INT(st.st_mode & 0777, 0600 & ~um);
	int tmps;
	CHECK_INT(count_entries(dir, &tmps), 1);
	CHECK_INT(tmps, 0);
	/* Empty content is a valid file. */
	CHECK_OK(tt_write_file_atomic(p, "", 0, 0644, &err));
	s = slurp(p);
	CHECK_STR(s, "");
	free(s);
	free(p);
	free(dir);
}

TT_TEST(atomic_write_failure_leaves_no_temp)
{
	tt_error err = TT_ERROR_INIT;
	char *dir = path_in("d");
	char *target = path_in("d/target");
	char *inner = path_in("d/target/inner");
	/* The target is a non-empty directory: the rename must fail. */
	CHECK_OK(tt_mkdirs(inner, 0755, &err));
	int rc = tt_write_file_atomic(target, "x", 1, 0644, &err);
	CHECK(rc < 0);
	CHECK(err.message && strstr(err.message, target));
	tt_error_clear(&err);
	int tmps;
	CHECK_INT(count_entries(dir, &tmps), 1);
	CHECK_INT(tmps, 0);
	/* Not a file name. */
	char *slash = path_in("d/");
	CHECK_INT(tt_write_file_atomic(slash, "x", 1, 0644, &err), TT_EUSAGE);
	tt_error_clear(&err);
	free(slash);
	free(inner);
	free(target);
	free(dir);
}

TT_TEST(exclusive_create_refuses_existing)
{
	tt_error err = TT_ERROR_INIT;
	char *p = path_in("objs/ab/cdef");
	char *dir = path_in("objs/ab");
	CHECK_OK(tt_write_file_exclusive(p, "first", 5, 0444, &err));
	CHECK_INT(tt_write_file_exclusive(p, "second", 6, 0444, &err), TT_EEXISTS);
	CHECK(err.message && strstr(err.message, p));
	tt_error_clear(&err);
	char *s = slurp(p);
	CHECK_STR(s, "first");
	free(s);
	int tmps;
	CHECK_INT(count_entries(dir, &tmps), 1);
	CHECK_INT(tmps, 0);
	/* A dangling symlink is "present" too. */
	char *link = path_in("objs/ab/link");
	CHECK(symlink("nowhere", link) == 0);
	CHECK_INT(tt_write_file_exclusive(link, "x", 1, 0644, &err), TT_EEXISTS);
	tt_error_clear(&err);
	free(link);
	free(dir);
	free(p);
}

TT_TEST(append_repairs_torn_last_line)
{
	tt_error err = TT_ERROR_INIT;
	char *p = path_in("journal/log.jsonl");
	CHECK_OK(tt_append_fsync(p, "{\"a\":1}\n", 8, 0644, &err));
	CHECK_OK(tt_append_fsync(p, "{\"b\":2}\n", 8, 0644, &err));
	char *s = slurp(p);
	CHECK_STR(s, "{\"a\":1}\n{\"b\":2}\n");
	free(s);
	/* A crash in the middle of a record: the next starts on a new line. */
	CHECK_OK(tt_write_file_atomic(p, "{\"a\":1}\n{\"b\":", 13, 0644, &err));
	CHECK_OK(tt_append_fsync(p, "{\"c\":3}\n", 8, 0644, &err));
	s = slurp(p);
	CHECK_STR(s, "{\"a\":1}\n{\"b\":\n{\"c\":3}\n");
	free(s);
	/* A record without its newline gets one. */
	CHECK_OK(tt_append_fsync(p, "tail", 4, 0644, &err));
	s = slurp(p);
	CHECK_STR(s, "{\"a\":1}\n{\"b\":\n{\"c\":3}\ntail\n");
	free(s);
	/* An empty file needs no repair. */
	char *q = path_in("empty");
	CHECK_OK(tt_write_file_atomic(q, "", 0, 0644, &err));
	CHECK_OK(tt_append_fsync(q, "x\n", 2, 0644, &err));
	s = slurp(q);
	CHECK_STR(s, "x\n");
	free(s);
	free(q);
	free(p);
}

TT_TEST(read_file_is_capped)
{
	tt_error err = TT_ERROR_INIT;
	char *p = path_in("data");
	char data[100];
	memset(data, 'x', sizeof data);
	CHECK_OK(tt_write_file_atomic(p, data, sizeof data, 0644, &err));
	tt_buf b = TT_BUF_INIT;
	CHECK_OK(tt_read_file(p, &b, 100, &err));
	CHECK_INT(b.len, 100);
	tt_buf_reset(&b);
	CHECK_INT(tt_read_file(p, &b, 99, &err), TT_ELIMIT);
	CHECK(strstr(err.message, "99-byte limit"));
	CHECK_INT(b.len, 0);
	tt_error_clear(&err);
	/* The buffer's own cap counts too. */
	tt_buf small;
	tt_buf_init(&small, 50);
	CHECK_INT(tt_read_file(p, &small, 0, &err), TT_ELIMIT);
	CHECK_INT(small.len, 0);
	CHECK_INT(small.failed, 0);  /* reported, not left sticky */
	tt_error_clear(&err);
	/* ... also when it has spare room beyond its cap from earlier use. */
	tt_buf_put(&small, data, 40);
	tt_buf_reset(&small);
	CHECK(small.cap > 51);
	CHECK_INT(tt_read_file(p, &small, 0, &err), TT_ELIMIT);
	CHECK_INT(small.len, 0);
	tt_error_clear(&err);
	tt_buf_release(&small);
	/* Appends after what the buffer holds. */
	tt_buf_reset(&b);
	tt_buf_puts(&b, "head:");
	CHECK_OK(tt_read_file(p, &b, 0, &err));
	CHECK_INT(b.len, 105);
	CHECK(!memcmp(b.ptr, "head:xxx", 8));
	tt_buf_release(&b);
	/* A bigger file than one read chunk, through a non-regular file. */
	tt_buf big = TT_BUF_INIT;
	CHECK_OK(tt_read_file("/proc/self/status", &big, 0, &err));
	CHECK(big.len > 0 && strstr(big.ptr, "Name:"));
	tt_buf_release(&big);
	char *missing = path_in("missing");
	CHECK_INT(tt_read_file(missing, &b, 0, &err), TT_ENOTFOUND);
	CHECK(strstr(err.message, missing));
	tt_error_clear(&err);
	CHECK_INT(tt_read_file(tt_test_tmpdir(), &b, 0, &err), TT_EIO);
	tt_error_clear(&err);
	tt_buf_release(&b);
	free(missing);
	free(p);
}

TT_TEST(mkdirs_and_predicates)
{
	tt_error err = TT_ERROR_INIT;
	char *deep = path_in("a/b//c/d/");
	char *d = path_in("a/b/c/d");
	CHECK_OK(tt_mkdirs(deep, 0755, &err));
	CHECK(tt_is_dir(d));
	CHECK_OK(tt_mkdirs(d, 0755, &err));  /* exists: fine */
	CHECK_OK(tt_mkdirs("", 0755, &err));
	char *f = path_in("a/file");
	CHECK_OK(tt_write_file_atomic(f, "x", 1, 0644, &err));
	CHECK(tt_is_file(f));
	CHECK(!tt_is_dir(f));
	CHECK(tt_exists(f));
	char *under = path_in("a/file/sub");
	CHECK(tt_mkdirs(under, 0755, &err) < 0);
	tt_error_clear(&err);
	char *dangling = path_in("a/dangling");
	CHECK(symlink("nowhere", dangling) == 0);
	CHECK(tt_exists(dangling));
	CHECK(!tt_is_file(dangling));
	CHECK(!tt_is_dir(dangling));
	CHECK(!tt_exists(under));
	/* unlink: present, absent, under a file. */
	CHECK_OK(tt_unlink(f, &err));
	CHECK(!tt_exists(f));
	CHECK_OK(tt_unlink(f, &err));
	CHECK_OK(tt_write_file_atomic(f, "x", 1, 0644, &err));
	CHECK_OK(tt_unlink(under, &err));
	CHECK(tt_unlink(d, &err) < 0);  /* a directory is not a file */
	tt_error_clear(&err);
	free(dangling);
	free(under);
	free(f);
	free(d);
	free(deep);
}

TT_TEST(prune_empty_dirs_stops_at_stop)
{
	tt_error err = TT_ERROR_INIT;
	char *root = path_in("root");
	char *c = path_in("root/a/b/c");
	char *a = path_in("root/a");
	char *b = path_in("root/a/b");
	CHECK_OK(tt_mkdirs(c, 0755, &err));
	tt_prune_empty_dirs(c, root);
	CHECK(!tt_exists(a));
	CHECK(tt_is_dir(root));
	/* A non-empty directory stops the walk. */
	CHECK_OK(tt_mkdirs(c, 0755, &err));
	char *keep = path_in("root/a/keep");
	CHECK_OK(tt_write_file_atomic(keep, "k", 1, 0644, &err));
	tt_prune_empty_dirs(c, root);
	CHECK(!tt_exists(b));
	CHECK(tt_is_dir(a));
	/* stop not above dir: nothing is removed. */
	char *other = path_in("other/x");
	CHECK_OK(tt_mkdirs(other, 0755, &err));
	tt_prune_empty_dirs(other, root);
	CHECK(tt_is_dir(other));
	/* dir == stop: nothing. */
	tt_prune_empty_dirs(other, other);
	CHECK(tt_is_dir(other));
	/* Lexically unnormalised arguments. */
	char *messy = path_in("root/./a/../a/n1/n2/");
	char *n1 = path_in("root/a/n1");
	CHECK_OK(tt_mkdirs(messy, 0755, &err));
	char *root_slash = path_in("root/");
	tt_prune_empty_dirs(messy, root_slash);
	CHECK(!tt_exists(n1));
	CHECK(tt_is_dir(a));
	free(root_slash);
	free(n1);
	free(messy);
	free(other);
	free(keep);
	free(b);
	free(a);
	free(c);
	free(root);
}

TT_TEST(path_join_and_dirname)
{
	static const char *const join[][3] = {
		{ "a", "b", "a/b" },     { "a/", "b", "a/b" },   { "a//", "/b", "a/b" },
		{ "/", "b", "/b" },      { "", "b", "b" },       { "a", "", "a" },
		{ "/a/b", "c/d", "/a/b/c/d" }, { "a/", "", "a" }, { "//", "x", "/x" },
	};
	for (size_t i = 0; i < sizeof join / sizeof join[0]; i++) {
		char *r = tt_path_join(join[i][0], join[i][1]);
		CHECK_STR(r, join[i][2]);
		free(r);
	}
	static const char *const dn[][2] = {
		{ "a/b", "a" },   { "a", "." },    { "/a", "/" },     { "/", "/" },
		{ "a/b/", "a" },  { "a//b", "a" }, { "/a/b/c", "/a/b" }, { "", "." },
		{ "//a", "/" },   { "./x", "." },  { "../x/y", "../x" },
	};
	for (size_t i = 0; i < sizeof dn / sizeof dn[0]; i++) {
		char *r = tt_dirname(dn[i][0]);
		CHECK_STR(r, dn[i][1]);
		free(r);
	}
}

/* Expected values checked against python3 -c 'os.path.normpath(p)'. */
TT_TEST(path_normalize_matches_python)
{
	static const char *const t[][2] = {
		{ "", "." },               { ".", "." },             { "..", ".." },
		{ "/", "/" },              { "//", "//" },           { "///", "/" },
		{ "////a", "/a" },         { "//a//b/", "//a/b" },   { "/..", "/" },
		{ "/../..", "/" },         { "a/..", "." },          { "a/../..", ".." },
		{ "../a/../b", "../b" },   { "./a/./b/.", "a/b" },   { "a//b", "a/b" },
		{ "a/b/c/../../..", "." }, { "../../x", "../../x" }, { "/a/b/../../..", "/" },
		{ "//..", "//" },          { "//a/..", "//" },       { "..//..", "../.." },
		{ ".../x", ".../x" },      { "a/./../b", "b" },      { "a/b/", "a/b" },
		{ "/a/./b/../c", "/a/c" }, { "a/../../b/..", ".." }, { "..a/../b", "b" },
		{ "a/..b/..", "a" },       { "/./", "/" },           { "./", "." },
		{ "//./a", "//a" },        { "x/../../../y", "../../y" },
	};
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
		char *r = tt_path_normalize(t[i][0]);
		CHECK_MSG(r && !strcmp(r, t[i][1]), "normalize(\"%s\") = \"%s\", want \"%s\"", t[i][0],
			  r ? r : "(null)", t[i][1]);
		free(r);
	}
}

/*
 * A tree with symlinks; expected values checked against python3's
 * os.path.realpath on the same tree (tests/e2e/test_paths_compat.py does
 * the comparison live).
 */
TT_TEST(realpath_matches_python)
{
	tt_error err = TT_ERROR_INIT;
	char base[PATH_MAX];
	CHECK(realpath(tt_test_tmpdir(), base) != NULL);
	char *old = tt_getcwd();
	CHECK(old != NULL);
	CHECK(chdir(base) == 0);
	CHECK_OK(tt_mkdirs("a/b/c", 0755, &err));
	CHECK_OK(tt_mkdirs("d", 0755, &err));
	CHECK_OK(tt_write_file_atomic("a/f", "", 0, 0644, &err));
	CHECK(symlink("a/b", "l1") == 0);
	CHECK(symlink("loop2", "loop1") == 0);
	CHECK(symlink("loop1", "loop2") == 0);
	CHECK(symlink("../d", "a/b/up") == 0);
	CHECK(symlink("self/x", "self") == 0);
	CHECK(symlink("missing/deeper", "dangling") == 0);
	CHECK(symlink(".", "dot") == 0);
	CHECK(symlink("l1/../c", "rel2") == 0);
	CHECK(symlink("a/f", "fl") == 0);
	char *abs_target = tt_path_join(base, "a");
	CHECK(symlink(abs_target, "abs") == 0);
	free(abs_target);

	static const char *const t[][2] = {
		{ "", "" },                    { ".", "" },
		{ "l1", "/a/b" },              { "l1/c", "/a/b/c" },
		{ "l1/..", "/a" },             { "l1/../c", "/a/c" },
		{ "loop1", "/loop1" },         { "loop1/x/y", "/loop1/x/y" },
		{ "loop2/../z", "/z" },        { "a/b/up/../..", "" },
		{ "abs/b/c", "/a/b/c" },       { "self", "/self/x" },
		{ "self/a", "/self/x/a" },     { "dangling", "/missing/deeper" },
		{ "dangling/../q", "/missing/q" }, { "dot/dot/a", "/a" },
		{ "rel2", "/a/c" },            { "fl/x", "/a/f/x" },
		{ "fl/..", "/a" },             { "nonexist/../a", "/a" },
		{ "nonexist/x/../y", "/nonexist/y" }, { "a/f/../b", "/a/b" },
		{ "./l1//c/", "/a/b/c" },
	};
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
		char *want = tt_asprintf("%s%s", base, t[i][1]);
		char *r = tt_realpath(t[i][0]);
		int ok = r && !strcmp(r, want);
		if (!ok)
			tt_test_fail(__FILE__, __LINE__, "realpath(\"%s\") = \"%s\", want \"%s\"", t[i][0],
				     r ? r : "(null)", want);
		free(r);
		free(want);
		if (!ok)
			break;
	}
	/* Absolute input, and ".." above the root. */
	char *abs_in = tt_asprintf("%s/l1/../../../%s/l1", base, strrchr(base, '/') + 1);
	char *r = tt_realpath(abs_in);
	char *want = tt_asprintf("%s/a/b", base);
	int ok = r && !strcmp(r, want);
	free(r);
	free(want);
	free(abs_in);
	r = tt_realpath("/../..");
	ok = ok && r && !strcmp(r, "/");
	free(r);
	CHECK(chdir(old) == 0);
	free(old);
	CHECK(ok);
}

TT_TEST(getcwd_is_absolute)
{
	char *cwd = tt_getcwd();
	CHECK(cwd && cwd[0] == '/');
	free(cwd);
}

TT_TEST(atomic_temp_names)
{
	/* The names open_temp makes, and nothing else: the sweep after a crash
	 * removes only these. */
	CHECK(tt_is_atomic_temp(".a.toml.0123456789abcdef.tmp"));
	CHECK(tt_is_atomic_temp("..gitignore.fedcba9876543210.tmp"));
	CHECK(!tt_is_atomic_temp("a.toml.0123456789abcdef.tmp"));
	CHECK(!tt_is_atomic_temp(".a.toml.tmp"));
	CHECK(!tt_is_atomic_temp(".a.toml.0123456789ABCDEF.tmp"));
	CHECK(!tt_is_atomic_temp(".a.toml.0123456789abcde.tmp"));
	CHECK(!tt_is_atomic_temp(".0123456789abcdef.tmp"));
	CHECK(!tt_is_atomic_temp(".a.toml.0123456789abcdef.tmp.toml"));
	CHECK(!tt_is_atomic_temp(""));
}
