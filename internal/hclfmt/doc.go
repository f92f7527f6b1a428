// Package hclfmt is the part of hashicorp/hcl's hclwrite that symbi uses,
// Format (`symbi fmt`) and TokensForValue (the REPL's values), copied from
// hcl v2.25.0 under its licence (MPL-2.0, kept in each copied file's
// header) without the rest of hclwrite.
//
// hclwrite's syntax tree compares nodes with github.com/google/go-cmp, so
// importing hclwrite at all links go-cmp (and runs its package init: 0.8 ms
// and 220 KB at every start) into the shipped binary, though neither
// formatting nor TokensForValue uses it. The copy is checked against
// hclwrite itself, which its tests may import: the same bytes for every
// configuration in the repository, every value in the tests, and every
// input FuzzFormat finds. When hclwrite stops importing go-cmp, delete this
// package and import hclwrite again.
//
// It must not import any other symbi package, nor hclwrite outside tests.
package hclfmt
