/* util/dynlib.c - libraries loaded on first use; see dynlib.h. */
#include "util/dynlib.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One lock for every library: loads are rare and short. */
static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;

static void load(tt_dynlib *lib)
{
	const char *env = lib->env ? getenv(lib->env) : NULL;
	const char *file = env && *env ? env : lib->soname;
	void *h = dlopen(file, RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		const char *e = dlerror();
		if (lib->how)
			snprintf(lib->why, sizeof lib->why, "cannot load %s (%s): %s; %s", lib->what, file,
				 e ? e : "not found", lib->how);
		else
			snprintf(lib->why, sizeof lib->why, "cannot load %s (%s): %s; install %s (Debian/Ubuntu; "
				 "the same library under another name elsewhere) or set %s to its path",
				 lib->what, file, e ? e : "not found", lib->package,
				 lib->env ? lib->env : "LD_LIBRARY_PATH");
		lib->state = -1;
		return;
	}
	for (size_t i = 0; i < lib->nsyms; i++) {
		void *p;
		dlerror();
		p = dlsym(h, lib->syms[i].name);
		if (!p) {
			snprintf(lib->why, sizeof lib->why, "cannot use %s (%s): it has no %s, so it is older "
				 "than tether needs; %s%s", lib->what, file, lib->syms[i].name,
				 lib->how ? "" : "install a current ", lib->how ? lib->how : lib->package);
			dlclose(h);
			lib->state = -1;
			return;
		}
		/* A function pointer's bits, as POSIX guarantees dlsym gives them. */
		memcpy(lib->syms[i].slot, &p, sizeof p);
	}
	lib->handle = h;
	lib->state = 1;
}

int tt_dynlib_load(tt_dynlib *lib, tt_error *err)
{
	int s = atomic_load_explicit(&lib->state, memory_order_acquire);
	if (s == 0) {
		pthread_mutex_lock(&load_lock);
		if (lib->state == 0)
			load(lib);
		s = lib->state;
		pthread_mutex_unlock(&load_lock);
	}
	if (s == 1)
		return 0;
	return tt_error_set(err, TT_ECAPABILITY, "%s", lib->why);
}

bool tt_dynlib_loaded(const tt_dynlib *lib)
{
	return atomic_load_explicit(&lib->state, memory_order_acquire) == 1;
}

const char *tt_dynlib_why(const tt_dynlib *lib)
{
	return atomic_load_explicit(&lib->state, memory_order_acquire) == -1 ? lib->why : NULL;
}
