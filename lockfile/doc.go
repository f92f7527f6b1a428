// Package lockfile is the tool lock file, symbi.lock.hcl: what the MCP
// servers and command tools of a configuration are, pinned so that a server
// that changes a tool's description, schema or annotations between runs (a
// "rug pull"), or a launcher that fetches a newer package, is noticed before
// the model sees the change.
//
// It reads and writes the file (HCL, in a stable order, meant to be
// committed and reviewed), puts a tool's definition in canonical form and
// digests it, resolves how a server is launched (the executable and its
// digest, the package and version an npx or uvx launch names), and compares
// what a server offers now with what the lock pins, as a readable diff.
//
// It imports plan and nothing else of symbi; it must not import interp, the
// engine or builtins, which use it: the compiler to read the lock into the
// plan, the toolbox to check servers against it.
package lockfile
