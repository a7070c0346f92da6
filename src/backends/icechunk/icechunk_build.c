/*
 * backends/icechunk/icechunk_build.c - writing Icechunk metadata (see
 * icechunk_fmt.h): a small flatbuffers builder, a schema-driven copy of the
 * spec-2 repo file with one change applied, and the objects of a new
 * repository.
 *
 * The builder works front to back on a tree of nodes: a table is laid out
 * (vtable just before it), then its children after it, so every uoffset
 * points forward as icechunk's verifier requires.  Scalars are aligned to
 * their size relative to the buffer start, vector length words to 4 and
 * vector elements to their own alignment.
 */
#include "backends/icechunk/icechunk_fmt.h"

#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "util/mem.h"

/* --- nodes ------------------------------------------------------------------ */

typedef enum fkind {
	F_NONE, F_SCALAR, F_STRUCT, F_STRING, F_VEC, F_VEC_STRING, F_TABLE, F_VEC_TABLE, F_UNION
} fkind;

typedef struct tdesc tdesc;
typedef struct fdesc {
	fkind k;
	unsigned size;      /* F_SCALAR / F_STRUCT: bytes; F_VEC: element bytes */
	unsigned align;     /* F_VEC: element alignment */
	const tdesc *sub;   /* F_TABLE / F_VEC_TABLE */
} fdesc;

#define MAX_SLOTS 16
struct tdesc {
	unsigned nslots;
	fdesc f[MAX_SLOTS];
};

typedef enum nkind { N_TABLE, N_STRING, N_BYTES, N_VEC } nkind;

typedef struct node node;
typedef struct field {
	bool set;
	fkind k;
	unsigned size;          /* inline bytes */
	uint8_t sc[12];         /* scalar / struct bytes (little endian) */
	node *child;            /* offset fields */
} field;

struct node {
	nkind k;
	field f[MAX_SLOTS];     /* N_TABLE */
	const uint8_t *bytes;   /* N_STRING / N_BYTES (borrowed or arena-owned) */
	size_t len;             /* bytes */
	unsigned elem_size;     /* N_BYTES */
	unsigned elem_align;
	node **items;           /* N_VEC: tables or strings */
	size_t nitems;
};

typedef struct arena {
	void **p;
	size_t n, cap;
	bool oom;
} arena;

static void *arena_alloc(arena *a, size_t size)
{
	void *m;
	if (a->oom)
		return NULL;
	if (a->n == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 64;
		void **p = tt_realloc(a->p, cap * sizeof *p);
		if (!p) {
			a->oom = true;
			return NULL;
		}
		a->p = p;
		a->cap = cap;
	}
	m = tt_calloc(1, size ? size : 1);
	if (!m) {
		a->oom = true;
		return NULL;
	}
	a->p[a->n++] = m;
	return m;
}

static void arena_release(arena *a)
{
	for (size_t i = 0; i < a->n; i++)
		free(a->p[i]);
	free(a->p);
	memset(a, 0, sizeof *a);
}

static node *new_table(arena *a)
{
	node *n = arena_alloc(a, sizeof *n);
	if (n)
		n->k = N_TABLE;
	return n;
}

static node *new_string(arena *a, const char *s, size_t len)
{
	node *n = arena_alloc(a, sizeof *n);
	uint8_t *copy = arena_alloc(a, len);
	if (!n || !copy)
		return NULL;
	memcpy(copy, s, len);
	n->k = N_STRING;
	n->bytes = copy;
	n->len = len;
	return n;
}

static node *new_bytes(arena *a, const uint8_t *b, size_t len, unsigned elem_size,
		       unsigned elem_align)
{
	node *n = arena_alloc(a, sizeof *n);
	uint8_t *copy = arena_alloc(a, len);
	if (!n || !copy)
		return NULL;
	if (len)
		memcpy(copy, b, len);
	n->k = N_BYTES;
	n->bytes = copy;
	n->len = len;
	n->elem_size = elem_size ? elem_size : 1;
	n->elem_align = elem_align ? elem_align : 1;
	return n;
}

static node *new_vec(arena *a, size_t count)
{
	node *n = arena_alloc(a, sizeof *n);
	if (!n)
		return NULL;
	n->k = N_VEC;
	n->items = arena_alloc(a, (count ? count : 1) * sizeof *n->items);
	if (!n->items)
		return NULL;
	n->nitems = count;
	return n;
}

static void set_scalar(node *t, unsigned slot, unsigned size, uint64_t v)
{
	field *f = &t->f[slot];
	f->set = true;
	f->k = F_SCALAR;
	f->size = size;
	for (unsigned i = 0; i < size; i++)
		f->sc[i] = (uint8_t)(v >> (8 * i));
}

static void set_struct(node *t, unsigned slot, const uint8_t *b, unsigned size)
{
	field *f = &t->f[slot];
	f->set = true;
	f->k = F_STRUCT;
	f->size = size;
	memcpy(f->sc, b, size);
}

static void set_child(node *t, unsigned slot, fkind k, node *child)
{
	field *f = &t->f[slot];
	f->set = child != NULL;
	f->k = k;
	f->size = 4;
	f->child = child;
}

/* --- emission ---------------------------------------------------------------- */

static void put32(tt_buf *b, size_t at, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		b->ptr[at + (size_t)i] = (char)(v >> (8 * i));
}

static int pad_to(tt_buf *b, size_t align, size_t phase)
{
	while ((b->len + phase) % align)
		if (tt_buf_putc(b, 0) != 0)
			return -1;
	return 0;
}

static int emit(tt_buf *b, const node *n, size_t *pos);

static int emit_table(tt_buf *b, const node *t, size_t *pos)
{
	unsigned top = 0, order[MAX_SLOTS], no = 0;
	uint16_t offs[MAX_SLOTS] = { 0 };
	size_t vt, ts, off = 4, vtsize;
	for (unsigned s = 0; s < MAX_SLOTS; s++)
		if (t->f[s].set)
			top = s + 1;
	vtsize = 4 + 2 * (size_t)top;
	if (pad_to(b, 2, 0) != 0)
		return -1;
	vt = b->len;
	/* the table start: 4-aligned, after the vtable; its fields largest
	 * first, each aligned to its size (structs of bytes: 1) */
	ts = vt + vtsize;
	ts += (4 - ts % 4) % 4;
	for (unsigned size = 8;; size /= 2) {
		for (unsigned s = 0; s < top; s++) {
			const field *f = &t->f[s];
			unsigned al = f->k == F_STRUCT ? 1 : f->size;
			if (!f->set || (f->k == F_STRUCT ? size != 1 : f->size != size))
				continue;
			off = ((ts + off + al - 1) / al) * al - ts;
			offs[s] = (uint16_t)off;
			order[no++] = s;
			off += f->size;
		}
		if (size == 1)
			break;
	}
	/* structs were placed in the size-1 round; scalars of size 1 too */
	for (unsigned s = 0; s < top; s++)
		if (t->f[s].set && !offs[s])
			return -1;
	if (off > 0xffff || vtsize > 0xffff)
		return -1;
	{
		uint8_t hdr[4] = { (uint8_t)vtsize, (uint8_t)(vtsize >> 8), (uint8_t)off,
				   (uint8_t)(off >> 8) };
		if (tt_buf_put(b, hdr, 4) != 0)
			return -1;
		for (unsigned s = 0; s < top; s++) {
			uint8_t v[2] = { (uint8_t)offs[s], (uint8_t)(offs[s] >> 8) };
			if (tt_buf_put(b, v, 2) != 0)
				return -1;
		}
	}
	while (b->len < ts)
		if (tt_buf_putc(b, 0) != 0)
			return -1;
	if (tt_buf_grow(b, off) != 0)
		return -1;
	memset(b->ptr + ts, 0, off);
	b->len = ts + off;
	b->ptr[b->len] = '\0';
	put32(b, ts, (uint32_t)(ts - vt));
	for (unsigned i = 0; i < no; i++) {
		const field *f = &t->f[order[i]];
		if (f->k == F_SCALAR || f->k == F_STRUCT)
			memcpy(b->ptr + ts + offs[order[i]], f->sc, f->size);
	}
	*pos = ts;
	for (unsigned s = 0; s < top; s++) {
		const field *f = &t->f[s];
		size_t cp, at = ts + offs[s];
		if (!f->set || !f->child)
			continue;
		if (emit(b, f->child, &cp) != 0)
			return -1;
		put32(b, at, (uint32_t)(cp - at));
	}
	return 0;
}

static int emit(tt_buf *b, const node *n, size_t *pos)
{
	uint8_t len[4];
	size_t count = n->k == N_VEC ? n->nitems : n->k == N_BYTES ? n->len / n->elem_size : n->len;
	if (n->k == N_TABLE)
		return emit_table(b, n, pos);
	for (int i = 0; i < 4; i++)
		len[i] = (uint8_t)(count >> (8 * i));
	if (n->k == N_BYTES && n->elem_align == 8) {
		if (pad_to(b, 8, 4) != 0)
			return -1;
	} else if (pad_to(b, 4, 0) != 0) {
		return -1;
	}
	*pos = b->len;
	if (tt_buf_put(b, len, 4) != 0)
		return -1;
	if (n->k == N_STRING)
		return tt_buf_put(b, n->bytes, n->len) == 0 && tt_buf_putc(b, 0) == 0 ? 0 : -1;
	if (n->k == N_BYTES)
		return n->len == 0 || tt_buf_put(b, n->bytes, n->len) == 0 ? 0 : -1;
	{
		size_t slots = b->len;
		if (tt_buf_grow(b, 4 * n->nitems) != 0)
			return -1;
		memset(b->ptr + slots, 0, 4 * n->nitems);
		b->len += 4 * n->nitems;
		b->ptr[b->len] = '\0';
		for (size_t i = 0; i < n->nitems; i++) {
			size_t cp;
			if (emit(b, n->items[i], &cp) != 0)
				return -1;
			put32(b, slots + 4 * i, (uint32_t)(cp - (slots + 4 * i)));
		}
	}
	return 0;
}

/* The whole buffer: root offset, "Ichk", the root table. */
static int finish(const node *root, tt_buf *out, tt_error *err)
{
	size_t rp;
	static const uint8_t head[8] = { 0, 0, 0, 0, 'I', 'c', 'h', 'k' };
	out->len = 0;
	if (tt_buf_put(out, head, 8) != 0 || emit(out, root, &rp) != 0 || out->failed)
		return out->failed == TT_ELIMIT ? tt_error_set(err, TT_ELIMIT, "icechunk file too big")
						: tt_error_oom(err);
	put32(out, 0, (uint32_t)rp);
	return 0;
}

/* --- schemas (slot order of icechunk's .fbs files) ---------------------------- */

#define SC(n) { F_SCALAR, n, n, NULL }
#define ST(n) { F_STRUCT, n, 1, NULL }
#define STR { F_STRING, 0, 0, NULL }
#define VEC(n, al) { F_VEC, n, al, NULL }
#define VSTR { F_VEC_STRING, 0, 0, NULL }
#define TAB(d) { F_TABLE, 0, 0, &d }
#define VTAB(d) { F_VEC_TABLE, 0, 0, &d }
#define UNI { F_UNION, 0, 0, NULL }

static const tdesc t_meta = { 2, { STR, VEC(1, 1) } };
static const tdesc t_ref = { 2, { STR, SC(4) } };
static const tdesc t_snapinfo = { 6, { ST(12), SC(4), SC(8), STR, VTAB(t_meta), VEC(12, 1) } };
static const tdesc t_status = { 3, { SC(1), SC(8), STR } };
static const tdesc t_update = { 4, { SC(1), UNI, SC(8), STR } };
static const tdesc t_empty = { 0, { { F_NONE, 0, 0, NULL } } };
static const tdesc t_migrated = { 2, { SC(1), SC(1) } };
static const tdesc t_name = { 1, { STR } };
static const tdesc t_name_prev = { 2, { STR, ST(12) } };
static const tdesc t_commit = { 2, { STR, ST(12) } };
static const tdesc t_amend = { 3, { STR, ST(12), ST(12) } };
static const tdesc t_detached = { 1, { ST(12) } };
static const tdesc t_flag = { 3, { SC(2), SC(1), SC(1) } };
static const tdesc t_status_changed = { 1, { TAB(t_status) } };
static const tdesc t_repo = { 13, { SC(1), VTAB(t_ref), VTAB(t_ref), VSTR, VTAB(t_snapinfo),
				    TAB(t_status), VTAB(t_meta), VTAB(t_update), STR, VEC(1, 1),
				    VEC(2, 2), VEC(2, 2), VEC(1, 1) } };

/* Update members by union code (1..16). */
static const tdesc *const members[] = {
	NULL,        &t_empty,   &t_migrated, &t_empty,     &t_empty,     &t_name,
	&t_name_prev, &t_name,   &t_name_prev, &t_name_prev, &t_commit,   &t_amend,
	&t_detached, &t_empty,   &t_empty,    &t_flag,      &t_status_changed,
};
#define NMEMBERS (sizeof members / sizeof members[0])

/* --- schema-driven copy ----------------------------------------------------------- */

typedef struct copier {
	arena *a;
	const char *why;   /* set on refusal */
	bool newer;        /* data this schema does not know */
} copier;

static node *copy_table(copier *c, const ic_fb *src, const tdesc *d);

static node *copy_string_at(copier *c, const char *s, size_t n)
{
	return new_string(c->a, s, n);
}

static node *copy_table(copier *c, const ic_fb *src, const tdesc *d)
{
	node *t = new_table(c->a);
	uint8_t utype = 0;
	if (!t)
		return NULL;
	/* slots this schema does not know, set: a newer icechunk wrote them */
	for (unsigned s = d->nslots; 4 + 2 * (size_t)s + 2 <= src->vt_len; s++)
		if (tt_ic_fb_field(src, s, 1) != 0) {
			c->newer = true;
			c->why = "a field this tether does not know";
			return NULL;
		}
	for (unsigned s = 0; s < d->nslots; s++) {
		const fdesc *f = &d->f[s];
		long at;
		switch (f->k) {
		case F_NONE:
			break;
		case F_SCALAR: {
			uint64_t v = 0;
			at = tt_ic_fb_field(src, s, f->size);
			if (at < 0)
				goto bad;
			if (!at)
				break;
			for (unsigned i = 0; i < f->size; i++)
				v |= (uint64_t)src->buf[at + (long)i] << (8 * i);
			set_scalar(t, s, f->size, v);
			if (s == 0 && d == &t_update)
				utype = (uint8_t)v;
			break;
		}
		case F_STRUCT: {
			const uint8_t *p;
			if (tt_ic_fb_struct(src, s, f->size, &p) != 0)
				goto bad;
			if (p)
				set_struct(t, s, p, f->size);
			break;
		}
		case F_STRING: {
			const char *str;
			size_t n;
			node *ch;
			if (tt_ic_fb_string(src, s, &str, &n) != 0)
				goto bad;
			if (!str)
				break;
			if (!(ch = copy_string_at(c, str, n)))
				return NULL;
			set_child(t, s, F_STRING, ch);
			break;
		}
		case F_VEC: {
			const uint8_t *data;
			size_t count;
			node *ch;
			if (tt_ic_fb_vector(src, s, f->size, &data, &count) != 0)
				goto bad;
			if (!data)
				break;
			if (!(ch = new_bytes(c->a, data, count * f->size, f->size, f->align)))
				return NULL;
			set_child(t, s, F_VEC, ch);
			break;
		}
		case F_VEC_STRING:
		case F_VEC_TABLE: {
			const uint8_t *data;
			size_t count;
			node *v;
			if (tt_ic_fb_vector(src, s, 4, &data, &count) != 0)
				goto bad;
			if (!data)
				break;
			if (!(v = new_vec(c->a, count)))
				return NULL;
			for (size_t i = 0; i < count; i++) {
				if (f->k == F_VEC_STRING) {
					const char *str;
					size_t n;
					if (tt_ic_fb_vector_string(src, data, count, i, &str, &n) != 0)
						goto bad;
					v->items[i] = copy_string_at(c, str, n);
				} else {
					ic_fb sub;
					if (tt_ic_fb_vector_table(src, data, count, i, &sub) != 0)
						goto bad;
					v->items[i] = copy_table(c, &sub, f->sub);
				}
				if (!v->items[i])
					return NULL;
			}
			set_child(t, s, f->k, v);
			break;
		}
		case F_TABLE:
		case F_UNION: {
			ic_fb sub;
			const tdesc *sd = f->sub;
			int r = tt_ic_fb_table(src, s, &sub);
			node *ch;
			if (r < 0)
				goto bad;
			if (!r)
				break;
			if (f->k == F_UNION) {
				if (utype == 0 || utype >= NMEMBERS) {
					c->newer = true;
					c->why = "an ops-log entry this tether does not know";
					return NULL;
				}
				sd = members[utype];
			}
			if (!(ch = copy_table(c, &sub, sd)))
				return NULL;
			set_child(t, s, F_TABLE, ch);
			break;
		}
		}
	}
	return t;
bad:
	c->why = "a corrupt offset";
	return NULL;
}

/* --- the repo rewrite -------------------------------------------------------------- */

static node *ref_node(arena *a, const char *name, uint32_t snap)
{
	node *t = new_table(a), *s = new_string(a, name, strlen(name));
	if (!t || !s)
		return NULL;
	set_child(t, 0, F_STRING, s);
	set_scalar(t, 1, 4, snap);
	return t;
}

typedef struct refent {
	const char *name;
	uint32_t snap;
} refent;

static int refent_cmp(const void *x, const void *y)
{
	return strcmp(((const refent *)x)->name, ((const refent *)y)->name);
}

/* A sorted [Ref] from refs (n), minus `drop`, plus (add, snap). */
static node *refs_node(arena *a, const ic_ref *refs, size_t n, const char *drop, const char *add,
		       uint32_t snap, const char *reset, uint32_t reset_to)
{
	refent *list = arena_alloc(a, (n + 1) * sizeof *list);
	size_t m = 0;
	node *v;
	if (!list)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (drop && strcmp(refs[i].name, drop) == 0)
			continue;
		list[m].name = refs[i].name;
		list[m].snap = reset && strcmp(refs[i].name, reset) == 0 ? reset_to : refs[i].snap;
		m++;
	}
	if (add) {
		list[m].name = add;
		list[m].snap = snap;
		m++;
	}
	qsort(list, m, sizeof *list, refent_cmp);
	if (!(v = new_vec(a, m)))
		return NULL;
	for (size_t i = 0; i < m; i++)
		if (!(v->items[i] = ref_node(a, list[i].name, list[i].snap)))
			return NULL;
	return v;
}

static int cstr_cmp(const void *x, const void *y)
{
	return strcmp(*(const char *const *)x, *(const char *const *)y);
}

#define UPDATES_PER_FILE 1000

int tt_ic_repo_rewrite(const uint8_t *old, size_t len, const ic_repo *cur, const ic_change *ch,
		    const char *what, tt_buf *out, tt_error *err)
{
	arena a = { 0 };
	copier c = { &a, NULL, false };
	ic_fb root;
	node *r = NULL, *member = NULL, *upd, *ups, *oldups;
	uint8_t code = 0;
	uint64_t at;
	int rc = 0;
	long ti;

	if (tt_ic_fb_root(old, len, &root) != 0 || !(r = copy_table(&c, &root, &t_repo))) {
		if (a.oom)
			rc = tt_error_oom(err);
		else if (c.newer)
			rc = tt_error_set(err, TT_ECAPABILITY,
					  "icechunk %s holds %s (written by a newer icechunk); tether "
					  "will not rewrite it: upgrade tether",
					  what, c.why);
		else
			rc = tt_error_set(err, TT_EPARSE, "icechunk %s is corrupt (%s)", what,
					  c.why ? c.why : "bad root");
		goto done;
	}
	if (cur->spec_version > 2 || cur->availability != 0) {
		rc = tt_error_set(err, TT_EBACKEND,
				  cur->availability
					  ? "icechunk %s: the repository is not online (read-only or "
					    "offline); change its status with icechunk first"
					  : "icechunk %s: spec version too new to write",
				  what);
		goto done;
	}
	switch (ch->kind) {
	case IC_CHANGE_TAG_CREATE:
		code = 5;
		set_child(r, 1, F_VEC_TABLE,
			  refs_node(&a, cur->tags, cur->ntags, NULL, ch->name, ch->snap, NULL, 0));
		break;
	case IC_CHANGE_TAG_DELETE: {
		const char **dt;
		node *v;
		ti = tt_ic_repo_find_ref(cur->tags, cur->ntags, ch->name);
		if (ti < 0) {
			rc = tt_error_set(err, TT_ENOTFOUND, "tag %s not found", ch->name);
			goto done;
		}
		code = 6;
		set_child(r, 1, F_VEC_TABLE,
			  refs_node(&a, cur->tags, cur->ntags, ch->name, NULL, 0, NULL, 0));
		dt = arena_alloc(&a, (cur->ndeleted + 1) * sizeof *dt);
		if (!dt)
			break;
		for (size_t i = 0; i < cur->ndeleted; i++)
			dt[i] = cur->deleted_tags[i];
		dt[cur->ndeleted] = ch->name;
		qsort(dt, cur->ndeleted + 1, sizeof *dt, cstr_cmp);
		if (!(v = new_vec(&a, cur->ndeleted + 1)))
			break;
		for (size_t i = 0; i <= cur->ndeleted; i++)
			v->items[i] = new_string(&a, dt[i], strlen(dt[i]));
		set_child(r, 3, F_VEC_STRING, v);
		if ((member = new_table(&a)))
			set_struct(member, 1, cur->snaps[cur->tags[ti].snap].id, IC_ID_LEN);
		break;
	}
	case IC_CHANGE_BRANCH_CREATE:
		code = 7;
		set_child(r, 2, F_VEC_TABLE,
			  refs_node(&a, cur->branches, cur->nbranches, NULL, ch->name, ch->snap, NULL,
				    0));
		break;
	case IC_CHANGE_BRANCH_DELETE:
	case IC_CHANGE_BRANCH_RESET:
		ti = tt_ic_repo_find_ref(cur->branches, cur->nbranches, ch->name);
		if (ti < 0) {
			rc = tt_error_set(err, TT_ENOTFOUND, "branch %s not found", ch->name);
			goto done;
		}
		if (ch->kind == IC_CHANGE_BRANCH_DELETE && strcmp(ch->name, "main") == 0) {
			rc = tt_error_set(err, TT_EBACKEND, "icechunk never deletes branch main");
			goto done;
		}
		code = ch->kind == IC_CHANGE_BRANCH_DELETE ? 8 : 9;
		set_child(r, 2, F_VEC_TABLE,
			  ch->kind == IC_CHANGE_BRANCH_DELETE
				  ? refs_node(&a, cur->branches, cur->nbranches, ch->name, NULL, 0,
					      NULL, 0)
				  : refs_node(&a, cur->branches, cur->nbranches, NULL, NULL, 0,
					      ch->name, ch->snap));
		if ((member = new_table(&a)))
			set_struct(member, 1, cur->snaps[cur->branches[ti].snap].id, IC_ID_LEN);
		break;
	case IC_CHANGE_METADATA_SET: {
		/* merge one item into the name-sorted metadata */
		size_t n = cur->nmetadata, m = 0, i = 0;
		node *v = new_vec(&a, n + 1);
		bool placed = false;
		code = 4;
		if (!v)
			break;
		while (i < n || !placed) {
			const char *nm;
			const uint8_t *val;
			size_t vl;
			node *it;
			if (!placed && (i == n || strcmp(ch->name, cur->metadata[i].name) <= 0)) {
				nm = ch->name;
				val = ch->value;
				vl = ch->value_len;
				placed = true;
				if (i < n && strcmp(ch->name, cur->metadata[i].name) == 0)
					i++; /* replaced */
			} else {
				nm = cur->metadata[i].name;
				val = cur->metadata[i].value;
				vl = cur->metadata[i].len;
				i++;
			}
			if (!(it = new_table(&a)))
				break;
			set_child(it, 0, F_STRING, new_string(&a, nm, strlen(nm)));
			set_child(it, 1, F_VEC, new_bytes(&a, val, vl, 1, 1));
			v->items[m++] = it;
		}
		v->nitems = m;
		set_child(r, 6, F_VEC_TABLE, v);
		break;
	}
	}
	if (!member)
		member = new_table(&a);
	if (member && code != 4)
		set_child(member, 0, F_STRING, new_string(&a, ch->name, strlen(ch->name)));
	if (a.oom) {
		rc = tt_error_oom(err);
		goto done;
	}
	/* the ops log: the new entry first, the old first entry gets the
	 * backup's name, and the list is cut at the cap where an entry has a
	 * backup path (that path then chains to the older entries) */
	oldups = r->f[7].child;
	at = ch->now_us > cur->last_update_at ? ch->now_us : cur->last_update_at + 1;
	upd = new_table(&a);
	if (!upd || !oldups || oldups->nitems == 0) {
		rc = a.oom ? tt_error_oom(err) : tt_error_set(err, TT_EPARSE, "icechunk %s has no ops log", what);
		goto done;
	}
	set_scalar(upd, 0, 1, code);
	set_child(upd, 1, F_TABLE, member);
	set_scalar(upd, 2, 8, at);
	set_child(oldups->items[0], 3, F_STRING,
		  new_string(&a, ch->backup_name, strlen(ch->backup_name)));
	if (!(ups = new_vec(&a, oldups->nitems + 1))) {
		rc = tt_error_oom(err);
		goto done;
	}
	ups->items[0] = upd;
	ups->nitems = 1;
	for (size_t i = 0; i < oldups->nitems; i++) {
		node *e = oldups->items[i];
		if (ups->nitems >= UPDATES_PER_FILE && e->f[3].set) {
			set_child(r, 8, F_STRING, e->f[3].child);
			break;
		}
		ups->items[ups->nitems++] = e;
	}
	set_child(r, 7, F_VEC_TABLE, ups);
	if (a.oom) {
		rc = tt_error_oom(err);
		goto done;
	}
	rc = finish(r, out, err);
done:
	arena_release(&a);
	return rc;
}

/* --- containers and new repositories ---------------------------------------------- */

static const uint8_t magic[12] = { 0x49, 0x43, 0x45, 0xF0, 0x9F, 0xA7,
				   0x8A, 0x43, 0x48, 0x55, 0x4E, 0x4B };

int tt_ic_container_write(const uint8_t *payload, size_t len, int type, int spec, tt_buf *out,
		       tt_error *err)
{
	uint8_t head[39];
	size_t bound = ZSTD_compressBound(len), n;
	memcpy(head, magic, 12);
	memset(head + 12, ' ', 24);
	memcpy(head + 12, "tether-c", 8);
	head[36] = (uint8_t)spec;
	head[37] = (uint8_t)type;
	head[38] = 1;
	out->len = 0;
	if (tt_buf_put(out, head, sizeof head) != 0 || tt_buf_grow(out, bound) != 0)
		return tt_error_oom(err);
	n = ZSTD_compress(out->ptr + out->len, bound, payload, len, 3);
	if (ZSTD_isError(n))
		return tt_error_set(err, TT_ERROR, "zstd: %s", ZSTD_getErrorName(n));
	out->len += n;
	out->ptr[out->len] = '\0';
	return 0;
}

static const uint8_t root_id[12] = { 0x0b, 0x1c, 0xc8, 0xd6, 0x78, 0x75,
				     0x80, 0xf0, 0xe3, 0x3a, 0x65, 0x34 };
/* FlexBuffers {"is_root": true}: the initial snapshot's __icechunk item. */
static const uint8_t is_root_flex[] = { 0x69, 0x73, 0x5f, 0x72, 0x6f, 0x6f, 0x74, 0x00, 0x01,
					0x09, 0x01, 0x01, 0x01, 0x01, 0x68, 0x02, 0x24, 0x01 };
#define INITIAL_MESSAGE "Repository initialized"

static node *meta_vec(arena *a, const char *name, const uint8_t *v, size_t n)
{
	node *vec = new_vec(a, name ? 1 : 0), *it;
	if (!vec || !name)
		return vec;
	if (!(it = new_table(a)))
		return NULL;
	set_child(it, 0, F_STRING, new_string(a, name, strlen(name)));
	set_child(it, 1, F_VEC, new_bytes(a, v, n, 1, 1));
	vec->items[0] = it;
	return vec;
}

int tt_ic_initial_snapshot(uint64_t now_us, tt_buf *out, tt_error *err)
{
	arena a = { 0 };
	node *s = new_table(&a);
	int rc;
	if (s) {
		set_struct(s, 0, root_id, 12);
		set_child(s, 2, F_VEC_TABLE, new_vec(&a, 0));
		set_scalar(s, 3, 8, now_us);
		set_child(s, 4, F_STRING, new_string(&a, INITIAL_MESSAGE, strlen(INITIAL_MESSAGE)));
		set_child(s, 5, F_VEC_TABLE, meta_vec(&a, "__icechunk", is_root_flex,
						     sizeof is_root_flex));
		set_child(s, 6, F_VEC, new_bytes(&a, NULL, 0, 32, 8));
		set_child(s, 7, F_VEC_TABLE, new_vec(&a, 0));
	}
	rc = a.oom || !s ? tt_error_oom(err) : finish(s, out, err);
	arena_release(&a);
	return rc;
}

int tt_ic_initial_txlog(tt_buf *out, tt_error *err)
{
	arena a = { 0 };
	node *t = new_table(&a);
	int rc;
	if (t) {
		set_struct(t, 0, root_id, 12);
		for (unsigned s = 1; s <= 6; s++)
			set_child(t, s, F_VEC, new_bytes(&a, NULL, 0, IC_NODE_ID_LEN, 1));
		set_child(t, 7, F_VEC_TABLE, new_vec(&a, 0));
		set_child(t, 8, F_VEC_TABLE, new_vec(&a, 0));
	}
	rc = a.oom || !t ? tt_error_oom(err) : finish(t, out, err);
	arena_release(&a);
	return rc;
}

int tt_ic_initial_repo(uint64_t now_us, const char *meta_name, const uint8_t *meta_value,
		    size_t meta_len, tt_buf *out, tt_error *err)
{
	arena a = { 0 };
	node *r = new_table(&a), *si = new_table(&a), *st = new_table(&a), *up = new_table(&a);
	node *snaps = new_vec(&a, 1), *ups = new_vec(&a, 1), *branches = new_vec(&a, 1);
	int rc;
	if (r && si && st && up && snaps && ups && branches) {
		set_struct(si, 0, root_id, 12);
		set_scalar(si, 1, 4, (uint32_t)-1);
		set_scalar(si, 2, 8, now_us);
		set_child(si, 3, F_STRING, new_string(&a, INITIAL_MESSAGE, strlen(INITIAL_MESSAGE)));
		set_child(si, 4, F_VEC_TABLE,
			  meta_vec(&a, "__icechunk", is_root_flex, sizeof is_root_flex));
		snaps->items[0] = si;
		branches->items[0] = ref_node(&a, "main", 0);
		set_scalar(st, 0, 1, 0);
		set_scalar(st, 1, 8, now_us);
		set_scalar(up, 0, 1, 1);
		set_child(up, 1, F_TABLE, new_table(&a));
		set_scalar(up, 2, 8, now_us);
		ups->items[0] = up;
		set_scalar(r, 0, 1, 2);
		set_child(r, 1, F_VEC_TABLE, new_vec(&a, 0));
		set_child(r, 2, F_VEC_TABLE, branches);
		set_child(r, 3, F_VEC_STRING, new_vec(&a, 0));
		set_child(r, 4, F_VEC_TABLE, snaps);
		set_child(r, 5, F_TABLE, st);
		set_child(r, 6, F_VEC_TABLE, meta_vec(&a, meta_name, meta_value, meta_len));
		set_child(r, 7, F_VEC_TABLE, ups);
	}
	rc = a.oom || !r ? tt_error_oom(err) : finish(r, out, err);
	arena_release(&a);
	return rc;
}

/* --- FlexBuffers strings ------------------------------------------------------------ */

int tt_ic_flex_string(const char *s, tt_buf *out)
{
	size_t n = strlen(s);
	uint8_t tail[3];
	/* one-byte widths: the length and the root's offset back to the bytes */
	if (n > 250)
		return -1;
	tail[0] = (uint8_t)(n + 1);
	tail[1] = (5 << 2) | 0; /* FBT_STRING, 8-bit */
	tail[2] = 1;
	out->len = 0;
	if (tt_buf_putc(out, (char)n) != 0 || tt_buf_put(out, s, n) != 0 || tt_buf_putc(out, 0) != 0 ||
	    tt_buf_put(out, tail, 3) != 0)
		return -1;
	return 0;
}

int tt_ic_flex_read_string(const uint8_t *v, size_t len, const char **s, size_t *n)
{
	size_t w, cw, root, off = 0, data, slen = 0;
	uint8_t type;
	if (len < 3)
		return -1;
	w = v[len - 1];
	type = v[len - 2];
	if ((w != 1 && w != 2 && w != 4 && w != 8) || len < 2 + w || (type >> 2) != 5)
		return -1;
	cw = (size_t)1 << (type & 3);
	root = len - 2 - w;
	for (size_t i = 0; i < w && i < 8; i++)
		off |= (size_t)v[root + i] << (8 * i);
	if (off > root || root - off < cw)
		return -1;
	data = root - off;
	for (size_t i = 0; i < cw && i < 8; i++)
		slen |= (size_t)v[data - cw + i] << (8 * i);
	if (slen > len - data)
		return -1;
	*s = (const char *)v + data;
	*n = slen;
	return 0;
}
