/*
 * munmap_ref: a reference build of Alex Shi's 2012 TLB range-flush benchmark (munmap.c, run
 * by mmtests as "tlbflush") for tlbfleet's fidelity harness (tests/perf/fidelity_agent.py).
 *
 * The original is not packaged by Debian; this file was written for tlbfleet from its
 * published behaviour, keeping every trait that can move its numbers:
 *   - one shared anonymous mapping of FILE_SIZE for the readers, one byte written per page;
 *   - FILE_SIZE / (n pages) further shared anonymous mappings of n pages each, the pieces
 *     the main thread unmaps one after another;
 *   - t reader threads, each with 4096 offsets from rand() (one unseeded sequence shared by
 *     all), poll a volatile flag with usleep(1), then loop over p accesses (read, or write
 *     with -w 1) counting loops while the flag is set;
 *   - main sleeps one second after creating the threads, sets the flag, times the munmaps
 *     plus a 10 ms sleep after the last, clears the flag and prints
 *     "munmap use Xms Yns/time, memory access uses Z times/thread/ms, cost Wns/time".
 * One fix, the one tlbfleet applies too: the original wrote only the first page of each
 * piece, so a kernel that flushes only present pages flushed one page whatever -n said;
 * here every page of every piece is written.
 *
 *   cc -O2 -pthread -DFILE_SIZE='(128L<<20)' -o munmap_ref munmap_ref.c
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#ifndef FILE_SIZE
#define FILE_SIZE (128L << 20)
#endif
#define PAGE 4096L
#define OFFSETS 4096

static volatile int running;
static char *region;
static int accesses = 512, writes;

static long now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

static void *reader(void *arg) {
  long *loops = arg;
  int offsets[OFFSETS];
  for (int i = 0; i < OFFSETS; i++) offsets[i] = rand();
  while (!running) usleep(1);
  for (*loops = 0; running; (*loops)++) {
    if (writes) {
      for (int k = 0; k < accesses; k++) region[offsets[k] % FILE_SIZE] = 1;
    } else {
      for (int k = 0; k < accesses; k++) (void)*(volatile char *)(region + offsets[k] % FILE_SIZE);
    }
  }
  return NULL;
}

int main(int argc, char **argv) {
  int n = 8, t = 0, c;
  while ((c = getopt(argc, argv, "n:p:w:t:")) != -1) {
    switch (c) {
      case 'n': n = atoi(optarg); break;
      case 'p': accesses = atoi(optarg); break;
      case 'w': writes = atoi(optarg); break;
      case 't': t = atoi(optarg); break;
      default:
        fprintf(stderr, "usage: munmap_ref [-n pages] [-p accesses] [-w 0|1] -t threads\n");
        return 1;
    }
  }
  if (n <= 0 || t <= 0 || accesses <= 0 || accesses > OFFSETS) {
    fprintf(stderr, "munmap_ref: want -n > 0, -t > 0 and 0 < -p <= %d\n", OFFSETS);
    return 1;
  }
  const long pieces = FILE_SIZE / PAGE / n;
  char **piece = calloc((size_t)pieces, sizeof(char *));
  region = mmap(NULL, FILE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (region == MAP_FAILED) return perror("mmap"), 1;
  for (long j = 0; j < pieces; j++) {
    piece[j] = mmap(NULL, PAGE * n, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (piece[j] == MAP_FAILED) return perror("mmap"), 1;
    for (long off = 0; off < PAGE * n; off += PAGE) piece[j][off] = 1; /* the fix */
  }
  for (long off = 0; off < FILE_SIZE; off += PAGE) region[off] = 0;

  pthread_t *tids = calloc((size_t)t, sizeof(pthread_t));
  long *loops = calloc((size_t)t, sizeof(long));
  for (int i = 0; i < t; i++)
    if (pthread_create(&tids[i], NULL, reader, &loops[i])) return perror("pthread_create"), 1;
  sleep(1);
  long start = now_ns();
  running = 1;
  for (long j = 0; j < pieces; j++)
    if (munmap(piece[j], PAGE * n) != 0) return perror("munmap"), 1;
  usleep(10000);
  running = 0;
  long flush_ns = now_ns() - start;
  long all_loops = 0;
  for (int i = 0; i < t; i++) {
    pthread_join(tids[i], NULL);
    all_loops += loops[i];
  }
  const double access_count = (double)all_loops * accesses;
  printf("munmap use %ldms %ldns/time, memory access uses %ld times/thread/ms, cost %ldns/time\n",
         flush_ns / 1000000, flush_ns / pieces, (long)(access_count * 1e6 / t / flush_ns),
         (long)(flush_ns * (double)t / access_count));
  return 0;
}
