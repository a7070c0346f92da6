/*
 * examples/backends.c - the smallest libtether program: print each kind
 * tether knows with its tier.  Build against an installed libtether:
 *
 *   cc backends.c $(pkg-config --cflags --libs libtether) -o backends
 */
#include <stdio.h>

#include <tether/tether.h>

int main(void)
{
	json_t *rows = tt_backends();
	size_t i;
	json_t *row;
	if (!rows)
		return 1;
	printf("libtether %s\n", tt_version());
	json_array_foreach(rows, i, row)
		printf("%-10s %s\n", json_string_value(json_object_get(row, "kind")),
		       json_string_value(json_object_get(row, "tier")));
	json_decref(rows);
	return 0;
}
