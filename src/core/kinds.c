/* core/kinds.c - capability names and tiers, finding a kind in a table,
 * volatile state keys (see kinds.h); the table of kinds itself is
 * backends/registry.c. */
#include "core/kinds.h"

#include <string.h>

#include "util/mem.h"

static const char *const cap_names[TT_CAP_COUNT] = {
	"fingerprint", "addressable", "pin", "fork", "cheap_fingerprint",
	"retention_bound", "needs_quiescence", "atomic_ref", "diff", "history",
	"branch_is_storage", "promote", "merge", "create", "conditional_ref",
};

const char *tt_cap_name(unsigned bit_index)
{
	return bit_index < TT_CAP_COUNT ? cap_names[bit_index] : "?";
}

const char *tt_tier_name(unsigned caps)
{
	if (caps & TT_CAP_FORK)
		return "forkable";
	if (caps & TT_CAP_PIN)
		return "pinnable";
	if (caps & TT_CAP_ADDRESSABLE)
		return "addressable";
	return "observed";
}

const tt_kind *tt_kind_in(const tt_kind *kinds, size_t n, const char *name)
{
	for (size_t i = 0; name && i < n; i++)
		if (strcmp(kinds[i].name, name) == 0)
			return &kinds[i];
	return NULL;
}

bool tt_kind_is_volatile(const tt_kind *k, const char *state_key)
{
	for (const char *const *v = k->volatile_keys; v && *v; v++)
		if (strcmp(*v, state_key) == 0)
			return true;
	return false;
}

json_t *tt_content_state(const tt_kind *k, const json_t *state)
{
	json_t *out = json_object();
	const char *key;
	json_t *val;
	if (!out)
		return NULL;
	json_object_foreach((json_t *)state, key, val) {
		if (tt_kind_is_volatile(k, key))
			continue;
		if (json_object_set(out, key, val) < 0) {
			json_decref(out);
			return NULL;
		}
	}
	return out;
}
