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
	static char *kwlist[] = { "start_dir", "outdated", NULL };
	const char *start;
	int outdated = 0;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "s|p", kwlist, &start, &outdated))
		return -1;
	if (!self->lock && !(self->lock = PyThread_allocate_lock())) {
		PyErr_NoMemory();
		return -1;
	}
	tt_error err = TT_ERROR_INIT;
	tt_repo *r = NULL;
	int rc;
	/* outdated: a dataset an older tether-vcs wrote, opened for upgrade alone */
	UNLOCKED(self, rc = outdated ? tt_repo_open_outdated(start, &r, &err) : tt_repo_open(start, &r, &err));
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

/* --- the methods, table-driven ---------------------------------------------
 *
 * Every Repo method has one shape: parse the arguments, convert them to C,
 * make one libtether call without the GIL under the Repo's lock, free the
 * arguments and turn the result (JSON, a plan pair, a string, or nothing)
 * into Python or an exception.  A method is a row: its parameters (name,
 * how to convert, default) and a small function that makes the call from
 * the converted values.  One dispatcher does the rest.
 */

enum arg_type {
	A_STR,   /* str (required unless defaulted to NULL) */
	A_OSTR,  /* str or None -> NULL */
	A_STRV,  /* a sequence of str, or None -> empty */
	A_BOOL,  /* any truth value */
	A_INT,   /* int */
	A_JSON,  /* a JSON-shaped value */
	A_OJSON, /* a JSON-shaped value, or None -> NULL */
	A_SIZE,  /* an int, not negative */
};

typedef struct arg_spec {
	const char *name;
	enum arg_type type;
	long long dflt; /* A_BOOL / A_INT default */
} arg_spec;

#define MAX_ARGS 14

/* One converted argument. */
typedef struct arg_val {
	const char *s;
	strv l;
	json_t *j;
	long long i;
} arg_val;

/* What a call left: json (out), a plan pair (pj, pt; when plan), a string. */
typedef struct call_out {
	json_t *out;
	char *pj, *pt;
	char *str;
	bool plan;
	bool none; /* return None whatever out holds */
} call_out;

typedef int (*call_fn)(tt_repo *r, arg_val *v, call_out *o, tt_error *err);

typedef struct method_spec {
	const char *name;
	call_fn call;
	size_t nrequired;
	arg_spec args[MAX_ARGS + 1]; /* ends at a NULL name */
	const char *doc;
} method_spec;

static void vals_free(arg_val *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		strv_free(&v[i].l);
		json_decref(v[i].j);
		v[i].j = NULL;
	}
}

static int convert(const arg_spec *a, PyObject *o, arg_val *v)
{
	memset(v, 0, sizeof *v);
	if (!o) { /* not given: the default */
		v->i = a->dflt;
		return 0;
	}
	switch (a->type) {
	case A_STR:
		if (!PyUnicode_Check(o)) {
			PyErr_Format(PyExc_TypeError, "%s must be str, not %s", a->name, Py_TYPE(o)->tp_name);
			return -1;
		}
		return (v->s = PyUnicode_AsUTF8(o)) ? 0 : -1;
	case A_OSTR:
		return opt_str(o, &v->s) ? 0 : -1;
	case A_STRV:
		return strv_from(o, &v->l);
	case A_BOOL: {
		int t = PyObject_IsTrue(o);
		if (t < 0)
			return -1;
		v->i = t;
		return 0;
	}
	case A_INT:
	case A_SIZE:
		v->i = PyLong_AsLongLong(o);
		if (v->i == -1 && PyErr_Occurred())
			return -1;
		if (a->type == A_SIZE && v->i < 0) {
			PyErr_Format(PyExc_ValueError, "%s must not be negative", a->name);
			return -1;
		}
		return 0;
	case A_OJSON:
		if (o == Py_None)
			return 0;
		/* fall through */
	case A_JSON:
		return (v->j = from_py(o, 0)) ? 0 : -1;
	}
	return 0;
}

static PyObject *dispatch(RepoObject *self, const method_spec *m, PyObject *args, PyObject *kw)
{
	CHECK_OPEN(self);
	char fmt[2 * MAX_ARGS + 64], *f = fmt;
	char *kwlist[MAX_ARGS + 1];
	PyObject *obj[MAX_ARGS] = { 0 };
	size_t n = 0;
	for (; m->args[n].name; n++) {
		if (n == m->nrequired)
			*f++ = '|';
		*f++ = 'O';
		kwlist[n] = (char *)m->args[n].name;
	}
	*f++ = ':';
	*f = 0;
	snprintf(f, sizeof fmt - (size_t)(f - fmt), "%s", m->name);
	kwlist[n] = NULL;
	if (!PyArg_ParseTupleAndKeywords(args, kw, fmt, kwlist, &obj[0], &obj[1], &obj[2], &obj[3], &obj[4],
					 &obj[5], &obj[6], &obj[7], &obj[8], &obj[9], &obj[10], &obj[11], &obj[12],
					 &obj[13]))
		return NULL;
	arg_val v[MAX_ARGS];
	memset(v, 0, sizeof v);
	for (size_t i = 0; i < n; i++)
		if (convert(&m->args[i], obj[i], &v[i]) < 0) {
			vals_free(v, i);
			return NULL;
		}
	tt_error err = TT_ERROR_INIT;
	call_out o = { 0 };
	int rc;
	UNLOCKED(self, rc = m->call(self->repo, v, &o, &err));
	vals_free(v, n);
	if (rc < 0) {
		json_decref(o.out);
		free(o.pj);
		free(o.pt);
		free(o.str);
		return raise_tt(&err);
	}
	tt_error_clear(&err);
	if (o.plan) {
		json_decref(o.out);
		return give_plan(o.pj, o.pt);
	}
	free(o.pj);
	free(o.pt);
	if (o.str) {
		json_decref(o.out);
		return give_str(o.str);
	}
	if (o.none) {
		json_decref(o.out);
		Py_RETURN_NONE;
	}
	return give(o.out);
}

/* A saved plan argument's length. */
/* A string list argument, NULL when empty. */
#define LIST(x) ((x).l.n ? (x).l.v : NULL), (x).l.n

/* A planned call's mode from the Python arguments: plan=True previews,
 * from_plan applies that saved plan, neither runs. */
static tt_plan_opts planned(call_out *o, bool preview, const char *from_plan)
{
	tt_plan_opts pl = TT_PLAN_OPTS_INIT;
	o->plan = preview;
	pl.mode = preview ? TT_PLAN_PREVIEW : from_plan ? TT_PLAN_APPLY : TT_PLAN_RUN;
	if (pl.mode == TT_PLAN_APPLY) {
		pl.saved = from_plan;
		pl.saved_len = strlen(from_plan);
	}
	return pl;
}

/* What a planned call gave, moved into o (a failure's partial result too). */
static int took(call_out *o, tt_plan_result *res, int rc)
{
	o->out = res->out;
	o->pj = res->plan_json;
	o->pt = res->plan_text;
	return rc;
}

static int call_objects(tt_repo *r, arg_val *v, call_out *o, tt_error *e)
{
	return tt_repo_objects(r, &o->out, e);
}

static int call_keys(tt_repo *r, arg_val *v, call_out *o, tt_error *e)
{
	return tt_repo_keys(r, &o->out, e);
}

static int call_current_rev(tt_repo *r, arg_val *v, call_out *o, tt_error *e)
{
	return tt_repo_current_rev(r, &o->str, e);
}

static int call_status(tt_repo *r, arg_val *v, call_out *o, tt_error *e)
{
	return tt_repo_status(r, v[0].l.v, v[0].l.n, (int)v[1].i, &o->out, e);
}

static int call_snapshot(tt_repo *r, arg_val *v, call_out *o, tt_error *e)
{
	return tt_repo_snapshot(r, v[0].l.v, v[0].l.n, &o->out, e);
}

static int call_add(tt_repo *r, arg_val *v, call_out *o, tt_error *e)
{
	tt_add_opts a = { .version = TT_ADD_OPTS_VERSION, .key = v[0].s, .kind = v[1].s, .locator = v[2].j, .file_policy = v[3].s,
			  .pin_policy = v[4].s, .cwd = v[5].s, .create = v[6].i };
	return tt_repo_add(r, &a, &o->out, e);
}

static int call_remove(tt_repo *r, arg_val *v, call_out *o, tt_error *e)
{
	o->none = true;
	return tt_repo_remove(r, v[0].s, e);
}

static int call_set_policy(tt_repo *r, arg_val *v, call_out *o, tt_error *e)
{
	tt_set_policy_opts so = { .version = TT_SET_POLICY_OPTS_VERSION, .keys = v[0].l.v, .nkeys = v[0].l.n,
				  .file_policy = v[1].s, .pin_policy = v[2].s };
	return tt_repo_set_policy(r, &so, &o->out, e);
}

static int call_commit(tt_repo *r, arg_val *v, call_out *o, tt_error *e)
{
	tt_commit_opts c = { .version = TT_COMMIT_OPTS_VERSION, .message = v[0].s, .keys = LIST(v[1]), .no_vcs = v[2].i, .strict = v[3].i,
			     .force = v[4].i, .no_snapshot = v[5].i };
	tt_plan_opts pl = planned(o, v[6].i, v[7].s);
	tt_plan_result res = TT_PLAN_RESULT_INIT;
	return took(o, &res, tt_repo_commit(r, &c, &pl, &res, e));
}

static int call_verify(tt_repo *r, arg_val *v, call_out *o, tt_error *e)
{
	tt_verify_opts vo = { .version = TT_VERIFY_OPTS_VERSION, .selectors = v[0].l.v, .nselectors = v[0].l.n,
			      .rev = v[1].s,
			      .flags = (v[2].i ? TT_VERIFY_DEEP : 0u) | (v[3].i ? TT_VERIFY_ALL_HISTORY : 0u) };
	return tt_repo_verify(r, &vo, &o->out, e);
}

static int call_log(tt_repo *r, arg_val *v, call_out *o, tt_error *e)
{
	tt_log_opts lo = { .version = TT_LOG_OPTS_VERSION, .key = v[0].s, .kind = v[1].s, .locator = v[2].j,
			   .ref = v[3].s, .limit = (size_t)v[4].i };
	return tt_repo_log(r, &lo, &o->out, e);
}

/* query: the rows collected as JSON (the Python side gets one list). */
typedef struct qcollect {
	json_t *columns, *rows;
} qcollect;

static int q_columns(void *ctx, size_t n, const char *const *names)
{
	qcollect *c = ctx;
	for (size_t i = 0; i < n; i++)
		if (json_array_append_new(c->columns, json_string(names[i])) < 0)
			return TT_ENOMEM;
	return 0;
}

static int q_row(void *ctx, size_t n, const char *const *cells, const size_t *lens)
{
	qcollect *c = ctx;
	json_t *row = json_array();
	if (!row)
		return TT_ENOMEM;
	for (size_t i = 0; i < n; i++) {
		json_t *v = cells[i] ? json_loadb(cells[i], lens[i], JSON_DECODE_ANY, NULL) : json_null();
		if (!v) /* a number past 64 bits: its text */
			v = json_stringn(cells[i], lens[i]);
		json_array_append_new(row, v);
	}
	return json_array_append_new(c->rows, row) < 0 ? TT_ENOMEM : 0;
}

static int call_query(tt_repo *r, arg_val *v, call_out *o, tt_error *e)
{
	qcollect c = { json_array(), json_array() };
	tt_query_sink sink = { .columns = q_columns, .row = q_row, .ctx = &c };
	tt_query_opts q = TT_QUERY_OPTS_INIT;
	q.sql = v[0].s;
	q.rev = v[1].s;
	q.keys = (const char *const *)v[2].l.v;
	q.nkeys = v[2].l.n;
	q.explain = v[3].i;
	q.schema = v[4].i;
	q.sink = &sink;
	q.json_cells = true;
	int rc = tt_repo_query(r, &q, &o->out, e);
	if (rc == 0 && o->out && q.sql && !q.explain) {
		json_object_set_new(o->out, "columns", c.columns);
		json_object_set_new(o->out, "rows", c.rows);
	} else {
		json_decref(c.columns);
		json_decref(c.rows);
	}
	return rc;
}

static int call_diff(tt_repo *r, arg_val *v, call_out *o, tt_error *e)
{
	tt_diff_opts d = { .version = TT_DIFF_OPTS_VERSION, .rev_a = v[0].s, .rev_b = v[1].s,
			   .selectors = v[2].l.v, .nselectors = v[2].l.n, .content = v[3].i };
	return tt_repo_diff(r, &d, &o->out, e);
}

static int call_new(tt_repo *r, arg_val *v, call_out *o, tt_error *e)
{
	tt_new_opts n = { .version = TT_NEW_OPTS_VERSION, .rev = v[0].s, .bookmark = v[1].s, .shared = v[2].i, .keep = v[3].i, .eager = (int)v[4].i,
			  .discard = v[5].i, .adopt = v[8].i };
	tt_plan_opts pl = planned(o, v[6].i, v[7].s);
	tt_plan_result res = TT_PLAN_RESULT_INIT;
	return took(o, &res, tt_repo_new(r, &n, &pl, &res, e));
}

static int call_open_object(tt_repo *r, arg_val *v, call_out *o, tt_error *e)
{
	return tt_repo_open_object(r, v[0].s, v[1].s, (int)v[2].i, &o->out, e);
}

/* A promote check's output, as it comes: the process's standard error. */
static void check_to_stderr(void *ctx, const char *data, size_t len)
{
	(void)ctx;
	fwrite(data, 1, len, stderr);
	fflush(stderr);
}

static int call_promote(tt_repo *r, arg_val *v, call_out *o, tt_error *e)
{
	tt_promote_opts p = { .version = TT_PROMOTE_OPTS_VERSION, .keys = LIST(v[0]), .rev = v[1].s, .strategy = v[2].s,
			      .message = v[3].s, .check = v[6].s, .check_output = check_to_stderr };
	tt_plan_opts pl = planned(o, v[4].i, v[5].s);
	tt_plan_result res = TT_PLAN_RESULT_INIT;
	return took(o, &res, tt_repo_promote(r, &p, &pl, &res, e));
}

static int call_pull(tt_repo *r, arg_val *v, call_out *o, tt_error *e)
{
	tt_pull_opts po = { .version = TT_PULL_OPTS_VERSION, .bookmark = v[0].s, .selectors = v[1].l.v,
			    .nselectors = v[1].l.n, .message = v[2].s };
	return tt_repo_pull(r, &po, &o->out, e);
}

static int call_undo(tt_repo *r, arg_val *v, call_out *o, tt_error *e)
{
	return tt_repo_undo(r, v[0].s, v[1].i, &o->out, e);
}

static int call_repair(tt_repo *r, arg_val *v, call_out *o, tt_error *e)
{
	tt_repair_opts rp = { .version = TT_REPAIR_OPTS_VERSION, .selectors = v[0].l.v, .nselectors = v[0].l.n,
			      .all_history = v[1].i };
	tt_plan_opts pl = planned(o, v[2].i, v[3].s);
	tt_plan_result res = TT_PLAN_RESULT_INIT;
	return took(o, &res, tt_repo_repair(r, &rp, &pl, &res, e));
}

static int call_restore(tt_repo *r, arg_val *v, call_out *o, tt_error *e)
{
	tt_restore_opts rs = { .version = TT_RESTORE_OPTS_VERSION, .selectors = v[0].l.v, .nselectors = v[0].l.n,
			       .rev = v[1].s, .at = v[5].s, .discard = v[2].i };
	tt_plan_opts pl = planned(o, v[3].i, v[4].s);
	tt_plan_result res = TT_PLAN_RESULT_INIT;
	return took(o, &res, tt_repo_restore(r, &rs, &pl, &res, e));
}

static int call_ops(tt_repo *r, arg_val *v, call_out *o, tt_error *e)
{
	return tt_repo_ops(r, v[0].i > 0 ? (size_t)v[0].i : (size_t)-1, &o->out, NULL, e);
}

static int call_gc(tt_repo *r, arg_val *v, call_out *o, tt_error *e)
{
	tt_gc_opts g = { .version = TT_GC_OPTS_VERSION, .dry_run = v[0].i, .release_foreign = v[1].i, .prune_bookmarks = v[2].i,
			 .keep_bookmarks = v[3].l.v, .nkeep = v[3].l.n, .force_prune = v[4].i,
			 .delete_stores = v[5].i, .stores = v[6].l.v, .nstores = v[6].l.n };
	if (v[7].i && v[9].i) { /* plan_gc(scope=): its bookmarks (none: all), excluded commits, gone bookmarks */
		g.scoped = true;
		g.scope_bookmarks = v[10].l.n ? v[10].l.v : NULL;
		g.nscope_bookmarks = v[10].l.n;
		g.excluded_commits = v[11].l.n ? v[11].l.v : NULL;
		g.nexcluded = v[11].l.n;
		g.gone_bookmarks = v[12].l.n ? v[12].l.v : NULL;
		g.ngone = v[12].l.n;
	}
	tt_plan_opts pl = planned(o, v[7].i, v[8].s);
	tt_plan_result res = TT_PLAN_RESULT_INIT;
	return took(o, &res, tt_repo_gc(r, &g, &pl, &res, e));
}

static int call_recover(tt_repo *r, arg_val *v, call_out *o, tt_error *e)
{
	return tt_repo_recover(r, v[0].l.v, v[0].l.n, v[0].l.n > 0, &o->out, e);
}

static int call_forget_workspace(tt_repo *r, arg_val *v, call_out *o, tt_error *e)
{
	tt_forget_opts fg = { .version = TT_FORGET_OPTS_VERSION, .workspace_id = v[0].s };
	tt_plan_opts pl = planned(o, v[1].i, v[2].s);
	tt_plan_result res = TT_PLAN_RESULT_INIT;
	return took(o, &res, tt_repo_forget_workspace(r, &fg, &pl, &res, e));
}

static int call_abandon(tt_repo *r, arg_val *v, call_out *o, tt_error *e)
{
	return tt_repo_abandon(r, v[0].l.v, v[0].l.n, v[1].i, &o->out, e);
}

static int call_drop(tt_repo *r, arg_val *v, call_out *o, tt_error *e)
{
	tt_drop_opts d = { .version = TT_DROP_OPTS_VERSION, .bookmark = v[0].s, .to = v[1].s, .delete_stores = v[2].i,
			   .force_prune = v[3].i, .release_foreign = v[6].i };
	tt_plan_opts pl = planned(o, v[4].i, v[5].s);
	tt_plan_result res = TT_PLAN_RESULT_INIT;
	return took(o, &res, tt_repo_drop(r, &d, &pl, &res, e));
}

static int call_upgrade(tt_repo *r, arg_val *v, call_out *o, tt_error *e)
{
	tt_upgrade_opts up = { .version = TT_UPGRADE_OPTS_VERSION, .ignore_immutable = v[0].i };
	tt_plan_opts pl = planned(o, v[1].i, v[2].s);
	tt_plan_result res = TT_PLAN_RESULT_INIT;
	return took(o, &res, tt_repo_upgrade(r, &up, &pl, &res, e));
}

static int call_export(tt_repo *r, arg_val *v, call_out *o, tt_error *e)
{
	tt_export_opts eo = { .version = TT_EXPORT_OPTS_VERSION, .revs = v[0].l.v, .nrevs = v[0].l.n,
			      .listings = v[1].i, .workspace = v[2].i };
	return tt_repo_export(r, &eo, &o->out, e);
}

static int call_import(tt_repo *r, arg_val *v, call_out *o, tt_error *e)
{
	/* plan=True previews the rows' plan; otherwise a saved plan is applied
	 * (tether-vcs's Repo.import_objects plans, then applies what it got). */
	tt_import_opts im = { .version = TT_IMPORT_OPTS_VERSION, .rows = v[0].j, .sync = v[3].i };
	const char *fp = v[2].s;
	tt_plan_opts pl = planned(o, v[1].i, fp ? fp : "");
	tt_plan_result res = TT_PLAN_RESULT_INIT;
	return took(o, &res, tt_repo_import(r, &im, &pl, &res, e));
}

static int call_list_bookmarks(tt_repo *r, arg_val *v, call_out *o, tt_error *e)
{
	return tt_repo_list_bookmarks(r, v[0].i, &o->out, e);
}

static int call_set_expiry(tt_repo *r, arg_val *v, call_out *o, tt_error *e)
{
	return tt_repo_set_expiry(r, v[0].s, v[1].i, v[2].i, &o->out, e);
}

static int call_gc_expired(tt_repo *r, arg_val *v, call_out *o, tt_error *e)
{
	tt_drop_opts d = { .version = TT_DROP_OPTS_VERSION, .dry_run = v[0].i, .delete_stores = v[1].i,
			   .force_prune = v[2].i, .release_foreign = v[3].i };
	return tt_repo_gc_expired(r, &d, &o->out, e);
}

static int call_bookmarks(tt_repo *r, arg_val *v, call_out *o, tt_error *e)
{
	return tt_repo_bookmarks(r, &o->out, e);
}

#define ARGS(...) { __VA_ARGS__, { NULL, 0, 0 } }
#define NOARGS { { NULL, 0, 0 } }

static const method_spec repo_specs[] = {
	{ "objects", call_objects, 0, NOARGS, "The working tree's manifests {key: dict}." },
	{ "keys", call_keys, 0, NOARGS, "Every registered key, sorted." },
	{ "query", call_query, 0,
	  ARGS({ "sql", A_OSTR, 0 }, { "rev", A_OSTR, 0 }, { "keys", A_STRV, 0 }, { "explain", A_BOOL, 0 },
	       { "schema", A_BOOL, 0 }),
	  "tt_repo_query" },
	{ "current_rev", call_current_rev, 0, NOARGS, "The working copy's commit." },
	{ "status", call_status, 0, ARGS({ "selectors", A_STRV, 0 }, { "snapshot", A_INT, -1 }), "tt_repo_status" },
	{ "snapshot", call_snapshot, 0, ARGS({ "selectors", A_STRV, 0 }), "tt_repo_snapshot" },
	{ "add", call_add, 3,
	  ARGS({ "key", A_OSTR, 0 }, { "kind", A_STR, 0 }, { "locator", A_JSON, 0 }, { "file", A_OSTR, 0 },
	       { "pin", A_OSTR, 0 }, { "cwd", A_OSTR, 0 }, { "create", A_BOOL, 0 }),
	  "tt_repo_add" },
	{ "remove", call_remove, 1, ARGS({ "key", A_STR, 0 }), "tt_repo_remove" },
	{ "set_policy", call_set_policy, 1, ARGS({ "keys", A_STRV, 0 }, { "file", A_OSTR, 0 }, { "pin", A_OSTR, 0 }),
	  "tt_repo_set_policy" },
	{ "commit", call_commit, 0,
	  ARGS({ "message", A_OSTR, 0 }, { "keys", A_STRV, 0 }, { "no_vcs", A_BOOL, 0 }, { "strict", A_BOOL, 0 },
	       { "force", A_BOOL, 0 }, { "no_snapshot", A_BOOL, 0 }, { "plan_only", A_BOOL, 0 },
	       { "from_plan", A_OSTR, 0 }),
	  "tt_repo_commit" },
	{ "verify", call_verify, 0,
	  ARGS({ "selectors", A_STRV, 0 }, { "rev", A_OSTR, 0 }, { "deep", A_BOOL, 0 }, { "all_history", A_BOOL, 0 }),
	  "tt_repo_verify" },
	{ "log", call_log, 0,
	  ARGS({ "key", A_OSTR, 0 }, { "kind", A_OSTR, 0 }, { "locator", A_OJSON, 0 }, { "ref", A_OSTR, 0 },
	       { "limit", A_SIZE, 20 }),
	  "tt_repo_log" },
	{ "diff", call_diff, 0,
	  ARGS({ "rev_a", A_OSTR, 0 }, { "rev_b", A_OSTR, 0 }, { "selectors", A_STRV, 0 }, { "content", A_BOOL, 0 }),
	  "tt_repo_diff" },
	{ "new", call_new, 0,
	  ARGS({ "rev", A_OSTR, 0 }, { "bookmark", A_OSTR, 0 }, { "shared", A_BOOL, 0 }, { "keep", A_BOOL, 0 },
	       { "eager", A_INT, -1 }, { "discard", A_BOOL, 0 }, { "plan_only", A_BOOL, 0 },
	       { "from_plan", A_OSTR, 0 }, { "adopt", A_BOOL, 0 }),
	  "tt_repo_new" },
	{ "open_object", call_open_object, 1, ARGS({ "key", A_STR, 0 }, { "rev", A_OSTR, 0 }, { "read_only", A_INT, -1 }),
	  "tt_repo_open_object" },
	{ "promote", call_promote, 0,
	  ARGS({ "keys", A_STRV, 0 }, { "rev", A_OSTR, 0 }, { "strategy", A_OSTR, 0 }, { "message", A_OSTR, 0 },
	       { "plan_only", A_BOOL, 0 }, { "from_plan", A_OSTR, 0 }, { "check", A_OSTR, 0 }),
	  "tt_repo_promote" },
	{ "pull", call_pull, 0, ARGS({ "bookmark", A_OSTR, 0 }, { "selectors", A_STRV, 0 }, { "message", A_OSTR, 0 }),
	  "tt_repo_pull" },
	{ "undo", call_undo, 0, ARGS({ "op_id", A_OSTR, 0 }, { "discard", A_BOOL, 0 }), "tt_repo_undo" },
	{ "repair", call_repair, 0,
	  ARGS({ "selectors", A_STRV, 0 }, { "all_history", A_BOOL, 0 }, { "plan_only", A_BOOL, 0 },
	       { "from_plan", A_OSTR, 0 }),
	  "tt_repo_repair" },
	{ "restore", call_restore, 0,
	  ARGS({ "selectors", A_STRV, 0 }, { "rev", A_OSTR, 0 }, { "discard", A_BOOL, 0 }, { "plan_only", A_BOOL, 0 },
	       { "from_plan", A_OSTR, 0 }, { "at", A_OSTR, 0 }),
	  "tt_repo_restore" },
	{ "ops", call_ops, 0, ARGS({ "limit", A_INT, 0 }), "tt_repo_ops" },
	{ "gc", call_gc, 0,
	  ARGS({ "dry_run", A_BOOL, 1 }, { "release_foreign", A_BOOL, 0 }, { "prune_bookmarks", A_BOOL, 0 },
	       { "keep_bookmarks", A_STRV, 0 }, { "force_prune", A_BOOL, 0 }, { "delete_stores", A_BOOL, 0 },
	       { "stores", A_STRV, 0 }, { "plan_only", A_BOOL, 0 }, { "from_plan", A_OSTR, 0 },
	       { "scoped", A_BOOL, 0 }, { "scope_bookmarks", A_STRV, 0 }, { "scope_excluded", A_STRV, 0 },
	       { "scope_gone", A_STRV, 0 }),
	  "tt_repo_gc" },
	{ "recover", call_recover, 0, ARGS({ "selectors", A_STRV, 0 }), "tt_repo_recover" },
	{ "forget_workspace", call_forget_workspace, 0,
	  ARGS({ "workspace_id", A_OSTR, 0 }, { "plan_only", A_BOOL, 0 }, { "from_plan", A_OSTR, 0 }),
	  "tt_repo_forget_workspace" },
	{ "abandon", call_abandon, 1, ARGS({ "revs", A_STRV, 0 }, { "gc", A_BOOL, 0 }), "tt_repo_abandon" },
	{ "drop", call_drop, 0,
	  ARGS({ "bookmark", A_OSTR, 0 }, { "to", A_OSTR, 0 }, { "delete_stores", A_BOOL, 0 },
	       { "force_prune", A_BOOL, 0 }, { "plan_only", A_BOOL, 0 }, { "from_plan", A_OSTR, 0 },
	       { "release_foreign", A_BOOL, 0 }),
	  "tt_repo_drop" },
	{ "upgrade", call_upgrade, 0,
	  ARGS({ "ignore_immutable", A_BOOL, 0 }, { "plan_only", A_BOOL, 0 }, { "from_plan", A_OSTR, 0 }),
	  "tt_repo_upgrade" },
	{ "export", call_export, 0,
	  ARGS({ "revs", A_STRV, 0 }, { "listings", A_BOOL, 0 }, { "workspace", A_BOOL, 0 }), "tt_repo_export" },
	{ "import_", call_import, 0,
	  ARGS({ "rows", A_OJSON, 0 }, { "plan_only", A_BOOL, 0 }, { "from_plan", A_OSTR, 0 }, { "sync", A_BOOL, 0 }),
	  "tt_repo_plan_import / tt_repo_apply_import" },
	{ "list_bookmarks", call_list_bookmarks, 0, ARGS({ "stores", A_BOOL, 1 }),
	  "tt_repo_list_bookmarks: every bookmark, the trunk first, with head, expiry, working branches and "
	  "checkouts (stores: also ask each store for its working branches)." },
	{ "set_expiry", call_set_expiry, 2,
	  ARGS({ "bookmark", A_STR, 0 }, { "expires", A_INT, 0 }, { "clear", A_BOOL, 0 }),
	  "tt_repo_set_expiry: set bookmark's expiry to expires (UTC seconds since the epoch), or clear it (clear: "
	  "expires unused); a commit on the bookmark, made in a checkout on it." },
	{ "gc_expired", call_gc_expired, 0,
	  ARGS({ "dry_run", A_BOOL, 1 }, { "delete_stores", A_BOOL, 0 }, { "force_prune", A_BOOL, 0 },
	       { "release_foreign", A_BOOL, 0 }),
	  "tt_repo_gc_expired: drop every bookmark whose expiry has passed, each as tt_repo_drop would (dry_run: "
	  "plan each drop, apply none)." },
	{ "bookmarks", call_bookmarks, 0, NOARGS,
	  "tt_repo_bookmarks: the dataset repository's bookmarks {name: commit}." },
};

/* One C entry point per row: METH_VARARGS cannot carry the row itself. */
#define STUB(i)                                                                              \
	static PyObject *stub_##i(RepoObject *self, PyObject *args, PyObject *kw)               \
	{                                                                                    \
		return dispatch(self, &repo_specs[i], args, kw);                             \
	}
STUB(0) STUB(1) STUB(2) STUB(3) STUB(4) STUB(5) STUB(6) STUB(7) STUB(8) STUB(9) STUB(10) STUB(11) STUB(12)
STUB(13) STUB(14) STUB(15) STUB(16) STUB(17) STUB(18) STUB(19) STUB(20) STUB(21) STUB(22) STUB(23) STUB(24)
STUB(25) STUB(26) STUB(27) STUB(28) STUB(29) STUB(30) STUB(31) STUB(32)
typedef PyObject *(*stub_fn)(RepoObject *, PyObject *, PyObject *);
static const stub_fn stubs[] = { stub_0, stub_1, stub_2, stub_3, stub_4, stub_5, stub_6, stub_7, stub_8, stub_9,
				 stub_10, stub_11, stub_12, stub_13, stub_14, stub_15, stub_16, stub_17, stub_18,
				 stub_19, stub_20, stub_21, stub_22, stub_23, stub_24, stub_25, stub_26, stub_27,
				 stub_28, stub_29, stub_30, stub_31, stub_32 };
#define NSPECS (sizeof repo_specs / sizeof repo_specs[0])
_Static_assert(sizeof stubs / sizeof stubs[0] == NSPECS, "one stub per method row");

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

/* tt_repo_cancel: not under the Repo's lock, which the call it stops holds
 * (it only sets a flag, so any thread may). */
static PyObject *Repo_cancel(RepoObject *self, PyObject *noargs)
{
	(void)noargs;
	CHECK_OPEN(self);
	tt_repo_cancel(self->repo);
	Py_RETURN_NONE;
}

/* The rows as methods, set_progress and cancel; filled in at import. */
static PyMethodDef Repo_methods[NSPECS + 3];

/* A row's docstring, led by its signature (so inspect.signature reads it:
 * "name($self, /, a, b=None)\n--\n\n"); NULL when out of memory. */
static char *signature_doc(const method_spec *m)
{
	char buf[1024];
	size_t at = (size_t)snprintf(buf, sizeof buf, "%s($self, /", m->name);
	for (size_t i = 0; m->args[i].name && at < sizeof buf; i++) {
		const arg_spec *a = &m->args[i];
		at += (size_t)snprintf(buf + at, sizeof buf - at, ", %s", a->name);
		if (i < m->nrequired || at >= sizeof buf)
			continue;
		if (a->type == A_BOOL)
			at += (size_t)snprintf(buf + at, sizeof buf - at, "=%s", a->dflt ? "True" : "False");
		else if (a->type == A_INT || a->type == A_SIZE)
			at += (size_t)snprintf(buf + at, sizeof buf - at, "=%lld", a->dflt);
		else
			at += (size_t)snprintf(buf + at, sizeof buf - at, "=None");
	}
	if (at < sizeof buf)
		snprintf(buf + at, sizeof buf - at, ")\n--\n\n%s", m->doc);
	size_t n = strlen(buf) + 1;
	char *doc = PyMem_Malloc(n);
	if (doc)
		memcpy(doc, buf, n);
	return doc;
}

static int fill_methods(void)
{
	for (size_t i = 0; i < NSPECS; i++) {
		char *doc = signature_doc(&repo_specs[i]);
		if (!doc) {
			PyErr_NoMemory();
			return -1;
		}
		Repo_methods[i] = (PyMethodDef){ repo_specs[i].name, (PyCFunction)(void (*)(void))stubs[i],
						 METH_VARARGS | METH_KEYWORDS, doc };
	}
	Repo_methods[NSPECS] = (PyMethodDef){ "set_progress", (PyCFunction)Repo_set_progress, METH_O,
					      "Call fn(phase, key, done, total) as objects finish long steps (None: stop)." };
	Repo_methods[NSPECS + 1] = (PyMethodDef){ "cancel", (PyCFunction)Repo_cancel, METH_NOARGS,
						  "cancel($self, /)\n--\n\nStop the running fingerprint or verify: no "
						  "object starts after it, and the call fails (nothing written)." };
	return 0;
}

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
	int rc = tt_compute_pin_id(kind, ji, js, ds, out, &err);
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
	int rc = tt_compute_listing_name(kind, ji, js, out, &err);
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
	if (tt_compute_working_ref_name(ds, bookmark, &out, &err) < 0) {
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
	int rc = tt_manifest_hash(j, hex, &err);
	json_decref(j);
	if (rc < 0)
		return raise_tt(&err);
	return PyUnicode_FromString(hex);
}

/* export_write(bundle, path, format, append) -> files written */
static PyObject *mod_export_write(PyObject *m, PyObject *args)
{
	PyObject *bundle;
	const char *path, *format;
	int append = 0;
	if (!PyArg_ParseTuple(args, "Oss|p", &bundle, &path, &format, &append))
		return NULL;
	json_t *j = from_py(bundle, 0);
	if (!j)
		return NULL;
	tt_error err = TT_ERROR_INIT;
	size_t n = 0;
	int rc;
	Py_BEGIN_ALLOW_THREADS
	rc = tt_export_write(j, path, format, append, &n, &err);
	Py_END_ALLOW_THREADS
	json_decref(j);
	if (rc < 0)
		return raise_tt(&err);
	return PyLong_FromSize_t(n);
}

/* export_publish(bundle, dsn, schema, dry_run) -> report */
static PyObject *mod_export_publish(PyObject *m, PyObject *args)
{
	PyObject *bundle;
	const char *dsn, *schema;
	int dry = 0;
	if (!PyArg_ParseTuple(args, "Oss|p", &bundle, &dsn, &schema, &dry))
		return NULL;
	json_t *j = from_py(bundle, 0);
	if (!j)
		return NULL;
	tt_error err = TT_ERROR_INIT;
	json_t *out = NULL;
	int rc;
	Py_BEGIN_ALLOW_THREADS
	rc = tt_export_publish(j, dsn, schema, dry, &out, &err);
	Py_END_ALLOW_THREADS
	json_decref(j);
	return finish(rc, out, &err);
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
	{ "export_write", mod_export_write, METH_VARARGS, "export_write(bundle, path, format, append=False)" },
	{ "export_publish", mod_export_publish, METH_VARARGS, "export_publish(bundle, dsn, schema, dry_run=False)" },
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
	if (!Repo_methods[0].ml_name && fill_methods() < 0)
		return NULL;
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
