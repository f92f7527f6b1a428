// Package redact takes a run's secrets out of everything the engine puts
// out or sends: journal lines and events (JSON, string by string, in
// place), the streamed answer (holding back what could be the start of a
// secret), errors, and model requests (RequestCache reads each message of a
// growing conversation once). A secret is found as itself or spelled with
// URL or JSON escapes, and in base64 (match.go).
//
// Which values are secrets, and the one Redactor every output path goes
// through, are the engine's. This package must not import the engine, the
// journal, policy or builtins.
package redact
