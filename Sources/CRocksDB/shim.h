#include <rocksdb/c.h>
// mallopt(M_ARENA_MAX): glibc's malloc tuning for RocksDB's many threads (Rocks/ProcessMemory).
#include <malloc.h>
