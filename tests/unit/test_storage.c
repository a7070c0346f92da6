/* Unit tests: storage/ (the store interface, the local store, URIs). */
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "store_conformance.h"
#include "storage/open.h"
#include "storage/store.h"
#include "util/fs.h"
#include "util/mem.h"

TT_TEST(local_store_conformance)
{
	tt_error err = TT_ERROR_INIT;
	tt_store *s = NULL;
	char *dir = tt_path_join(tt_test_tmpdir(), "store");
	CHECK_OK(tt_store_local_open(dir, true, &s, &err));
	CHECK_INT(tt_store_conformance_run(s, "local"), 0);
	tt_store_close(s);
	free(dir);
}

/* The conformance suite again with the local store's one-directory
 * list_names taken away, so the names cut from a listing (what every
 * other store does) are held to the same checks. */
TT_TEST(local_store_conformance_with_names_cut_from_a_listing)
{
	tt_error err = TT_ERROR_INIT;
	tt_store *s = NULL;
	tt_store_ops ops;
	char *dir = tt_path_join(tt_test_tmpdir(), "store-cut");
	CHECK_OK(tt_store_local_open(dir, true, &s, &err));
	const tt_store_ops *own = s->ops;
	ops = *own;
	ops.list_names = NULL;
	ops.delete_tree = NULL;
	ops.has_dir = NULL;
	ops.delete_all = NULL;
	s->ops = &ops;
	CHECK_INT(tt_store_conformance_run(s, "local, names cut"), 0);
	s->ops = own;
	tt_store_close(s);
	free(dir);
}

/* list_names reads one directory: empty subdirectories count, staged
 * temporaries do not; has_dir sees an empty directory too. */
TT_TEST(local_store_list_names_reads_one_directory)
{
	tt_error err = TT_ERROR_INIT;
	tt_store *s = NULL;
	tt_store_page p = { 0 };
	char *empty = tt_path_join(tt_test_tmpdir(), "n/empty");
	char *staged = tt_path_join(tt_test_tmpdir(), "n/blob#0123456789");
	CHECK_OK(tt_store_local_open(tt_test_tmpdir(), false, &s, &err));
	CHECK_OK(tt_store_put(s, "n/blob", "1", 1, NULL, &err));
	CHECK_OK(tt_store_put(s, "n/deep/er/x", "1", 1, NULL, &err));
	CHECK_OK(tt_mkdirs(empty, 0777, &err));
	CHECK_OK(tt_write_file_atomic(staged, "partial", 7, 0644, &err));
	CHECK_OK(tt_store_list_names(s, "n", &p, &err));
	CHECK_INT(p.n, 3);
	bool blob = false, deep = false, emp = false;
	for (size_t i = 0; i < p.n; i++) {
		blob |= strcmp(p.items[i].key, "blob") == 0;
		deep |= strcmp(p.items[i].key, "deep") == 0;
		emp |= strcmp(p.items[i].key, "empty") == 0;
	}
	CHECK(blob && deep && emp);
	/* locally a directory is there even with no key under it */
	CHECK(tt_store_has_dir(s, "n/empty"));
	CHECK(!tt_store_has_dir(s, "n/blob"));
	tt_store_page_release(&p);
	CHECK_OK(tt_store_list_names(s, "n/blob", &p, &err)); /* a blob, not a directory */
	CHECK_INT(p.n, 0);
	tt_store_close(s);
	free(empty);
	free(staged);
}

/* delete_tree on a local directory takes what interrupted writes left
 * and the directories themselves. */
TT_TEST(local_store_delete_tree_takes_temporaries_and_directories)
{
	tt_error err = TT_ERROR_INIT;
	tt_store *s = NULL;
	char *dir = tt_path_join(tt_test_tmpdir(), "d");
	char *staged = tt_path_join(tt_test_tmpdir(), "d/v/blob#0123456789");
	char *old = tt_path_join(tt_test_tmpdir(), "d/v/.blob.0123456789abcdef.tmp");
	char *empty = tt_path_join(tt_test_tmpdir(), "d/w/x");
	CHECK_OK(tt_store_local_open(tt_test_tmpdir(), false, &s, &err));
	CHECK_OK(tt_store_put(s, "d/v/blob", "1", 1, NULL, &err));
	CHECK_OK(tt_write_file_atomic(staged, "partial", 7, 0644, &err));
	CHECK_OK(tt_write_file_atomic(old, "partial", 7, 0644, &err));
	CHECK_OK(tt_mkdirs(empty, 0777, &err));
	CHECK_OK(tt_store_delete_tree(s, "d", &err));
	CHECK(!tt_exists(dir));
	tt_store_close(s);
	free(dir);
	free(staged);
	free(old);
	free(empty);
}

TT_TEST(local_store_etag_is_inode_mtime_size)
{
	tt_error err = TT_ERROR_INIT;
	tt_store *s = NULL;
	tt_store_meta m = { 0 };
	struct stat st;
	char want[80], *path;
	CHECK_OK(tt_store_local_open(tt_test_tmpdir(), false, &s, &err));
	CHECK_OK(tt_store_put(s, "d/blob", "hello", 5, &m, &err));
	path = tt_path_join(tt_test_tmpdir(), "d/blob");
	CHECK(stat(path, &st) == 0);
	snprintf(want, sizeof want, "%" PRIx64 "-%" PRIx64 "-5", (uint64_t)st.st_ino,
		 (uint64_t)st.st_mtim.tv_sec * 1000000u + (uint64_t)st.st_mtim.tv_nsec / 1000u);
	CHECK_STR(m.etag, want);
	CHECK_INT(m.size, 5);
	CHECK(!m.version);
	tt_store_meta_release(&m);
	tt_store_close(s);
	free(path);
}

TT_TEST(local_store_list_skips_temporaries_and_dirs)
{
	tt_error err = TT_ERROR_INIT;
	tt_store *s = NULL;
	tt_store_page p = { 0 };
	char *tmp = tt_path_join(tt_test_tmpdir(), "x/.blob.ab12.tmp");
	char *sub = tt_path_join(tt_test_tmpdir(), "x/emptydir");
	CHECK_OK(tt_store_local_open(tt_test_tmpdir(), false, &s, &err));
	CHECK_OK(tt_store_put(s, "x/blob", "1", 1, NULL, &err));
	CHECK_OK(tt_write_file_atomic(tmp, "partial", 7, 0644, &err));
	CHECK_OK(tt_mkdirs(sub, 0755, &err));
	CHECK_OK(tt_store_list(s, "", NULL, 0, &p, &err));
	CHECK_INT(p.n, 1);
	CHECK_STR(p.items[0].key, "x/blob");
	tt_store_page_release(&p);
	/* a directory is not a blob */
	tt_store_meta m;
	CHECK_INT(tt_store_head(s, "x/emptydir", NULL, &m, &err), TT_ENOTFOUND);
	tt_error_clear(&err);
	tt_store_close(s);
	free(tmp);
	free(sub);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The local store skips names and whole directories that cannot hold a
 * key past the token or under the prefix: for every prefix and every
 * token (each key, and strings between and around them), both list and
 * list_keys give exactly the keys a filter of all of them gives, metadata
 * only from list.  A symlink to a file is a blob; to a directory, one
 * that is walked. */
TT_TEST(local_store_list_by_prefix_and_token_matches_a_filter)
{
	tt_error err = TT_ERROR_INIT;
	tt_store *s = NULL;
	static const char *const keys[] = {
		"a-", "a-b", "a.b/c", "a/b", "a/b0", "a/bb", "a/bc/d", "a0", "ab/c", "b/a/x", "b/a/y",
		"b/ab", "b/b", "c/d/e/f", "c/d/ef", "c/d0", "zz",
	};
	enum { NK = sizeof keys / sizeof keys[0] };
	char *dir = tt_path_join(tt_test_tmpdir(), "ranges");
	CHECK_OK(tt_store_local_open(dir, true, &s, &err));
	for (size_t i = 0; i < NK; i++) {
		if (strcmp(keys[i], "a0") == 0)
			continue; /* a symlink, below */
		CHECK_OK(tt_store_put(s, keys[i], keys[i], strlen(keys[i]), NULL, &err));
	}
	{
		/* "a0" a symlink to a file; "sym" to the directory c/ */
		char *a0 = tt_path_join(dir, "a0"), *c = tt_path_join(dir, "sym");
		CHECK(symlink("zz", a0) == 0);
		CHECK(symlink("c", c) == 0);
		free(a0);
		free(c);
	}
	/* what the store holds: the keys (a0 through its link) and sym/...
	 * (through the link to c/) */
	const char *all[NK + 8];
	size_t nall = 0;
	for (size_t i = 0; i < NK; i++)
		all[nall++] = keys[i];
	all[nall++] = "sym/d/e/f";
	all[nall++] = "sym/d/ef";
	all[nall++] = "sym/d0";
	qsort(all, nall, sizeof *all, cmp_str);
	static const char *const prefixes[] = { "", "a", "a/", "a/b", "a/b/", "b/", "b/a", "c/d", "s", "sym/d/", "zz", "zzz" };
	static const char *const between[] = { "", "0", "a", "a,", "a-a", "a.", "a/", "a/a", "a/b/", "a/b/c",
					       "a/c", "a1", "b", "b/a", "b/a/", "b/a/x0", "c/d/e", "c/d/e0", "c/e",
					       "sym", "sym/d", "z", "zzz" };
	const char *tokens[NK + 8 + sizeof between / sizeof between[0] + 1];
	size_t nt = 0;
	tokens[nt++] = NULL;
	for (size_t i = 0; i < nall; i++)
		tokens[nt++] = all[i];
	for (size_t i = 0; i < sizeof between / sizeof between[0]; i++)
		tokens[nt++] = between[i];
	for (size_t k = 0; k < sizeof prefixes / sizeof prefixes[0]; k++)
		for (size_t t = 0; t < nt; t++)
			for (int keys_only = 0; keys_only < 2; keys_only++) {
				tt_store_page p = { 0 };
				const char *pre = prefixes[k], *tok = tokens[t];
				CHECK_OK(keys_only ? tt_store_list_keys(s, pre, tok, SIZE_MAX, &p, &err)
						   : tt_store_list(s, pre, tok, SIZE_MAX, &p, &err));
				size_t j = 0;
				for (size_t i = 0; i < nall; i++) {
					if (strncmp(all[i], pre, strlen(pre)) != 0 || (tok && strcmp(all[i], tok) <= 0))
						continue;
					CHECK_MSG(j < p.n && strcmp(p.items[j].key, all[i]) == 0,
						  "prefix '%s' token '%s'%s: expected %s at %zu, got %s", pre,
						  tok ? tok : "(none)", keys_only ? " keys only" : "", all[i], j,
						  j < p.n ? p.items[j].key : "(end)");
					if (j < p.n && !keys_only)
						CHECK(p.items[j].meta.etag && p.items[j].meta.size > 0);
					j++;
				}
				CHECK_MSG(j == p.n, "prefix '%s' token '%s': %zu keys, expected %zu", pre,
					  tok ? tok : "(none)", p.n, j);
				tt_store_page_release(&p);
			}
	tt_store_close(s);
	free(dir);
}

TT_TEST(local_store_list_skips_leftover_temporaries_of_both_forms)
{
	tt_error err = TT_ERROR_INIT;
	tt_store *s = NULL;
	tt_store_page p = { 0 };
	/* what an interrupted write leaves: the staged form and the older one */
	char *staged = tt_path_join(tt_test_tmpdir(), "t/blob#0123456789012345");
	char *old = tt_path_join(tt_test_tmpdir(), "t/.blob.0123456789abcdef.tmp");
	CHECK_OK(tt_store_local_open(tt_test_tmpdir(), false, &s, &err));
	CHECK_OK(tt_store_put(s, "t/blob", "1", 1, NULL, &err));
	CHECK_OK(tt_write_file_atomic(staged, "partial", 7, 0644, &err));
	CHECK_OK(tt_write_file_atomic(old, "partial", 7, 0644, &err));
	CHECK_OK(tt_store_list(s, "t/", NULL, 0, &p, &err));
	CHECK_INT(p.n, 1);
	CHECK_STR(p.items[0].key, "t/blob");
	tt_store_page_release(&p);
	/* a '#' not followed by digits only is an ordinary key */
	CHECK_OK(tt_store_put(s, "t/a#b", "2", 1, NULL, &err));
	CHECK_OK(tt_store_list(s, "t/", NULL, 0, &p, &err));
	CHECK_INT(p.n, 2);
	CHECK_STR(p.items[0].key, "t/a#b");
	tt_store_page_release(&p);
	CHECK(tt_is_staged_temp("x#1"));
	CHECK(!tt_is_staged_temp("x#"));
	CHECK(!tt_is_staged_temp("#1"));
	CHECK(!tt_is_staged_temp("x#1a"));
	tt_store_close(s);
	free(staged);
	free(old);
}

TT_TEST(local_store_put_replaces_whole_and_leaves_no_temporary)
{
	tt_error err = TT_ERROR_INIT;
	tt_store *s = NULL;
	tt_buf b = TT_BUF_INIT;
	char *dir = tt_path_join(tt_test_tmpdir(), "r");
	DIR *d;
	struct dirent *de;
	int names = 0;
	CHECK_OK(tt_store_local_open(tt_test_tmpdir(), false, &s, &err));
	CHECK_OK(tt_store_put(s, "r/blob", "first version", 13, NULL, &err));
	CHECK_OK(tt_store_put(s, "r/blob", "2nd", 3, NULL, &err));
	CHECK_OK(tt_store_put_if_absent(s, "r/new", "n", 1, NULL, &err));
	CHECK_OK(tt_store_get(s, "r/blob", NULL, &b, NULL, &err));
	CHECK_INT(b.len, 3);
	CHECK(memcmp(b.ptr, "2nd", 3) == 0);
	tt_buf_release(&b);
	d = opendir(dir);
	CHECK(d != NULL);
	while (d && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		CHECK(!strcmp(de->d_name, "blob") || !strcmp(de->d_name, "new"));
		names++;
	}
	if (d)
		closedir(d);
	CHECK_INT(names, 2);
	tt_store_close(s);
	free(dir);
}

TT_TEST(local_store_open_missing_dir)
{
	tt_error err = TT_ERROR_INIT;
	tt_store *s = NULL;
	char *dir = tt_path_join(tt_test_tmpdir(), "nope");
	CHECK_INT(tt_store_local_open(dir, false, &s, &err), TT_ENOTFOUND);
	CHECK(s == NULL);
	CHECK(strstr(err.message, "nope"));
	tt_error_clear(&err);
	free(dir);
}

static void uri_case(const char *uri, tt_store_scheme kind, const char *bucket, const char *account,
		     const char *key)
{
	tt_error err = TT_ERROR_INIT;
	tt_store_uri u;
	CHECK_MSG(tt_store_uri_parse(uri, &u, &err) == 0, "%s: %s", uri, err.message);
	CHECK_MSG(u.kind == kind, "%s: kind %d", uri, (int)u.kind);
	CHECK_STR(u.bucket, bucket);
	if (account)
		CHECK_STR(u.account, account);
	else
		CHECK(!u.account);
	CHECK_STR(u.key, key);
	tt_store_uri_release(&u);
}

TT_TEST(uri_object_stores)
{
	uri_case("s3://bkt/a/b.parquet", TT_STORE_S3, "bkt", NULL, "a/b.parquet");
	uri_case("S3A://bkt", TT_STORE_S3, "bkt", NULL, "");
	uri_case("s3://bkt/", TT_STORE_S3, "bkt", NULL, "");
	uri_case("s3://bkt//x/y/?versionId=1#f", TT_STORE_S3, "bkt", NULL, "x/y/");
	uri_case("gs://b/p/", TT_STORE_GCS, "b", NULL, "p/");
	uri_case("gcs://b/p", TT_STORE_GCS, "b", NULL, "p");
	uri_case("az://cont/p", TT_STORE_AZURE, "cont", NULL, "p");
	uri_case("azure://cont/p", TT_STORE_AZURE, "cont", NULL, "p");
	uri_case("abfs://cont@acct.dfs.core.windows.net/d/t", TT_STORE_AZURE, "cont", "acct", "d/t");
	uri_case("abfss://cont@acct.dfs.core.windows.net", TT_STORE_AZURE, "cont", "acct", "");
	uri_case("https://host:9000/b/k", TT_STORE_HTTP, "host:9000", NULL, "b/k");
}

TT_TEST(uri_local)
{
	tt_error err = TT_ERROR_INIT;
	tt_store_uri u;
	char *want = tt_realpath(tt_test_tmpdir());
	char *uri = tt_asprintf("file://%s/./x/../y", tt_test_tmpdir());
	CHECK_OK(tt_store_uri_parse(uri, &u, &err));
	CHECK_INT(u.kind, TT_STORE_LOCAL);
	char *full = tt_asprintf("%s/y", want);
	CHECK_STR(u.path, full);
	CHECK(!u.bucket && !u.key);
	tt_store_uri_release(&u);
	CHECK_OK(tt_store_uri_parse("rel/dir/", &u, &err));
	CHECK_INT(u.kind, TT_STORE_LOCAL);
	CHECK_STR(u.path, "rel/dir");
	tt_store_uri_release(&u);
	free(want);
	free(uri);
	free(full);
}

static void uri_bad(const char *uri, const char *must, const char *never)
{
	tt_error err = TT_ERROR_INIT;
	tt_store_uri u;
	CHECK_MSG(tt_store_uri_parse(uri, &u, &err) == TT_ECONFIG, "%s accepted", uri);
	CHECK_MSG(strstr(err.message, must), "%s: %s", uri, err.message);
	if (never)
		CHECK_MSG(!strstr(err.message, never), "%s: leaks %s", uri, never);
	CHECK(!u.bucket && !u.key && !u.path);
	tt_error_clear(&err);
}

TT_TEST(uri_refused)
{
	uri_bad("ftp://host/x", "unsupported store URI scheme 'ftp'", NULL);
	uri_bad("s3:bucket/x", "needs '//'", NULL);
	uri_bad("s3:///x", "names no bucket", NULL);
	uri_bad("s3://AKIAX:hunter2@bkt/x", "credentials", "hunter2");
	uri_bad("gs://user@bkt/x", "credentials", "user");
	uri_bad("abfs://c:pw@acct.dfs.core.windows.net/x", "credentials", "pw");
	uri_bad("", "empty store URI", NULL);
}

TT_TEST(store_key_check)
{
	tt_error err = TT_ERROR_INIT;
	CHECK_OK(tt_store_key_check("a", &err));
	CHECK_OK(tt_store_key_check("a/b.c/..d/.e", &err));
	CHECK_INT(tt_store_key_check("a/../b", &err), TT_EUSAGE);
	CHECK(strstr(err.message, "a/../b"));
	tt_error_clear(&err);
}

/* ---- AWS credentials ---------------------------------------------------------- */

static void aws_env_clear(void)
{
	static const char *const names[] = { "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
					     "AWS_SESSION_TOKEN", "AWS_PROFILE",
					     "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE", "AWS_ROLE_ARN",
					     "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_SESSION_NAME",
					     "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
					     "AWS_CONTAINER_AUTHORIZATION_TOKEN", "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
					     "AWS_EC2_METADATA_SERVICE_ENDPOINT", "AWS_ENDPOINT_URL_STS", "AWS_ENDPOINT_URL",
					     NULL };
	for (const char *const *n = names; *n; n++)
		unsetenv(*n);
	/* Off an instance the metadata service is not there: do not wait for it. */
	setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
}

static void write_aws_files(const char *home)
{
	tt_error err = TT_ERROR_INIT;
	char *cred = tt_asprintf("%s/.aws/credentials", home), *conf = tt_asprintf("%s/.aws/config", home);
	static const char credentials[] =
		"# comment\n[default]\naws_access_key_id = AKDEFAULT\naws_secret_access_key = skdefault\n"
		"[lab]\n  aws_access_key_id=AKLAB  \naws_secret_access_key = sklab\n"
		"aws_session_token = toklab\n[assumer]\nrole_arn = arn:aws:iam::1:role/x\n";
	static const char config[] =
		"[default]\nregion = eu-north-1\n[profile lab]\nregion = ap-south-2\n"
		"[profile cfgonly]\naws_access_key_id = AKCFG\naws_secret_access_key = skcfg\n"
		"[profile nokeys]\nregion = us-west-1\n";
	tt_write_file_atomic(cred, credentials, sizeof credentials - 1, 0600, &err);
	tt_write_file_atomic(conf, config, sizeof config - 1, 0600, &err);
	tt_error_clear(&err);
	free(cred);
	free(conf);
}

static void aws_case(const char *options, const char *ak, const char *sk, const char *tok,
		     const char *region, const char *source)
{
	tt_error err = TT_ERROR_INIT;
	tt_aws_resolved r;
	json_t *o = options ? json_loads(options, 0, NULL) : NULL;
	CHECK_MSG(tt_aws_resolve(o, &r, &err) == 0, "%s: %s", options, err.message);
	json_decref(o);
	if (ak)
		CHECK_STR(r.access_key_id, ak);
	else
		CHECK_MSG(!r.access_key_id, "%s: keys from %s", options, r.source);
	if (sk)
		CHECK_STR(r.secret_access_key, sk);
	if (tok)
		CHECK_STR(r.session_token, tok);
	else
		CHECK(!r.session_token);
	if (region)
		CHECK_STR(r.region, region);
	if (source)
		CHECK_STR(r.source, source);
	else
		CHECK(!r.source);
	tt_aws_resolved_release(&r);
}

TT_TEST(aws_credentials_each_source_in_order)
{
	const char *home = tt_test_tmpdir();
	char *old_home = getenv("HOME") ? tt_strdup(getenv("HOME")) : NULL;
	aws_env_clear();
	setenv("HOME", home, 1);
	/* nothing anywhere: no credentials, not an error */
	aws_case(NULL, NULL, NULL, NULL, NULL, NULL);
	write_aws_files(home);
	/* the default profile */
	aws_case(NULL, "AKDEFAULT", "skdefault", NULL, "eu-north-1", "shared-file");
	/* the environment beats the shared files */
	setenv("AWS_ACCESS_KEY_ID", "AKENV", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "skenv", 1);
	setenv("AWS_SESSION_TOKEN", "tokenv", 1);
	aws_case(NULL, "AKENV", "skenv", "tokenv", NULL, "environment");
	/* a named profile beats the environment; its region from config */
	aws_case("{\"profile\": \"lab\"}", "AKLAB", "sklab", "toklab", "ap-south-2", "profile");
	aws_case("{\"aws_profile\": \"cfgonly\"}", "AKCFG", "skcfg", NULL, NULL, "profile");
	/* literal keys beat everything */
	aws_case("{\"access_key_id\": \"AKLIT\", \"secret_access_key\": \"sklit\", \"profile\": \"lab\"}",
		 "AKLIT", "sklit", NULL, NULL, "options");
	/* AWS_PROFILE picks the shared-file profile */
	unsetenv("AWS_ACCESS_KEY_ID");
	unsetenv("AWS_SECRET_ACCESS_KEY");
	unsetenv("AWS_SESSION_TOKEN");
	setenv("AWS_PROFILE", "lab", 1);
	aws_case(NULL, "AKLAB", "sklab", "toklab", "ap-south-2", "shared-file");
	aws_env_clear();
	if (old_home)
		setenv("HOME", old_home, 1);
	free(old_home);
}

static void aws_refused(const char *options, int code, const char *must)
{
	tt_error err = TT_ERROR_INIT;
	tt_aws_resolved r;
	json_t *o = json_loads(options, 0, NULL);
	CHECK_MSG(tt_aws_resolve(o, &r, &err) == code, "%s accepted", options);
	CHECK_MSG(strstr(err.message, must), "%s: %s", options, err.message);
	/* none of the files' secrets (nor the lab profile's key id); not merely
	 * "sk", which the test's own temporary directory may contain */
	static const char *const secrets[] = { "skdefault", "sklab", "skcfg", "toklab", "AKLAB" };
	for (size_t i = 0; err.message && i < sizeof secrets / sizeof *secrets; i++)
		CHECK_MSG(!strstr(err.message, secrets[i]), "%s leaks %s: %s", options, secrets[i], err.message);
	CHECK(!r.access_key_id && !r.secret_access_key);
	json_decref(o);
	tt_error_clear(&err);
}

TT_TEST(aws_credentials_refusals_name_no_secret)
{
	const char *home = tt_test_tmpdir();
	char *old_home = getenv("HOME") ? tt_strdup(getenv("HOME")) : NULL;
	aws_env_clear();
	setenv("HOME", home, 1);
	write_aws_files(home);
	aws_refused("{\"access_key_id\": \"AKONLY\"}", TT_ECONFIG, "without secret_access_key");
	aws_refused("{\"profile\": \"missing\"}", TT_ENOTFOUND, "'missing'");
	aws_refused("{\"profile\": \"nokeys\"}", TT_ECONFIG, "no aws_access_key_id");
	/* A role needs a source; STS's failures name the endpoint, never the keys. */
	aws_refused("{\"profile\": \"assumer\"}", TT_ECONFIG, "no source_profile");
	aws_refused("{\"role_arn\": \"arn:aws:iam::1:role/x\", \"profile\": \"nokeys\"}", TT_ECONFIG,
		    "no aws_access_key_id");
	aws_refused("{\"role_arn\": \"arn:aws:iam::1:role/x\", \"profile\": \"lab\", \"allow_http\": true, "
		    "\"sts_endpoint\": \"http://127.0.0.1:9\"}", TT_EBACKEND, "AWS STS at http://127.0.0.1:9");
	aws_refused("{\"role_arn\": \"arn:aws:iam::1:role/x\", \"profile\": \"lab\", "
		    "\"sts_endpoint\": \"http://127.0.0.1:9\"}", TT_ECONFIG, "http");
	if (old_home)
		setenv("HOME", old_home, 1);
	free(old_home);
}

TT_TEST(store_open_uri_local_and_unbuilt)
{
	tt_error err = TT_ERROR_INIT;
	tt_store *s = NULL;
	char *key = NULL;
	CHECK_OK(tt_store_open_uri(tt_test_tmpdir(), NULL, &s, &key, &err));
	CHECK_INT(s->kind, TT_STORE_LOCAL);
	CHECK_STR(key, "");
	tt_store_close(s);
	free(key);
	/* gs:// is built (opening touches no server); plain HTTP stores are not */
	CHECK_OK(tt_store_open_uri("gs://b/k", NULL, &s, &key, &err));
	CHECK_INT(s->kind, TT_STORE_GCS);
	CHECK_STR(key, "k");
	tt_store_close(s);
	free(key);
	s = NULL;
	key = NULL;
	CHECK_INT(tt_store_open_uri("https://example.com/k", NULL, &s, &key, &err), TT_ECAPABILITY);
	CHECK(strstr(err.message, "https://") && !s && !key);
	tt_error_clear(&err);
	/* az:// without an account or key is a config error naming the container */
	CHECK_INT(tt_store_open_uri("az://tt-c/k", NULL, &s, &key, &err), TT_ECONFIG);
	CHECK(strstr(err.message, "az://tt-c") && !s && !key);
	tt_error_clear(&err);
}
