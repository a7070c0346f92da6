/*
 * tether/_native.c - the CPython extension over libtether.
 *
 * One type, Repo, wraps a tt_repo; every method converts its arguments to
 * C first, releases the GIL for the libtether call (holding the Repo's own
 * lock, as a tt_repo is not safe to share between threads), and converts the
 * jansson result straight into Python objects.  Errors become the exception
 * the Python layer's factory builds from a tt_error's fields.  The public
 * API this uses is include/tether/tether.h; nothing here reaches inside the
 * library.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pythread.h>

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <tether/error.h>
#include <tether/tether.h>

static PyObject *error_factory; /* callable(code, name, message, hint, key, kind, text) -> exception */

/* --- JSON <-> Python ------------------------------------------------------ */

static PyObject *to_py(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: {
		PyObject *d = PyDict_New();
		const char *k;
		json_t *x;
		if (!d)
			return NULL;
		json_object_foreach((json_t *)v, k, x) {
			PyObject *pv = to_py(x);
			if (!pv || PyDict_SetItemString(d, k, pv) < 0) {
				Py_XDECREF(pv);
				Py_DECREF(d);
				return NULL;
			}
			Py_DECREF(pv);
		}
		return d;
	}
	case JSON_ARRAY: {
		size_t n = json_array_size(v);
		PyObject *l = PyList_New((Py_ssize_t)n);
		for (size_t i = 0; l && i < n; i++) {
			PyObject *pv = to_py(json_array_get(v, i));
			if (!pv) {
				Py_DECREF(l);
				return NULL;
			}
			PyList_SET_ITEM(l, (Py_ssize_t)i, pv);
		}
		return l;
	}
	case JSON_STRING:
		return PyUnicode_DecodeUTF8(json_string_value(v), (Py_ssize_t)json_string_length(v), "replace");
	case JSON_INTEGER:
		return PyLong_FromLongLong(json_integer_value(v));
	case JSON_REAL:
		return PyFloat_FromDouble(json_real_value(v));
	case JSON_TRUE:
		Py_RETURN_TRUE;
	case JSON_FALSE:
		Py_RETURN_FALSE;
	case JSON_NULL:
	default:
		Py_RETURN_NONE;
	}
}

/* A new json_t from a Python value (dict with str keys, list/tuple, str,
 * int, float, bool, None); NULL with an exception set otherwise. */
static json_t *from_py(PyObject *o, int depth)
{
	if (depth > 64) {
		PyErr_SetString(PyExc_ValueError, "value nested too deeply");
		return NULL;
	}
	if (o == Py_None)
		return json_null();
	if (PyBool_Check(o))
		return json_boolean(o == Py_True);
	if (PyLong_Check(o)) {
		long long x = PyLong_AsLongLong(o);
		if (x == -1 && PyErr_Occurred())
			return NULL;
		return json_integer(x);
	}
	if (PyFloat_Check(o))
		return json_real(PyFloat_AS_DOUBLE(o));
	if (PyUnicode_Check(o)) {
		Py_ssize_t n;
		const char *s = PyUnicode_AsUTF8AndSize(o, &n);
		return s ? json_stringn(s, (size_t)n) : NULL;
	}
	if (PyDict_Check(o)) {
		json_t *obj = json_object();
		PyObject *k, *v;
		Py_ssize_t pos = 0;
		while (obj && PyDict_Next(o, &pos, &k, &v)) {
			if (!PyUnicode_Check(k)) {
				PyErr_SetString(PyExc_TypeError, "dictionary keys must be str");
				json_decref(obj);
				return NULL;
			}
			json_t *jv = from_py(v, depth + 1);
			const char *ks = PyUnicode_AsUTF8(k);
			if (!jv || !ks || json_object_set_new(obj, ks, jv) < 0) {
				json_decref(obj);
				return NULL;
			}
		}
		return obj;
	}
	if (PyList_Check(o) || PyTuple_Check(o)) {
		PyObject *seq = PySequence_Fast(o, "a list");
		if (!seq)
			return NULL;
		json_t *arr = json_array();
		for (Py_ssize_t i = 0; arr && i < PySequence_Fast_GET_SIZE(seq); i++) {
			json_t *jv = from_py(PySequence_Fast_GET_ITEM(seq, i), depth + 1);
			if (!jv || json_array_append_new(arr, jv) < 0) {
				json_decref(arr);
				arr = NULL;
			}
		}
		Py_DECREF(seq);
		return arr;
	}
	PyErr_Format(PyExc_TypeError, "cannot convert %s to JSON", Py_TYPE(o)->tp_name);
	return NULL;
}

/* Raise the tt_error as the factory's exception, then clear it. */
static PyObject *raise_tt(tt_error *err)
{
	const char *text = tt_error_text(err);
	if (error_factory) {
		PyObject *exc = PyObject_CallFunction(error_factory, "iszzzzz", err->code, tt_code_name(err->code),
						      err->message, err->hint, err->key, err->kind, text);
		if (exc) {
			PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
			Py_DECREF(exc);
		}
	} else {
		PyErr_SetString(PyExc_RuntimeError, text ? text : "libtether error");
	}
	tt_error_clear(err);
	return NULL;
}

/* A json_t result as Python (stolen). */
static PyObject *give(json_t *v)
{
	if (!v)
		Py_RETURN_NONE;
	PyObject *r = to_py(v);
	json_decref(v);
	return r;
}

static PyObject *give_str(char *s)
{
	if (!s)
		Py_RETURN_NONE;
	PyObject *r = PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "replace");
	free(s);
	return r;
}

/* A plan result: (plan_json, plan_text). */
static PyObject *give_plan(char *pj, char *pt)
{
	PyObject *a = give_str(pj), *b = give_str(pt);
	if (!a || !b) {
		Py_XDECREF(a);
		Py_XDECREF(b);
		return NULL;
	}
	PyObject *t = PyTuple_Pack(2, a, b);
	Py_DECREF(a);
	Py_DECREF(b);
	return t;
}

/* --- string lists ----------------------------------------------------------- */

typedef struct strv {
	PyObject *hold; /* a tuple keeping the str objects alive */
	const char **v;
	size_t n;
} strv;

/* None -> empty; otherwise a sequence of str. */
static int strv_from(PyObject *o, strv *out)
{
	memset(out, 0, sizeof *out);
	if (!o || o == Py_None)
		return 0;
	if (PyUnicode_Check(o)) {
		PyErr_SetString(PyExc_TypeError, "expected a list of str, not a str");
		return -1;
	}
	PyObject *t = PySequence_Tuple(o);
	if (!t)
		return -1;
	Py_ssize_t n = PyTuple_GET_SIZE(t);
	const char **v = PyMem_Calloc((size_t)(n ? n : 1), sizeof *v);
	if (!v) {
		Py_DECREF(t);
		PyErr_NoMemory();
		return -1;
	}
	for (Py_ssize_t i = 0; i < n; i++) {
		PyObject *s = PyTuple_GET_ITEM(t, i);
		if (!PyUnicode_Check(s) || !(v[i] = PyUnicode_AsUTF8(s))) {
			if (!PyErr_Occurred())
				PyErr_SetString(PyExc_TypeError, "expected a list of str");
			PyMem_Free(v);
			Py_DECREF(t);
			return -1;
		}
	}
	out->hold = t;
	out->v = v;
	out->n = (size_t)n;
	return 0;
}

static void strv_free(strv *s)
{
	PyMem_Free(s->v);
	Py_XDECREF(s->hold);
	memset(s, 0, sizeof *s);
}

/* An optional str argument (None -> NULL). */
static int opt_str(PyObject *o, const char **out)
{
	*out = NULL;
	if (!o || o == Py_None)
		return 1;
	if (!PyUnicode_Check(o)) {
		PyErr_Format(PyExc_TypeError, "expected str or None, not %s", Py_TYPE(o)->tp_name);
		return 0;
	}
	return (*out = PyUnicode_AsUTF8(o)) != NULL;
}

/* --- the Repo type ----------------------------------------------------------- */

typedef struct {
	PyObject_HEAD
	tt_repo *repo;
	PyThread_type_lock lock;
	PyObject *progress; /* callable(phase, key, done, total) or NULL */
} RepoObject;

/* Run stmt without the GIL, holding the Repo's lock. */
#define UNLOCKED(self, stmt)                                         \
	do {                                                         \
		Py_BEGIN_ALLOW_THREADS                               \
		PyThread_acquire_lock((self)->lock, WAIT_LOCK);     \
		stmt;                                                \
		PyThread_release_lock((self)->lock);                 \
		Py_END_ALLOW_THREADS                                 \
	} while (0)

static int Repo_init(RepoObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "start_dir", NULL };
	const char *start;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "s", kwlist, &start))
		return -1;
	if (!self->lock && !(self->lock = PyThread_allocate_lock())) {
		PyErr_NoMemory();
		return -1;
	}
	tt_error err = TT_ERROR_INIT;
	tt_repo *r = NULL;
	int rc;
	UNLOCKED(self, rc = tt_repo_open(&r, start, &err));
	if (rc < 0) {
		raise_tt(&err);
		return -1;
	}
	if (self->repo)
		tt_repo_free(self->repo);
	self->repo = r;
	return 0;
}

/* The progress callable may refer back to this Repo: take part in the GC. */
static int Repo_traverse(RepoObject *self, visitproc visit, void *arg)
{
	Py_VISIT(self->progress);
	return 0;
}

static int Repo_clear(RepoObject *self)
{
	if (self->repo && self->progress)
		tt_repo_set_progress(self->repo, NULL, NULL);
	Py_CLEAR(self->progress);
	return 0;
}

static void Repo_dealloc(RepoObject *self)
{
	PyObject_GC_UnTrack(self);
	if (self->repo)
		tt_repo_free(self->repo);
	Py_CLEAR(self->progress);
	if (self->lock)
		PyThread_free_lock(self->lock);
	Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *cstr_or_none(const char *s)
{
	if (!s)
		Py_RETURN_NONE;
	return PyUnicode_FromString(s);
}

/* Getters on a Repo whose __init__ never succeeded raise instead of crashing. */
static int getter_open(RepoObject *self)
{
	if (self->repo)
		return 1;
	PyErr_SetString(PyExc_RuntimeError, "the repository is not open");
	return 0;
}

static PyObject *Repo_get_root(RepoObject *self, void *c)
{
	return getter_open(self) ? cstr_or_none(tt_repo_root(self->repo)) : NULL;
}
static PyObject *Repo_get_dataset_id(RepoObject *self, void *c)
{
	return getter_open(self) ? cstr_or_none(tt_repo_dataset_id(self->repo)) : NULL;
}
static PyObject *Repo_get_trunk(RepoObject *self, void *c)
{
	return getter_open(self) ? cstr_or_none(tt_repo_trunk(self->repo)) : NULL;
}
static PyObject *Repo_get_bookmark(RepoObject *self, void *c)
{
	return getter_open(self) ? cstr_or_none(tt_repo_bookmark(self->repo)) : NULL;
}
static PyObject *Repo_get_vcs_kind(RepoObject *self, void *c)
{
	return getter_open(self) ? cstr_or_none(tt_repo_vcs_kind(self->repo)) : NULL;
}
static PyObject *Repo_get_warnings(RepoObject *self, void *c)
{
	if (!getter_open(self))
		return NULL;
	size_t n = tt_repo_warning_count(self->repo);
	PyObject *l = PyList_New((Py_ssize_t)n);
	for (size_t i = 0; l && i < n; i++) {
		PyObject *s = cstr_or_none(tt_repo_warning(self->repo, i));
		if (!s) {
			Py_DECREF(l);
			return NULL;
		}
		PyList_SET_ITEM(l, (Py_ssize_t)i, s);
	}
	return l;
}

static PyGetSetDef Repo_getset[] = {
	{ "root", (getter)Repo_get_root, NULL, "The dataset root (the directory holding tether.toml).", NULL },
	{ "dataset_id", (getter)Repo_get_dataset_id, NULL, "The 8-hex dataset id.", NULL },
	{ "trunk", (getter)Repo_get_trunk, NULL, "The trunk bookmark.", NULL },
	{ "bookmark", (getter)Repo_get_bookmark, NULL, "The bookmark this checkout works on, or None.", NULL },
	{ "vcs_kind", (getter)Repo_get_vcs_kind, NULL, "\"git\" or \"jj\".", NULL },
	{ "warnings", (getter)Repo_get_warnings, NULL, "Warnings gathered while opening.", NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

#define CHECK_OPEN(self)                                                          \
	do {                                                                      \
		if (!(self)->repo) {                                              \
			PyErr_SetString(PyExc_RuntimeError, "the repository is not open"); \
			return NULL;                                              \
		}                                                                 \
	} while (0)

/* Finish a call returning json: raise or convert. */
static PyObject *finish(int rc, json_t *out, tt_error *err)
{
	if (rc < 0) {
		json_decref(out);
		return raise_tt(err);
	}
	tt_error_clear(err);
	return give(out);
}

static PyObject *finish_plan(int rc, char *pj, char *pt, tt_error *err)
{
	if (rc < 0) {
		free(pj);
		free(pt);
		return raise_tt(err);
	}
	return give_plan(pj, pt);
}

static PyObject *Repo_objects(RepoObject *self, PyObject *noargs)
{
	CHECK_OPEN(self);
	tt_error err = TT_ERROR_INIT;
	json_t *out = NULL;
	int rc;
	UNLOCKED(self, rc = tt_repo_objects(self->repo, &out, &err));
	return finish(rc, out, &err);
}

static PyObject *Repo_keys(RepoObject *self, PyObject *noargs)
{
	CHECK_OPEN(self);
	tt_error err = TT_ERROR_INIT;
	json_t *out = NULL;
	int rc;
	UNLOCKED(self, rc = tt_repo_keys(self->repo, &out, &err));
	return finish(rc, out, &err);
}

static PyObject *Repo_current_rev(RepoObject *self, PyObject *noargs)
{
	CHECK_OPEN(self);
	tt_error err = TT_ERROR_INIT;
	char *out = NULL;
	int rc;
	UNLOCKED(self, rc = tt_repo_current_rev(self->repo, &out, &err));
	if (rc < 0) {
		free(out);
		return raise_tt(&err);
	}
	return give_str(out);
}

static PyObject *Repo_status(RepoObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "selectors", "snapshot", NULL };
	PyObject *sel = Py_None;
	int snap = -1;
	CHECK_OPEN(self);
	if (!PyArg_ParseTupleAndKeywords(args, kw, "|Oi", kwlist, &sel, &snap))
		return NULL;
	strv s;
	if (strv_from(sel, &s) < 0)
		return NULL;
	tt_error err = TT_ERROR_INIT;
	json_t *out = NULL;
	int rc;
	UNLOCKED(self, rc = tt_repo_status(self->repo, s.v, s.n, snap, &out, &err));
	strv_free(&s);
	return finish(rc, out, &err);
}

static PyObject *Repo_snapshot(RepoObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "selectors", NULL };
	PyObject *sel = Py_None;
	CHECK_OPEN(self);
	if (!PyArg_ParseTupleAndKeywords(args, kw, "|O", kwlist, &sel))
		return NULL;
	strv s;
	if (strv_from(sel, &s) < 0)
		return NULL;
	tt_error err = TT_ERROR_INIT;
	json_t *out = NULL;
	int rc;
	UNLOCKED(self, rc = tt_repo_snapshot(self->repo, s.v, s.n, &out, &err));
	strv_free(&s);
	return finish(rc, out, &err);
}

static PyObject *Repo_add(RepoObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "key", "kind", "locator", "file", "pin", "cwd", "create", NULL };
	PyObject *key = Py_None, *file = Py_None, *pin = Py_None, *cwd = Py_None, *loc;
	const char *kind;
	int create = 0;
	CHECK_OPEN(self);
	if (!PyArg_ParseTupleAndKeywords(args, kw, "OsO|OOOp", kwlist, &key, &kind, &loc, &file, &pin, &cwd, &create))
		return NULL;
	tt_add_opts o = { .kind = kind, .create = create };
	if (!opt_str(key, &o.key) || !opt_str(file, &o.file_policy) || !opt_str(pin, &o.pin_policy) ||
	    !opt_str(cwd, &o.cwd))
		return NULL;
	json_t *jl = from_py(loc, 0);
	if (!jl)
		return NULL;
	o.locator = jl;
	tt_error err = TT_ERROR_INIT;
	json_t *out = NULL;
	int rc;
	UNLOCKED(self, rc = tt_repo_add(self->repo, &o, &out, &err));
	json_decref(jl);
	return finish(rc, out, &err);
}

static PyObject *Repo_remove(RepoObject *self, PyObject *args)
{
	const char *key;
	CHECK_OPEN(self);
	if (!PyArg_ParseTuple(args, "s", &key))
		return NULL;
	tt_error err = TT_ERROR_INIT;
	int rc;
	UNLOCKED(self, rc = tt_repo_remove(self->repo, key, &err));
	return finish(rc, NULL, &err);
}

static PyObject *Repo_set_policy(RepoObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "keys", "file", "pin", NULL };
	PyObject *keys, *file = Py_None, *pin = Py_None;
	const char *f, *p;
	CHECK_OPEN(self);
	if (!PyArg_ParseTupleAndKeywords(args, kw, "O|OO", kwlist, &keys, &file, &pin) || !opt_str(file, &f) ||
	    !opt_str(pin, &p))
		return NULL;
	strv s;
	if (strv_from(keys, &s) < 0)
		return NULL;
	tt_error err = TT_ERROR_INIT;
	json_t *out = NULL;
	int rc;
	UNLOCKED(self, rc = tt_repo_set_policy(self->repo, s.v, s.n, f, p, &out, &err));
	strv_free(&s);
	return finish(rc, out, &err);
}

/* commit(message, keys=None, no_vcs=False, strict=False, force=False,
 *        no_snapshot=False, plan_only=False, from_plan=None) */
static PyObject *Repo_commit(RepoObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "message", "keys", "no_vcs", "strict", "force", "no_snapshot", "plan_only",
				  "from_plan", NULL };
	PyObject *msg = Py_None, *keys = Py_None, *from = Py_None;
	int no_vcs = 0, strict = 0, force = 0, no_snap = 0, plan_only = 0;
	const char *m, *fp;
	CHECK_OPEN(self);
	if (!PyArg_ParseTupleAndKeywords(args, kw, "|OOpppppO", kwlist, &msg, &keys, &no_vcs, &strict, &force,
					 &no_snap, &plan_only, &from) ||
	    !opt_str(msg, &m) || !opt_str(from, &fp))
		return NULL;
	strv s;
	if (strv_from(keys, &s) < 0)
		return NULL;
	tt_commit_opts o = { .message = m, .keys = s.n ? s.v : NULL, .nkeys = s.n, .no_vcs = no_vcs,
			     .strict = strict, .force = force, .no_snapshot = no_snap };
	tt_error err = TT_ERROR_INIT;
	json_t *out = NULL;
	char *pj = NULL, *pt = NULL;
	int rc;
	if (plan_only) {
		UNLOCKED(self, rc = tt_repo_plan_commit(self->repo, &o, &pj, &pt, &err));
		strv_free(&s);
		return finish_plan(rc, pj, pt, &err);
	}
	if (fp)
		UNLOCKED(self, rc = tt_repo_apply_commit_plan(self->repo, fp, strlen(fp), m, o.keys, o.nkeys,
							      o.no_vcs, &out, &err));
	else
		UNLOCKED(self, rc = tt_repo_commit(self->repo, &o, &out, &err));
	strv_free(&s);
	return finish(rc, out, &err);
}

static PyObject *Repo_verify(RepoObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "selectors", "rev", "deep", "all_history", NULL };
	PyObject *sel = Py_None, *rev = Py_None;
	int deep = 0, all = 0;
	const char *r;
	CHECK_OPEN(self);
	if (!PyArg_ParseTupleAndKeywords(args, kw, "|OOpp", kwlist, &sel, &rev, &deep, &all) || !opt_str(rev, &r))
		return NULL;
	strv s;
	if (strv_from(sel, &s) < 0)
		return NULL;
	tt_error err = TT_ERROR_INIT;
	json_t *out = NULL;
	int rc;
	UNLOCKED(self, rc = tt_repo_verify(self->repo, s.v, s.n, r, deep, all, &out, &err));
	strv_free(&s);
	return finish(rc, out, &err);
}

static PyObject *Repo_log(RepoObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "key", "kind", "locator", "ref", "limit", NULL };
	PyObject *key = Py_None, *kind = Py_None, *loc = Py_None, *ref = Py_None;
	Py_ssize_t limit = 20;
	const char *k, *kd, *rf;
	CHECK_OPEN(self);
	if (!PyArg_ParseTupleAndKeywords(args, kw, "|OOOOn", kwlist, &key, &kind, &loc, &ref, &limit) ||
	    !opt_str(key, &k) || !opt_str(kind, &kd) || !opt_str(ref, &rf))
		return NULL;
	if (limit < 0) {
		PyErr_SetString(PyExc_ValueError, "limit must not be negative");
		return NULL;
	}
	json_t *jl = NULL;
	if (loc != Py_None && !(jl = from_py(loc, 0)))
		return NULL;
	tt_error err = TT_ERROR_INIT;
	json_t *out = NULL;
	int rc;
	UNLOCKED(self, rc = tt_repo_log(self->repo, k, kd, jl, rf, (size_t)limit, &out, &err));
	json_decref(jl);
	return finish(rc, out, &err);
}

static PyObject *Repo_diff(RepoObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "rev_a", "rev_b", "selectors", "content", NULL };
	PyObject *a = Py_None, *b = Py_None, *sel = Py_None;
	int content = 0;
	const char *ra, *rb;
	CHECK_OPEN(self);
	if (!PyArg_ParseTupleAndKeywords(args, kw, "|OOOp", kwlist, &a, &b, &sel, &content) || !opt_str(a, &ra) ||
	    !opt_str(b, &rb))
		return NULL;
	strv s;
	if (strv_from(sel, &s) < 0)
		return NULL;
	tt_error err = TT_ERROR_INIT;
	json_t *out = NULL;
	int rc;
	UNLOCKED(self, rc = tt_repo_diff(self->repo, ra, rb, s.v, s.n, content, &out, &err));
	strv_free(&s);
	return finish(rc, out, &err);
}

static PyObject *Repo_new(RepoObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "rev", "bookmark", "shared", "keep", "eager", "discard", "plan_only", "from_plan",
				  NULL };
	PyObject *rev = Py_None, *bm = Py_None, *from = Py_None;
	int shared = 0, keep = 0, eager = -1, discard = 0, plan_only = 0;
	const char *fp;
	tt_new_opts o = { 0 };
	CHECK_OPEN(self);
	if (!PyArg_ParseTupleAndKeywords(args, kw, "|OOppippO", kwlist, &rev, &bm, &shared, &keep, &eager, &discard,
					 &plan_only, &from) ||
	    !opt_str(rev, &o.rev) || !opt_str(bm, &o.bookmark) || !opt_str(from, &fp))
		return NULL;
	o.shared = shared;
	o.keep = keep;
	o.eager = eager;
	o.discard = discard;
	tt_error err = TT_ERROR_INIT;
	json_t *out = NULL;
	char *pj = NULL, *pt = NULL;
	int rc;
	UNLOCKED(self, rc = tt_repo_new(self->repo, &o, fp, fp ? strlen(fp) : 0, plan_only ? &pj : NULL, &pt,
					plan_only ? NULL : &out, &err));
	if (plan_only)
		return finish_plan(rc, pj, pt, &err);
	free(pt);
	return finish(rc, out, &err);
}

static PyObject *Repo_open_object(RepoObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "key", "rev", "read_only", NULL };
	const char *key, *r;
	PyObject *rev = Py_None;
	int ro = -1;
	CHECK_OPEN(self);
	if (!PyArg_ParseTupleAndKeywords(args, kw, "s|Oi", kwlist, &key, &rev, &ro) || !opt_str(rev, &r))
		return NULL;
	tt_error err = TT_ERROR_INIT;
	json_t *out = NULL;
	int rc;
	UNLOCKED(self, rc = tt_repo_open_object(self->repo, key, r, ro, &out, &err));
	return finish(rc, out, &err);
}

static PyObject *Repo_promote(RepoObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "keys", "rev", "strategy", "message", "plan_only", "from_plan", NULL };
	PyObject *keys = Py_None, *rev = Py_None, *strat = Py_None, *msg = Py_None, *from = Py_None;
	int plan_only = 0;
	const char *fp;
	tt_promote_opts o = { 0 };
	CHECK_OPEN(self);
	if (!PyArg_ParseTupleAndKeywords(args, kw, "|OOOOpO", kwlist, &keys, &rev, &strat, &msg, &plan_only, &from) ||
	    !opt_str(rev, &o.rev) || !opt_str(strat, &o.strategy) || !opt_str(msg, &o.message) ||
	    !opt_str(from, &fp))
		return NULL;
	strv s;
	if (strv_from(keys, &s) < 0)
		return NULL;
	o.keys = s.n ? s.v : NULL;
	o.nkeys = s.n;
	tt_error err = TT_ERROR_INIT;
	json_t *out = NULL;
	char *pj = NULL, *pt = NULL;
	int rc;
	UNLOCKED(self, rc = tt_repo_promote(self->repo, &o, fp, fp ? strlen(fp) : 0, plan_only ? &pj : NULL, &pt,
					    plan_only ? NULL : &out, &err));
	strv_free(&s);
	if (plan_only)
		return finish_plan(rc, pj, pt, &err);
	free(pt);
	return finish(rc, out, &err);
}

static PyObject *Repo_pull(RepoObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "bookmark", "selectors", "message", NULL };
	PyObject *bm = Py_None, *sel = Py_None, *msg = Py_None;
	const char *b, *m;
	CHECK_OPEN(self);
	if (!PyArg_ParseTupleAndKeywords(args, kw, "|OOO", kwlist, &bm, &sel, &msg) || !opt_str(bm, &b) ||
	    !opt_str(msg, &m))
		return NULL;
	strv s;
	if (strv_from(sel, &s) < 0)
		return NULL;
	tt_error err = TT_ERROR_INIT;
	json_t *out = NULL;
	int rc;
	UNLOCKED(self, rc = tt_repo_pull(self->repo, b, s.v, s.n, m, &out, &err));
	strv_free(&s);
	return finish(rc, out, &err);
}

static PyObject *Repo_undo(RepoObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "op_id", "discard", NULL };
	PyObject *op = Py_None;
	int discard = 0;
	const char *o;
	CHECK_OPEN(self);
	if (!PyArg_ParseTupleAndKeywords(args, kw, "|Op", kwlist, &op, &discard) || !opt_str(op, &o))
		return NULL;
	tt_error err = TT_ERROR_INIT;
	json_t *out = NULL;
	int rc;
	UNLOCKED(self, rc = tt_repo_undo(self->repo, o, discard, &out, &err));
	return finish(rc, out, &err);
}

static PyObject *Repo_repair(RepoObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "selectors", "all_history", "plan_only", "from_plan", NULL };
	PyObject *sel = Py_None, *from = Py_None;
	int all = 0, plan_only = 0;
	const char *fp;
	CHECK_OPEN(self);
	if (!PyArg_ParseTupleAndKeywords(args, kw, "|OppO", kwlist, &sel, &all, &plan_only, &from) ||
	    !opt_str(from, &fp))
		return NULL;
	strv s;
	if (strv_from(sel, &s) < 0)
		return NULL;
	tt_error err = TT_ERROR_INIT;
	json_t *out = NULL;
	char *pj = NULL, *pt = NULL;
	int rc;
	UNLOCKED(self, rc = tt_repo_repair(self->repo, s.v, s.n, all, plan_only, fp, fp ? strlen(fp) : 0, &pj, &pt,
					   &out, &err));
	strv_free(&s);
	if (plan_only) {
		json_decref(out);
		return finish_plan(rc, pj, pt, &err);
	}
	free(pj);
	free(pt);
	return finish(rc, out, &err);
}

static PyObject *Repo_restore(RepoObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "selectors", "rev", "discard", "plan_only", "from_plan", "at", NULL };
	PyObject *sel = Py_None, *rev = Py_None, *from = Py_None, *atv = Py_None;
	int discard = 0, plan_only = 0;
	const char *r, *fp, *at;
	CHECK_OPEN(self);
	if (!PyArg_ParseTupleAndKeywords(args, kw, "|OOppOO", kwlist, &sel, &rev, &discard, &plan_only, &from, &atv) ||
	    !opt_str(rev, &r) || !opt_str(from, &fp) || !opt_str(atv, &at))
		return NULL;
	strv s;
	if (strv_from(sel, &s) < 0)
		return NULL;
	tt_error err = TT_ERROR_INIT;
	json_t *out = NULL;
	char *pj = NULL, *pt = NULL;
	int rc;
	UNLOCKED(self, rc = tt_repo_restore(self->repo, s.v, s.n, r, at, discard, plan_only, fp, fp ? strlen(fp) : 0, &pj,
					    &pt, &out, &err));
	strv_free(&s);
	if (plan_only) {
		json_decref(out);
		return finish_plan(rc, pj, pt, &err);
	}
	free(pj);
	free(pt);
	return finish(rc, out, &err);
}

static PyObject *Repo_ops(RepoObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "limit", NULL };
	Py_ssize_t limit = 0;
	CHECK_OPEN(self);
	if (!PyArg_ParseTupleAndKeywords(args, kw, "|n", kwlist, &limit))
		return NULL;
	tt_error err = TT_ERROR_INIT;
	json_t *out = NULL;
	int rc;
	UNLOCKED(self, rc = tt_repo_ops(self->repo, limit > 0 ? (size_t)limit : (size_t)-1, &out, NULL, &err));
	return finish(rc, out, &err);
}

/* gc(dry_run, release_foreign, prune_bookmarks, keep_bookmarks, force_prune,
 *    delete_stores, stores, plan_only, from_plan) */
static PyObject *Repo_gc(RepoObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "dry_run", "release_foreign", "prune_bookmarks", "keep_bookmarks", "force_prune",
				  "delete_stores", "stores", "plan_only", "from_plan", NULL };
	PyObject *keep = Py_None, *stores = Py_None, *from = Py_None;
	int dry = 1, rf = 0, prune = 0, force = 0, del = 0, plan_only = 0;
	const char *fp;
	CHECK_OPEN(self);
	if (!PyArg_ParseTupleAndKeywords(args, kw, "|pppOppOpO", kwlist, &dry, &rf, &prune, &keep, &force, &del,
					 &stores, &plan_only, &from) ||
	    !opt_str(from, &fp))
		return NULL;
	strv k, st;
	if (strv_from(keep, &k) < 0)
		return NULL;
	if (strv_from(stores, &st) < 0) {
		strv_free(&k);
		return NULL;
	}
	tt_gc_opts o = { .dry_run = dry, .release_foreign = rf, .prune_bookmarks = prune, .keep_bookmarks = k.v,
			 .nkeep = k.n, .force_prune = force, .delete_stores = del, .stores = st.v, .nstores = st.n };
	tt_error err = TT_ERROR_INIT;
	json_t *out = NULL;
	char *pj = NULL, *pt = NULL;
	int rc;
	if (plan_only)
		UNLOCKED(self, rc = tt_repo_plan_gc(self->repo, &o, &pj, &pt, &err));
	else if (fp)
		UNLOCKED(self, rc = tt_repo_apply_gc_plan(self->repo, fp, strlen(fp), &out, &err));
	else
		UNLOCKED(self, rc = tt_repo_gc(self->repo, &o, &out, &err));
	strv_free(&k);
	strv_free(&st);
	if (plan_only)
		return finish_plan(rc, pj, pt, &err);
	return finish(rc, out, &err);
}

/* libtether's progress hook: may run on a worker thread, so take the GIL.
 * Python hears each finished object (a phase's opening call, with no key,
 * is not passed on), as fn(phase, key, done, total). */
static void progress_trampoline(const tt_progress *p, void *ctx)
{
	RepoObject *self = ctx;
	if (!p->key)
		return;
	PyGILState_STATE g = PyGILState_Ensure();
	PyObject *fn = self->progress;
	if (fn) {
		Py_INCREF(fn); /* the callback may run while another thread replaces it */
		PyObject *r = PyObject_CallFunction(fn, "ssnn", p->phase, p->key, (Py_ssize_t)p->done,
						    (Py_ssize_t)p->total);
		if (r)
			Py_DECREF(r);
		else
			PyErr_WriteUnraisable(fn);
		Py_DECREF(fn);
	}
	PyGILState_Release(g);
}

static PyObject *Repo_set_progress(RepoObject *self, PyObject *fn)
{
	CHECK_OPEN(self);
	if (fn != Py_None && !PyCallable_Check(fn)) {
		PyErr_SetString(PyExc_TypeError, "progress must be callable or None");
		return NULL;
	}
	PyObject *old = self->progress;
	Py_XINCREF(fn == Py_None ? NULL : fn);
	self->progress = fn == Py_None ? NULL : fn;
	/* Under the Repo's lock, so no call is running while the hook changes. */
	UNLOCKED(self, tt_repo_set_progress(self->repo, self->progress ? progress_trampoline : NULL, self));
	Py_XDECREF(old);
	Py_RETURN_NONE;
}

static PyMethodDef Repo_methods[] = {
	{ "set_progress", (PyCFunction)Repo_set_progress, METH_O,
	  "Call fn(phase, key, done, total) as objects finish long steps (None: stop)." },
	{ "objects", (PyCFunction)Repo_objects, METH_NOARGS, "The working tree's manifests {key: dict}." },
	{ "keys", (PyCFunction)Repo_keys, METH_NOARGS, "Every registered key, sorted." },
	{ "current_rev", (PyCFunction)Repo_current_rev, METH_NOARGS, "The working copy's commit." },
	{ "status", (PyCFunction)(void (*)(void))Repo_status, METH_VARARGS | METH_KEYWORDS, "tt_repo_status" },
	{ "snapshot", (PyCFunction)(void (*)(void))Repo_snapshot, METH_VARARGS | METH_KEYWORDS, "tt_repo_snapshot" },
	{ "add", (PyCFunction)(void (*)(void))Repo_add, METH_VARARGS | METH_KEYWORDS, "tt_repo_add" },
	{ "remove", (PyCFunction)Repo_remove, METH_VARARGS, "tt_repo_remove" },
	{ "set_policy", (PyCFunction)(void (*)(void))Repo_set_policy, METH_VARARGS | METH_KEYWORDS,
	  "tt_repo_set_policy" },
	{ "commit", (PyCFunction)(void (*)(void))Repo_commit, METH_VARARGS | METH_KEYWORDS, "tt_repo_commit" },
	{ "verify", (PyCFunction)(void (*)(void))Repo_verify, METH_VARARGS | METH_KEYWORDS, "tt_repo_verify" },
	{ "log", (PyCFunction)(void (*)(void))Repo_log, METH_VARARGS | METH_KEYWORDS, "tt_repo_log" },
	{ "diff", (PyCFunction)(void (*)(void))Repo_diff, METH_VARARGS | METH_KEYWORDS, "tt_repo_diff" },
	{ "new", (PyCFunction)(void (*)(void))Repo_new, METH_VARARGS | METH_KEYWORDS, "tt_repo_new" },
	{ "open_object", (PyCFunction)(void (*)(void))Repo_open_object, METH_VARARGS | METH_KEYWORDS,
	  "tt_repo_open_object" },
	{ "promote", (PyCFunction)(void (*)(void))Repo_promote, METH_VARARGS | METH_KEYWORDS, "tt_repo_promote" },
	{ "pull", (PyCFunction)(void (*)(void))Repo_pull, METH_VARARGS | METH_KEYWORDS, "tt_repo_pull" },
	{ "undo", (PyCFunction)(void (*)(void))Repo_undo, METH_VARARGS | METH_KEYWORDS, "tt_repo_undo" },
	{ "repair", (PyCFunction)(void (*)(void))Repo_repair, METH_VARARGS | METH_KEYWORDS, "tt_repo_repair" },
	{ "restore", (PyCFunction)(void (*)(void))Repo_restore, METH_VARARGS | METH_KEYWORDS, "tt_repo_restore" },
	{ "ops", (PyCFunction)(void (*)(void))Repo_ops, METH_VARARGS | METH_KEYWORDS, "tt_repo_ops" },
	{ "gc", (PyCFunction)(void (*)(void))Repo_gc, METH_VARARGS | METH_KEYWORDS, "tt_repo_gc" },
	{ NULL, NULL, 0, NULL },
};

static PyTypeObject RepoType = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tether._native.Repo",
	.tp_basicsize = sizeof(RepoObject),
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
	.tp_traverse = (traverseproc)Repo_traverse,
	.tp_clear = (inquiry)Repo_clear,
	.tp_doc = "An open libtether dataset (tt_repo).",
	.tp_new = PyType_GenericNew,
	.tp_init = (initproc)Repo_init,
	.tp_dealloc = (destructor)Repo_dealloc,
	.tp_methods = Repo_methods,
	.tp_getset = Repo_getset,
};

/* --- module functions --------------------------------------------------------- */

static PyObject *mod_version(PyObject *m, PyObject *noargs) { return PyUnicode_FromString(tt_version()); }

static PyObject *mod_backends(PyObject *m, PyObject *noargs) { return give(tt_backends()); }

static PyObject *mod_init(PyObject *m, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "path", "dataset_id", NULL };
	const char *path;
	PyObject *ds = Py_None;
	const char *d;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "s|O", kwlist, &path, &ds) || !opt_str(ds, &d))
		return NULL;
	tt_error err = TT_ERROR_INIT;
	json_t *out = NULL;
	int rc;
	Py_BEGIN_ALLOW_THREADS
	rc = tt_init(path, d, &out, &err);
	Py_END_ALLOW_THREADS
	return finish(rc, out, &err);
}

static PyObject *mod_compute_pin_id(PyObject *m, PyObject *args)
{
	const char *kind, *ds;
	PyObject *identity, *state;
	if (!PyArg_ParseTuple(args, "sOOs", &kind, &identity, &state, &ds))
		return NULL;
	json_t *ji = from_py(identity, 0);
	json_t *js = ji ? from_py(state, 0) : NULL;
	if (!js) {
		json_decref(ji);
		return NULL;
	}
	char out[64];
	tt_error err = TT_ERROR_INIT;
	int rc = tt_compute_pin_id(out, kind, ji, js, ds, &err);
	json_decref(ji);
	json_decref(js);
	if (rc < 0)
		return raise_tt(&err);
	return PyUnicode_FromString(out);
}

static PyObject *mod_listing_name(PyObject *m, PyObject *args)
{
	const char *kind;
	PyObject *identity, *state;
	if (!PyArg_ParseTuple(args, "sOO", &kind, &identity, &state))
		return NULL;
	json_t *ji = from_py(identity, 0);
	json_t *js = ji ? from_py(state, 0) : NULL;
	if (!js) {
		json_decref(ji);
		return NULL;
	}
	char out[32];
	tt_error err = TT_ERROR_INIT;
	int rc = tt_compute_listing_name(out, kind, ji, js, &err);
	json_decref(ji);
	json_decref(js);
	if (rc < 0)
		return raise_tt(&err);
	return PyUnicode_FromString(out);
}

static PyObject *mod_working_ref_name(PyObject *m, PyObject *args)
{
	const char *ds, *bookmark;
	if (!PyArg_ParseTuple(args, "ss", &ds, &bookmark))
		return NULL;
	char *out = NULL;
	tt_error err = TT_ERROR_INIT;
	if (tt_compute_working_ref_name(&out, ds, bookmark, &err) < 0) {
		free(out);
		return raise_tt(&err);
	}
	return give_str(out);
}

static PyObject *mod_manifest_hash(PyObject *m, PyObject *arg)
{
	json_t *j = from_py(arg, 0);
	if (!j)
		return NULL;
	char hex[65];
	tt_error err = TT_ERROR_INIT;
	int rc = tt_manifest_hash(hex, j, &err);
	json_decref(j);
	if (rc < 0)
		return raise_tt(&err);
	return PyUnicode_FromString(hex);
}

static PyObject *mod_set_error_factory(PyObject *m, PyObject *fn)
{
	if (!PyCallable_Check(fn)) {
		PyErr_SetString(PyExc_TypeError, "the error factory must be callable");
		return NULL;
	}
	Py_INCREF(fn);
	Py_XSETREF(error_factory, fn);
	Py_RETURN_NONE;
}

static PyMethodDef mod_methods[] = {
	{ "version", mod_version, METH_NOARGS, "libtether's version." },
	{ "backends", mod_backends, METH_NOARGS, "The kinds this libtether knows." },
	{ "init", (PyCFunction)(void (*)(void))mod_init, METH_VARARGS | METH_KEYWORDS, "tt_init" },
	{ "compute_pin_id", mod_compute_pin_id, METH_VARARGS, "compute_pin_id(kind, identity, state, dataset_id)" },
	{ "listing_name", mod_listing_name, METH_VARARGS, "listing_name(kind, identity, state)" },
	{ "working_ref_name", mod_working_ref_name, METH_VARARGS, "working_ref_name(dataset_id, bookmark)" },
	{ "manifest_hash", mod_manifest_hash, METH_O, "manifest_hash({key: manifest dict})" },
	{ "_set_error_factory", mod_set_error_factory, METH_O, "Install the exception factory." },
	{ NULL, NULL, 0, NULL },
};

static struct PyModuleDef moddef = {
	PyModuleDef_HEAD_INIT, "tether._native", "The CPython binding of libtether.", -1, mod_methods,
	NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__native(void);
PyMODINIT_FUNC PyInit__native(void)
{
	if (PyType_Ready(&RepoType) < 0)
		return NULL;
	PyObject *m = PyModule_Create(&moddef);
	if (!m)
		return NULL;
	Py_INCREF(&RepoType);
	if (PyModule_AddObject(m, "Repo", (PyObject *)&RepoType) < 0) {
		Py_DECREF(&RepoType);
		Py_DECREF(m);
		return NULL;
	}
	return m;
}
