//go:build !linux

package exepages

// Trim does nothing outside Linux.
func Trim() (int, error) { return 0, nil }
