// The allocator settings the CLI runs with (docs/reliability.md#the-allocator):
// importing a million-node model touches over a gigabyte of small heap
// objects, and with 4 KiB pages and a heap that shrinks and grows again
// between stages, most of its time went to page faults and TLB misses.
#pragma once

namespace texplan::cli {

// Call first in main. With `huge_pages`, where the kernel gives transparent
// huge pages on request, starts the program once more (same arguments)
// with glibc's malloc asking for them (GLIBC_TUNABLES, which glibc reads
// only at start); otherwise, or if that fails, sets the same growth and
// trimming with mallopt. A GLIBC_TUNABLES that already sets malloc
// tunables is left as the user gave it.
void tune_allocator(char** argv, bool huge_pages);

// What the process's malloc runs with, for --verbose: "huge pages" where
// glibc asks the kernel for them (GLIBC_TUNABLES), else "4 KiB pages".
const char* allocator_pages();

}  // namespace texplan::cli
