/*
 * Unit tests: credentials reaching a backend through one call
 * (tt_backend_secrets_for): each source -- [backends.<kind>] committed and
 * local, the longest [uris."<prefix>"], [objects."<key>"] -- and the order
 * among them.
 */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "backends/backend.h"
#include "backends/registry.h"
#include "core/kinds.h"
#include "core/secrets.h"
#include "harness.h"

static const char secrets_toml[] =
	"[backends.memory]\n"
	"region = \"local-region\"\n"
	"[backends.memory.client]\n"
	"timeout = 5\n"
	"[uris.\"s3://lab/\"]\n"
	"profile = \"lab\"\n"
	"[uris.\"s3://lab/a/\"]\n"
	"profile = \"lab-a\"\n"
	"secret_access_key = \"uri-secret\"\n"
	"[uris.\"s3://lab/a/obj\"]\n"
	"access_key_id = \"exact-uri\"\n"
	"[objects.\"k1\"]\n"
	"profile = \"object-k1\"\n"
	"[objects.\"k2\"]\n"
	"profile = \"object-k2\"\n";

/* The options the backend gets for a locator, as compact JSON. */
static char *options_for(tt_backend *b, const char *locator_json)
{
	tt_error err = TT_ERROR_INIT;
	json_t *loc = json_loads(locator_json, 0, NULL), *out = NULL;
	char *s = NULL;
	if (loc && tt_backend_secrets_for(b, loc, &out, &err) == 0)
		s = json_dumps(out, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(loc);
	json_decref(out);
	tt_error_clear(&err);
	return s;
}

#define CHECK_OPTS(b, loc, want)                                \
	do {                                                    \
		char *got_ = options_for(b, loc);               \
		int same_ = got_ && strcmp(got_, want) == 0;    \
		if (!same_)                                     \
			tt_test_fail(__FILE__, __LINE__, "%s: %s != %s", loc, \
				     got_ ? got_ : "(null)", want);   \
		free(got_);                                     \
		if (!same_)                                     \
			return;                                 \
	} while (0)

TT_TEST(secrets_reach_the_backend_by_object_prefix_and_kind)
{
	tt_error err = TT_ERROR_INIT;
	tt_secrets sec;
	tt_backend *b = NULL;
	json_t *committed = json_pack("{s:s, s:{s:i, s:i}}", "region", "committed-region", "client",
				      "timeout", 1, "retries", 2);
	json_t *config = json_object();
	CHECK_OK(tt_secrets_parse(&sec, secrets_toml, strlen(secrets_toml), "secrets.toml", &err));
	/* what the engine does: committed [backends] under the local one */
	CHECK(tt_secrets_merge(config, committed) == 0);
	CHECK(tt_secrets_merge(config, tt_secrets_backend(&sec, "memory")) == 0);
	CHECK_OK(tt_backend_new(&b, tt_kind_find("memory"), config, NULL, NULL, &err));
	{
		const char *keys[] = { "k1", "k2", "k3" };
		json_t *l1 = json_pack("{s:s}", "uri", "s3://lab/a/obj");
		json_t *l2 = json_pack("{s:s}", "path", "/data/k2");
		json_t *l3 = json_pack("{s:s}", "uri", "s3://lab/zzz");
		const json_t *locs[] = { l1, l2, l3 };
		tt_backend_set_secret_rules(b, tt_secrets_rules(&sec, 3, keys, locs));
		json_decref(l1);
		json_decref(l2);
		json_decref(l3);
	}
	/* no rule: only the kind's options (tables merged field by field) */
	CHECK_OPTS(b, "{\"uri\": \"gs://elsewhere/x\"}",
		   "{\"client\":{\"retries\":2,\"timeout\":5},\"region\":\"local-region\"}");
	/* the longest matching prefix */
	CHECK_OPTS(b, "{\"uri\": \"s3://lab/b/x\"}",
		   "{\"client\":{\"retries\":2,\"timeout\":5},\"profile\":\"lab\",\"region\":\"local-region\"}");
	CHECK_OPTS(b, "{\"uri\": \"s3://lab/a/other\"}",
		   "{\"client\":{\"retries\":2,\"timeout\":5},\"profile\":\"lab-a\",\"region\":"
		   "\"local-region\",\"secret_access_key\":\"uri-secret\"}");
	/* an object's entry is the exact rule on its URI, over the [uris] one
	 * of the same URI, and beats every prefix */
	CHECK_OPTS(b, "{\"uri\": \"s3://lab/a/obj\"}",
		   "{\"access_key_id\":\"exact-uri\",\"client\":{\"retries\":2,\"timeout\":5},"
		   "\"profile\":\"object-k1\",\"region\":\"local-region\"}");
	/* a locator's path counts when it has no uri */
	CHECK_OPTS(b, "{\"path\": \"/data/k2\"}",
		   "{\"client\":{\"retries\":2,\"timeout\":5},\"profile\":\"object-k2\",\"region\":"
		   "\"local-region\"}");
	/* an object whose key has no entry: its prefix rule */
	CHECK_OPTS(b, "{\"uri\": \"s3://lab/zzz\"}",
		   "{\"client\":{\"retries\":2,\"timeout\":5},\"profile\":\"lab\",\"region\":\"local-region\"}");
	tt_backend_free(b);
	json_decref(committed);
	json_decref(config);
	tt_secrets_release(&sec);
}

TT_TEST(secrets_nothing_configured_is_empty)
{
	tt_error err = TT_ERROR_INIT;
	tt_backend *b = NULL;
	CHECK_OK(tt_backend_new(&b, tt_kind_find("memory"), NULL, NULL, NULL, &err));
	CHECK_OPTS(b, "{\"uri\": \"s3://lab/a\"}", "{}");
	CHECK_OPTS(b, "{}", "{}");
	tt_backend_free(b);
}
