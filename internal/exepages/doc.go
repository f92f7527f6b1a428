// Package exepages lets go of the executable's code that package
// initialisation mapped, once main starts.
//
// Every symbi process runs the init functions of about 240 linked packages
// before main. Each init touches its package's code, sparsely, and on every
// such fault the kernel maps not one page of the executable but the window
// around it (fault-around: 64 KB, or the whole large folio the page cache
// holds the page in), so by the time main runs most of the binary's 17 MB
// of code is resident in the process, code that the command never runs
// again. Trim drops the executable's code mappings from the process
// (madvise MADV_DONTNEED); the pages stay in the kernel's page cache, and
// the code the command runs faults back in as it runs. The peak of a run is
// then what init mapped, not that plus what the run maps: about 4.5 MiB
// less for a one-round run, 7 MiB less at 100 rounds, for about 80 more minor
// faults and no CPU time measurable in paired runs (docs/benchmarks.md,
// "Phase 3").
//
// When to call it is the command's choice. symbi's commands call Trim as
// they start, but for `symbi run` and `symbi resume`, which call it once
// their loop has gone round twice, letting go of what only started the
// run too (the compile, the plan's encoding, building the toolbox): a
// one-round run then never trims, which took 0.93-0.95 of its time for a
// peak of 17.6 MiB against 14.8 (docs/benchmarks.md, "Phase 5").
//
// madvise(MADV_RANDOM), which turns off read-ahead for a mapping, does not
// turn off fault-around (measured on Linux 6.18: the same faults and the
// same resident size), so the pages are dropped after init instead.
//
// Read-only data (type descriptors, the function tables, constants) is
// dropped too when the executable is not position-independent and has no
// RELRO segment (dataIsPristine reads its ELF header: Go's default build on
// linux/amd64), so no loader wrote into it; otherwise it stays, since a
// loader writes relocations into a position-independent executable's
// read-only data before it makes it read-only, and dropping a private page
// that was written loses the write. Writable data is never dropped.
// Dropping the read-only data lowers a long run's peak by about 0.8 MiB for
// about 100 more faults (docs/benchmarks.md, "Phase 4"). Under a debugger
// (TracerPid in /proc/self/status) Trim does nothing, since a breakpoint is
// a private copy of a code page that dropping would discard.
//
// On systems other than Linux Trim does nothing. This package must not
// import any other symbi package.
package exepages
