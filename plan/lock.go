package plan

import (
	"encoding/json"
	"path/filepath"
	"strings"
)

// Lock is what the configuration's lock file (symbi.lock.hcl) pins: what
// each MCP server is (how it is launched and what answers) and what each
// of its tools is (the digest of its definition, and the definition), and
// the executable of each command tool. Every run checks the servers and
// tools it starts against it; `symbi lock` writes it. Nil in a plan: the
// configuration has no lock file, and nothing is checked.
type Lock struct {
	// File is the lock file's path relative to the configuration directory;
	// Digest is "sha256:" and the SHA-256 of its bytes, so a plan changes
	// when a pinned tool does.
	File         string         `json:"file"`
	Digest       string         `json:"digest"`
	Servers      []LockedServer `json:"servers,omitempty"`
	CommandTools []LockedTool   `json:"command_tools,omitempty"`
}

// LockedServer is one mcp_server of the lock file, by name ("fs" for
// mcp_server.fs).
type LockedServer struct {
	Name string `json:"name"`
	// Command is the server's argv as the configuration writes it (an
	// env() call as its source, never its value); URL likewise.
	Command []string `json:"command,omitempty"`
	URL     string   `json:"url,omitempty"`
	// Executable is the program that argv[0] resolved to, every link
	// followed, and SHA256 its digest ("sha256:…").
	Executable string `json:"executable,omitempty"`
	SHA256     string `json:"sha256,omitempty"`
	// Launcher is npx, uvx or another program that fetches and runs a
	// package; Package and Version are the package it names and the
	// version written ("" when none is).
	Launcher string `json:"launcher,omitempty"`
	Package  string `json:"package,omitempty"`
	Version  string `json:"version,omitempty"`
	// What answered: the protocol version it agreed to and its
	// implementation's name and version.
	ProtocolVersion string       `json:"protocol_version,omitempty"`
	ServerName      string       `json:"server_name,omitempty"`
	ServerVersion   string       `json:"server_version,omitempty"`
	Tools           []LockedTool `json:"tools,omitempty"`
}

// LockedTool is one pinned tool. For a server's tool: its name, the digest
// of its canonical definition and the definition (canonical JSON of name,
// title, description, input and output schema, annotations). For a command
// tool: its address, and its executable and that file's digest.
type LockedTool struct {
	Name       string          `json:"name"`
	Digest     string          `json:"digest,omitempty"`
	Definition json.RawMessage `json:"definition,omitempty"`
	Executable string          `json:"executable,omitempty"`
	SHA256     string          `json:"sha256,omitempty"`
}

// Server is the lock's entry for the server named name, or nil.
func (l *Lock) Server(name string) *LockedServer {
	if l == nil {
		return nil
	}
	for i := range l.Servers {
		if l.Servers[i].Name == name {
			return &l.Servers[i]
		}
	}
	return nil
}

// CommandTool is the lock's entry for a command tool's address, or nil.
func (l *Lock) CommandTool(address string) *LockedTool {
	if l == nil {
		return nil
	}
	for i := range l.CommandTools {
		if l.CommandTools[i].Name == address {
			return &l.CommandTools[i]
		}
	}
	return nil
}

// Tool is the server's entry for the tool named name, or nil.
func (s *LockedServer) Tool(name string) *LockedTool {
	if s == nil {
		return nil
	}
	for i := range s.Tools {
		if s.Tools[i].Name == name {
			return &s.Tools[i]
		}
	}
	return nil
}

// LockFilePath is the lock file of the configuration at path: symbi.lock.hcl
// inside a directory, NAME.lock.hcl beside a single file NAME.hcl (a
// directory of examples holds many one-file configurations, each with its
// own lock).
func LockFilePath(path string, isDir bool) string {
	if isDir {
		return filepath.Join(path, LockFileName)
	}
	return strings.TrimSuffix(path, filepath.Ext(path)) + LockFileSuffix
}
