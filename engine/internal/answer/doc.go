// Package answer reads what a model (or a scorer) wrote in free text: the
// JSON object a plan or a score is asked for, which models wrap in prose or
// a code fence, and a clipped excerpt to quote back in a prompt or an
// error.
//
// This package imports only the standard library.
package answer
