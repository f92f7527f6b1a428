// Package jsonenc appends JSON values exactly as encoding/json writes them
// (with HTML escaping off): strings, float64s and json.RawMessage values. It
// is the runtime of the encoders internal/jsongen writes, which encode a
// package's types without reflection, so that a process that encodes a
// type once does not pay for encoding/json's first look at it.
//
// Every function here is held to encoding/json by a fuzz target.
//
// This package must not import any other symbi package.
package jsonenc
