/*
 * ebizzy_ref: a reference build of ebizzy 0.3 for tlbfleet's fidelity harness
 * (tests/perf/fidelity_agent.py).
 *
 * Debian packages no ebizzy, and LTP's copy (utils/benchmark/ebizzy-0.3) is not in the
 * archive either, so this file was written for tlbfleet from that program's documented
 * behaviour, keeping every trait that can move its numbers:
 *   - each chunk is its own allocation (malloc, or mmap with -m), filled with records
 *     0, 1, 2, ... (record = size_t);
 *   - worker threads spin on a volatile flag until main sets it, then loop: pick a random
 *     chunk, allocate a copy buffer (malloc/free, or mmap/munmap with -m), copy the chunk
 *     (memcpy, or a byte loop with -l), pick a random key, search it (bsearch with a
 *     comparison function, or a linear scan with -z), free the buffer;
 *   - -T only writes one byte per page of the buffer; -R copies a random prefix;
 *     -p/-P keep chunks apart with permissions/holes; -M sets M_MMAP_MAX to 0;
 *   - main sleeps for -S seconds, clears the flag and divides the records by the elapsed
 *     time in whole seconds (time(2)), printing "<n> records/s" and real/user/sys lines;
 *   - threads default to twice the online CPUs, chunks to 10, chunk size to 512 KiB.
 * One fix, applied here as tlbfleet applies its own: ebizzy 0.3's generator
 * `state *= 1103515245 + 12345` starts every thread at 0 and stays there (every record is
 * chunk 0, key 0). Here each thread has a seeded linear congruential generator
 * (state = state * 1103515245 + 12345, distinct seeds per thread). The record count is
 * added up atomically (the original's unsynchronised `+=` could lose a thread's count).
 *
 *   cc -O2 -pthread -o ebizzy_ref ebizzy_ref.c
 */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

typedef size_t record_t;

static unsigned threads, chunks = 10, seconds = 10;
static size_t chunk_size = sizeof(record_t) * 64 * 1024;
static int opt_mmap, opt_no_mmap, opt_random_size, opt_own_memcpy, opt_linear, opt_touch,
    opt_permissions, opt_holes;

static record_t **chunk_mem;
static volatile int go;
static atomic_ulong records;
static long page_size;

static void die(const char *what) {
  fprintf(stderr, "ebizzy_ref: %s\n", what);
  exit(1);
}

static void *get_buffer(size_t size) {
  void *p;
  if (opt_mmap) {
    p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) p = NULL;
  } else {
    p = malloc(size);
  }
  if (p == NULL) die("cannot allocate memory; try smaller chunks");
  return p;
}

static void put_buffer(void *p, size_t size) {
  if (opt_mmap)
    munmap(p, size);
  else
    free(p);
}

static unsigned next_random(unsigned max, unsigned *state) {
  *state = *state * 1103515245u + 12345u;
  return (*state >> 16) % max;
}

static int by_value(const void *a, const void *b) {
  const record_t x = *(const record_t *)a, y = *(const record_t *)b;
  return x < y ? -1 : x > y;
}

static void *worker(void *arg) {
  unsigned state = (unsigned)(uintptr_t)arg;
  unsigned long done = 0;
  while (!go) {
  }
  while (go) {
    record_t *src = chunk_mem[next_random(chunks, &state)];
    size_t size = chunk_size;
    if (opt_random_size)
      size = (next_random((unsigned)(chunk_size / sizeof(record_t)), &state) + 1) *
             sizeof(record_t);
    char *copy = get_buffer(size);
    if (opt_touch) {
      for (size_t i = 0; i < size; i += (size_t)page_size) copy[i] = (char)0xff;
    } else {
      if (opt_own_memcpy) {
        for (size_t i = 0; i < size; i++) copy[i] = ((char *)src)[i];
      } else {
        memcpy(copy, src, size);
      }
      record_t key = next_random((unsigned)(size / sizeof(record_t)), &state);
      const record_t *found = NULL;
      if (opt_linear) {
        const record_t *r = (const record_t *)copy;
        for (size_t i = 0; i < size / sizeof(record_t); i++)
          if (r[i] == key) {
            found = &r[i];
            break;
          }
      } else {
        found = bsearch(&key, copy, size / sizeof(record_t), sizeof(record_t), by_value);
      }
      if (found == NULL) die("a key is missing from its copy");
    }
    put_buffer(copy, size);
    done++;
  }
  atomic_fetch_add(&records, done);
  return NULL;
}

static double seconds_of(struct timeval tv) { return (double)tv.tv_sec + tv.tv_usec / 1e6; }

int main(int argc, char **argv) {
  int c;
  page_size = sysconf(_SC_PAGESIZE);
  threads = 2 * (unsigned)sysconf(_SC_NPROCESSORS_ONLN);
  while ((c = getopt(argc, argv, "lmMn:pPRs:S:t:vzT")) != -1) {
    switch (c) {
      case 'l': opt_own_memcpy = 1; break;
      case 'm': opt_mmap = 1; break;
      case 'M': opt_no_mmap = 1; break;
      case 'n': chunks = (unsigned)atoi(optarg); break;
      case 'p': opt_permissions = 1; break;
      case 'P': opt_holes = 1; break;
      case 'R': opt_random_size = 1; break;
      case 's': chunk_size = (size_t)atol(optarg); break;
      case 'S': seconds = (unsigned)atoi(optarg); break;
      case 't': threads = (unsigned)atoi(optarg); break;
      case 'v': break;
      case 'z': opt_linear = 1; break;
      case 'T': opt_touch = 1; break;
      default: die("usage: ebizzy_ref [-lmMpPRvzT] [-n chunks] [-s size] [-S seconds] [-t threads]");
    }
  }
  if (chunks == 0 || seconds == 0 || threads == 0 || chunk_size < sizeof(record_t))
    die("chunks, seconds, threads and size must be positive");
  if (opt_mmap && opt_no_mmap) die("-m and -M together");
  if (opt_no_mmap) mallopt(M_MMAP_MAX, 0);

  chunk_mem = get_buffer(chunks * sizeof(record_t *));
  char **holes = opt_holes ? get_buffer(chunks * sizeof(char *)) : NULL;
  for (unsigned i = 0; i < chunks; i++) {
    chunk_mem[i] = get_buffer(chunk_size);
    if (holes) holes[i] = get_buffer((size_t)page_size);
  }
  if (holes)
    for (unsigned i = 0; i < chunks; i++) put_buffer(holes[i], (size_t)page_size);
  for (unsigned i = 0; i < chunks; i++) {
    for (size_t j = 0; j < chunk_size / sizeof(record_t); j++) chunk_mem[i][j] = j;
    if (opt_permissions && i % 2 == 0) mprotect(chunk_mem[i], chunk_size, PROT_READ);
  }

  pthread_t *tids = calloc(threads, sizeof(pthread_t));
  const unsigned seed = (unsigned)time(NULL) ^ ((unsigned)getpid() << 16);
  for (unsigned i = 0; i < threads; i++)
    if (pthread_create(&tids[i], NULL, worker, (void *)(uintptr_t)(seed + 7919u * (i + 1))))
      die("cannot create a thread");
  struct rusage before, after;
  getrusage(RUSAGE_SELF, &before);
  time_t start = time(NULL);
  go = 1;
  sleep(seconds);
  go = 0;
  double elapsed = difftime(time(NULL), start);
  getrusage(RUSAGE_SELF, &after);
  for (unsigned i = 0; i < threads; i++) pthread_join(tids[i], NULL);
  printf("%u records/s\n", (unsigned)((double)atomic_load(&records) / elapsed));
  printf("real %5.2f s\n", elapsed);
  printf("user %5.2f s\n", seconds_of(after.ru_utime) - seconds_of(before.ru_utime));
  printf("sys  %5.2f s\n", seconds_of(after.ru_stime) - seconds_of(before.ru_stime));
  return 0;
}
