// SPDX-License-Identifier: GPL-2.0
/*
 * ftbench - the workload of "make bench", run in the lab guest.
 *
 *   ftbench getppid MS         getppid() calls
 *   ftbench read MS            one-byte read()s of /dev/zero
 *   ftbench pair MS            getppid() then getpid()
 *   ftbench write MS FILE A B  writes to FILE, alternately A and B
 *   ftbench glob MS PATTERN    expand PATTERN, open and read each file
 *
 * Runs for at least MS milliseconds, in batches, and prints the time per
 * iteration in nanoseconds, one number. Timing a run that long, not a
 * fixed count, keeps the result meaningful when the guest's clock ticks
 * coarsely (a tiny kernel under emulation may count in jiffies). getppid()
 * and getpid() are the cheapest system calls there are, so what a probe
 * or an event adds to them stands out; "pair" lets two probes (one on
 * each call) flip an event on and off once per iteration; "write" does
 * the same by writing to a tracefs file; "glob" does what a shell's
 * cat of every event's trigger file does: a directory read of each
 * event's folder, then an open and a read of each file found.
 *
 * Built static on the host (scripts/labkit/bench.py): the guest has
 * no C library.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The C library may cache getpid(); the system call is what we time. */
static void call_getppid(void)
{
	syscall(SYS_getppid);
}

static void call_getpid(void)
{
	syscall(SYS_getpid);
}

static int run_getppid(long n)
{
	for (long i = 0; i < n; i++)
		call_getppid();
	return 0;
}

static int run_pair(long n)
{
	for (long i = 0; i < n; i++) {
		call_getppid();
		call_getpid();
	}
	return 0;
}

static int run_read(long n)
{
	char c;
	int fd = open("/dev/zero", O_RDONLY);

	if (fd < 0) {
		perror("/dev/zero");
		return 1;
	}
	for (long i = 0; i < n; i++) {
		if (read(fd, &c, 1) != 1) {
			perror("read");
			return 1;
		}
	}
	close(fd);
	return 0;
}

/* Each write reopens FILE, as "echo 1 > enable" does. */
static int write_once(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_TRUNC);
	ssize_t len = strlen(text);
	int ok;

	if (fd < 0) {
		perror(path);
		return 1;
	}
	ok = write(fd, text, len) == len;
	close(fd);
	if (!ok) {
		perror(path);
		return 1;
	}
	return 0;
}

static const char *write_path, *write_a, *write_b;

/* An even count, so that every batch leaves FILE as it found it. */
static int run_write(long n)
{
	for (long i = 0; i < n; i++) {
		if (write_once(write_path, i % 2 ? write_b : write_a))
			return 1;
	}
	return 0;
}

static const char *glob_pattern;

static int read_all(const char *path)
{
	char buf[4096];
	int fd = open(path, O_RDONLY);

	if (fd < 0) {
		perror(path);
		return 1;
	}
	while (read(fd, buf, sizeof(buf)) > 0)
		;
	close(fd);
	return 0;
}

/* One iteration: the whole glob, every match read to its end. */
static int run_glob(long n)
{
	for (long i = 0; i < n; i++) {
		glob_t g;
		int bad = 0;

		if (glob(glob_pattern, 0, NULL, &g)) {
			fprintf(stderr, "%s: no match\n", glob_pattern);
			return 1;
		}
		for (size_t j = 0; j < g.gl_pathc && !bad; j++)
			bad = read_all(g.gl_pathv[j]);
		globfree(&g);
		if (bad)
			return 1;
	}
	return 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: ftbench getppid|read|pair MS\n"
			"       ftbench write MS FILE A B\n"
			"       ftbench glob MS PATTERN\n");
	return 2;
}

/*
 * Run @batch in batches of @size until @ms milliseconds have passed;
 * the batch size grows so that reading the clock costs next to nothing.
 */
static int run_for(int (*batch)(long), long size, long ms)
{
	long long start = now_ns(), end = start + ms * 1000000LL, t;
	long done = 0;

	do {
		if (batch(size))
			return 1;
		done += size;
		t = now_ns();
		if (t - start < (end - start) / 16)
			size *= 2;
	} while (t < end);
	printf("%lld\n", (t - start) / done);
	return 0;
}

int main(int argc, char **argv)
{
	long ms;

	if (argc < 3)
		return usage();
	ms = atol(argv[2]);
	if (ms <= 0)
		return usage();
	if (argc == 3 && !strcmp(argv[1], "getppid"))
		return run_for(run_getppid, 1000, ms);
	if (argc == 3 && !strcmp(argv[1], "read"))
		return run_for(run_read, 1000, ms);
	if (argc == 3 && !strcmp(argv[1], "pair"))
		return run_for(run_pair, 1000, ms);
	if (argc == 6 && !strcmp(argv[1], "write")) {
		write_path = argv[3];
		write_a = argv[4];
		write_b = argv[5];
		return run_for(run_write, 2, ms);
	}
	if (argc == 4 && !strcmp(argv[1], "glob")) {
		glob_pattern = argv[3];
		return run_for(run_glob, 1, ms);
	}
	return usage();
}
