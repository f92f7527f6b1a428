// Package jsongen writes, for a package's struct types, functions that append
// their JSON form exactly as encoding/json.Marshal writes it (HTML escaping
// off) without reflection. encoding/json's first encoding of a type builds
// its encoder by reflection: for a plan's fifty types that was about a tenth
// of a one-round `symbi run`, paid by every process. The generated code
// costs what writing the bytes costs.
//
// It reads the package's source (go/parser, no type checking), so that it
// runs whatever state the generated file is in. What it supports is what the
// types it serves use: strings, bools, integers, float64, json.RawMessage,
// pointers, slices, maps with string keys, and named types of those; a type
// with its own JSON form gives it with a method
//
//	func (T) appendJSON(b []byte) ([]byte, error)
//
// which its MarshalJSON must agree with. Anything else (embedded fields,
// interfaces, the string and omitzero options) is an error, never a silent
// difference from encoding/json. The package's tests hold the output to
// encoding/json's.
//
// Regenerate after changing a type it serves (each generated file names
// its command); a test of the served package fails while the file is stale.
//
// This package must not import any other symbi package but internal/jsonenc.
package jsongen
