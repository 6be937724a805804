// glibc's malloc tuning (mallopt, malloc_trim) for CairnEngine/ProcessMemory.swift: Glibc's
// Swift module leaves out <malloc.h>.
#include <malloc.h>
