/*
 * core/ids.h - pin ids, listing names, ref names and the manifest hash,
 * exactly as tether-vcs computes them (so both implementations name the same
 * state the same way).
 *
 *   canon(x)     = json.dumps(x, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
 *   pin id       = dataset8 + "." + blake(canon(kind), canon(identity), canon(content), size=16)[:16]
 *   listing name = blake(canon(kind), canon(identity), canon(content), size=16)[:20] + ".jsonl"
 *   manifest hash= blake(*[canon([key, canonical(manifest)]) for key in sorted(keys)], size=32)
 */
#ifndef TT_CORE_IDS_H
#define TT_CORE_IDS_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "util/error.h"

#define TT_DATASET_ID_LEN 8
#define TT_PIN_ID_MAX 64      /* "<8>.<16>" plus room for a generation */
#define TT_LISTING_NAME_MAX 32

/* kind is a plain string (hashed as a JSON string); identity and content_state
 * are JSON objects.  content_state must already have volatile keys removed. */
int tt_pin_id(char out[TT_PIN_ID_MAX], const char *dataset_id, const char *kind,
	      const json_t *identity, const json_t *content_state, tt_error *err);
int tt_listing_name(char out[TT_LISTING_NAME_MAX], const char *kind,
		    const json_t *identity, const json_t *content_state, tt_error *err);

/* One manifest's contribution to the manifest hash: its key and its
 * canonical bytes (see manifest.h, tt_manifest_canonical). */
typedef struct tt_keyed_canon {
	const char *key;
	const char *canonical;   /* UTF-8 JSON text */
} tt_keyed_canon;
/* entries need not be sorted; hex gets 64 digits + NUL. */
int tt_manifest_hash_of(char hex[65], const tt_keyed_canon *entries, size_t n, tt_error *err);

bool tt_is_dataset_id(const char *s);
/* A fresh dataset id: 8 lower-case hex from the system's random source. */
int tt_new_dataset_id(char out[TT_DATASET_ID_LEN + 1], tt_error *err);
/* n random lower-case hex digits (uuid4().hex-style ids: workspace 32, op 12). */
int tt_random_hex(char *out, size_t n, tt_error *err);

/* "tether." + pin id.  0, or TT_ELIMIT when it does not fit outsz. */
int tt_ref_for_pin(char *out, size_t outsz, const char *pin_id);
/* The dataset id of a pin id ("<8hex>.<rest without dots>"), or false. */
bool tt_pin_dataset(const char *pin_id, char ds[TT_DATASET_ID_LEN + 1]);
/* The pin id a "tether.<id>[.<generation>]" ref carries, or false.  Like
 * tether-vcs, a generation is any run of characters str.isdigit() accepts
 * (Unicode digits, superscripts, ...).  False as well when the id does not
 * fit out (no id tether makes comes close); tt_pin_id_span has no limit. */
bool tt_pin_id_of_ref(const char *ref, char out[TT_PIN_ID_MAX]);
/* The same without a copy: the id is ref[*off .. *off + *len). */
bool tt_pin_id_span(const char *ref, size_t *off, size_t *len);

/* "tether.ws.<dataset8>.<bookmark slug>" and the slug rule of tether-vcs:
 * [0-9A-Za-z_-] pass, runs of anything else become "-", stripped of "-";
 * if that changed the name, "-" + blake(canon(bookmark), size=8)[:6] is
 * appended ("bm" when nothing is left). */
int tt_bookmark_slug(char **out, const char *bookmark, tt_error *err);
int tt_working_ref_name(char **out, const char *dataset_id, const char *bookmark, tt_error *err);

#endif
