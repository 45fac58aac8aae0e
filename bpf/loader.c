/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mn-bpfcc-loader OBJECT...: registers the BPF congestion controls of the objects under names
 * unique to this process, prints them, and keeps them registered until its standard input
 * reaches end of file.
 *
 * Output on standard output, one line per congestion control, "<stem> <name>", then "ready".
 * Errors go to standard error, with exit status 1.
 *
 * Lifetime: each struct_ops map is created with BPF_F_LINK and registered through a BPF link
 * (Linux 6.4), so the registration lives exactly as long as the link's file descriptor, which
 * only this process holds. When it exits, by any route including SIGKILL, the kernel closes the
 * descriptor and unregisters the congestion control. A parent that keeps the write end of the
 * pipe on our standard input ends us by closing it, or by dying.
 *
 * libbpf 1.1 (Debian 12) neither knows ".struct_ops.link" sections nor exposes a struct_ops
 * map's initial value, so this loader (1) writes the names into the object image before
 * opening it, over the MN_CC_NAME placeholders of cc.h, (2) sets BPF_F_LINK on the maps
 * itself, and (3) creates the links with bpf_link_create.
 */
#define _GNU_SOURCE /* memmem */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* UAPI values of Linux 6.4 (include/uapi/linux/bpf.h), newer than Debian 12's headers. */
#define MN_BPF_F_LINK (1U << 13)
#define MN_BPF_STRUCT_OPS 44

/* TCP_CA_NAME_MAX (include/net/tcp.h), with the NUL. */
#define CA_NAME_MAX 16

static const char MARKER[] = "\001mncc:";
#define MARKER_LEN (sizeof(MARKER) - 1)

/* Names registered so far, printed once all are. */
#define MAX_CCS 16
static char stems[MAX_CCS][CA_NAME_MAX];
static char names[MAX_CCS][CA_NAME_MAX];
static int n_ccs;

static void fail(const char *fmt, ...)
{
	va_list ap;

	fputs("mn-bpfcc-loader: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* The whole file, read to its end (procfs files report no size); NUL-terminated. */
static char *read_file(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	size_t cap = 1 << 16, len = 0, n;
	char *buf = malloc(cap + 1);

	if (!f || !buf)
		fail("cannot open %s: %s", path, strerror(errno));
	while ((n = fread(buf + len, 1, cap - len, f)) > 0) {
		len += n;
		if (len == cap && !(buf = realloc(buf, (cap *= 2) + 1)))
			fail("cannot read %s: %s", path, strerror(errno));
	}
	if (ferror(f))
		fail("cannot read %s: %s", path, strerror(errno));
	fclose(f);
	buf[len] = '\0';
	*size = len;
	return buf;
}

/* Writes "mn<pid>_<stem>" over every placeholder name in the object image. */
static void name_ccs(char *image, size_t size, const char *path)
{
	char *at = image;

	while ((at = memmem(at, size - (at - image), MARKER, MARKER_LEN))) {
		const char *stem = at + MARKER_LEN;
		size_t stem_len = strnlen(stem, CA_NAME_MAX - MARKER_LEN);
		int len;

		if (stem_len == CA_NAME_MAX - MARKER_LEN)
			fail("%s: a congestion control name at byte %zu has no NUL within %d bytes", path,
			     (size_t)(at - image), CA_NAME_MAX);
		if (n_ccs == MAX_CCS)
			fail("more than %d congestion controls", MAX_CCS);
		memcpy(stems[n_ccs], stem, stem_len);
		len = snprintf(names[n_ccs], CA_NAME_MAX, "mn%d_%s", (int)getpid(), stems[n_ccs]);
		if (len >= CA_NAME_MAX)
			fail("%s: name mn%d_%s has %d bytes; TCP_CA_NAME_MAX allows %d", path, (int)getpid(),
			     stems[n_ccs], len, CA_NAME_MAX - 1);
		/* The placeholder starts the 16-byte name field: overwrite the field whole. */
		memset(at, 0, CA_NAME_MAX);
		memcpy(at, names[n_ccs], len);
		n_ccs++;
		at += CA_NAME_MAX;
	}
}

static void load(const char *path)
{
	size_t size;
	char *image = read_file(path, &size);
	int first = n_ccs;
	struct bpf_object *obj;
	struct bpf_map *map;
	int err;

	name_ccs(image, size, path);
	if (n_ccs == first)
		fail("%s: no congestion control named with MN_CC_NAME", path);
	obj = bpf_object__open_mem(image, size, NULL);
	if (!obj)
		fail("%s: cannot open the object: %s", path, strerror(errno));
	bpf_object__for_each_map(map, obj) {
		if (bpf_map__type(map) == BPF_MAP_TYPE_STRUCT_OPS &&
		    bpf_map__set_map_flags(map, bpf_map__map_flags(map) | MN_BPF_F_LINK))
			fail("%s: cannot set BPF_F_LINK on map %s", path, bpf_map__name(map));
	}
	err = bpf_object__load(obj);
	if (err)
		fail("%s: the kernel refused the object: %s", path, strerror(-err));
	bpf_object__for_each_map(map, obj) {
		if (bpf_map__type(map) != BPF_MAP_TYPE_STRUCT_OPS)
			continue;
		/* Fills the map's value (the programs); a BPF_F_LINK map is not registered by it. */
		if (!bpf_map__attach_struct_ops(map))
			fail("%s: cannot fill struct_ops map %s: %s", path, bpf_map__name(map), strerror(errno));
		/* Registers; the link's descriptor is kept open until exit. */
		if (bpf_link_create(bpf_map__fd(map), 0, MN_BPF_STRUCT_OPS, NULL) < 0)
			fail("%s: cannot register struct_ops map %s: %s", path, bpf_map__name(map), strerror(errno));
	}
}

/* Every name must now be among the kernel's congestion controls. */
static void check_registered(void)
{
	char *list;
	size_t size;

	list = read_file("/proc/sys/net/ipv4/tcp_available_congestion_control", &size);
	for (int i = 0; i < n_ccs; i++) {
		char *at = strstr(list, names[i]);
		size_t len = strlen(names[i]);

		if (!at || (at[len] != ' ' && at[len] != '\n' && at[len] != '\0'))
			fail("%s is not in tcp_available_congestion_control after registering: %s", names[i], list);
	}
	free(list);
}

int main(int argc, char **argv)
{
	char buf[256];

	if (argc < 2)
		fail("usage: mn-bpfcc-loader OBJECT...");
	for (int i = 1; i < argc; i++)
		load(argv[i]);
	check_registered();
	for (int i = 0; i < n_ccs; i++)
		printf("%s %s\n", stems[i], names[i]);
	printf("ready\n");
	fflush(stdout);
	while (read(STDIN_FILENO, buf, sizeof(buf)) > 0)
		;
	return 0;
}
