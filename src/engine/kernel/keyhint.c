/* engine/kernel/keyhint.c - "did you mean" for object keys (see keyhint.h). */
#include "engine/kernel/keyhint.h"

#include <stdlib.h>

#include "util/error.h"
#include "util/mem.h"
#include "util/suggest.h"

int tt_engine_key_hint(tt_error *err, const tt_manifest_set *set, const char *key)
{
	if (!err || err->hint || !set || !set->n || !key)
		return err ? err->code : 0;
	const char **names = tt_calloc(set->n, sizeof *names);
	if (!names)
		return err->code;
	for (size_t i = 0; i < set->n; i++)
		names[i] = set->items[i].key;
	const char *s = tt_suggest(key, names, set->n);
	if (s)
		tt_error_hint(err, "did you mean '%s'? (`tether status` lists the objects)", s);
	free(names);
	return err->code;
}
