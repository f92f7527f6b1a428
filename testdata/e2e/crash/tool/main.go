// Command crashtool is the tool process of the crash e2e tests
// (e2e/crash_test.go, e2e/hostile_crash_test.go). It is one process that
// does its work itself, so a test can tell whether it outlived symbi.
//
//	crashtool append LOG PIDDIR   a command tool: reads {"n", "before_ms", "after_ms"} on stdin, records its
//	                              pid in PIDDIR, waits before_ms, appends "<SYMBI_IDEMPOTENCY_KEY> <n>" to LOG
//	                              with one write, waits after_ms (less once LOG.release exists), prints
//	                              "appended <n>"
//	crashtool block PIDDIR LATE   a command tool that never answers: records its pid, then waits; if it is
//	                              still alive after 20 s it writes LATE (it outlived symbi)
//	crashtool mcp PIDDIR          a stdio MCP server whose tool "record" answers with the idempotency key
//	                              of the request's _meta
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	if len(os.Args) < 3 {
		fail("usage: crashtool append LOG PIDDIR | block PIDDIR LATE | mcp PIDDIR")
	}
	switch os.Args[1] {
	case "append":
		appendLine(os.Args[2], os.Args[3])
	case "block":
		block(os.Args[2], os.Args[3])
	case "mcp":
		serve(os.Args[2])
	default:
		fail("unknown mode " + os.Args[1])
	}
}

func fail(msg string) {
	fmt.Fprintln(os.Stderr, "crashtool:", msg)
	os.Exit(2)
}

// recordPID writes this process's pid into dir; the caller removes it when
// it ends normally, so what is left names processes that were stopped.
func recordPID(dir string) string {
	p := filepath.Join(dir, strconv.Itoa(os.Getpid()))
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		fail(err.Error())
	}
	return p
}

func appendLine(log, pidDir string) {
	var args struct {
		N        int `json:"n"`
		BeforeMS int `json:"before_ms"`
		AfterMS  int `json:"after_ms"`
	}
	if err := json.NewDecoder(os.Stdin).Decode(&args); err != nil {
		fail("arguments: " + err.Error())
	}
	pid := recordPID(pidDir)
	time.Sleep(time.Duration(args.BeforeMS) * time.Millisecond)
	f, err := os.OpenFile(log, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		fail(err.Error())
	}
	if _, err := fmt.Fprintf(f, "%s %d\n", os.Getenv("SYMBI_IDEMPOTENCY_KEY"), args.N); err != nil {
		fail(err.Error())
	}
	f.Close()
	// after_ms is cut short once LOG.release exists: a test that killed
	// symbi while this call waited releases the calls that come after.
	for end := time.Now().Add(time.Duration(args.AfterMS) * time.Millisecond); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(log + ".release"); err == nil {
			break
		}
	}
	fmt.Printf("appended %d", args.N)
	os.Remove(pid)
}

func block(pidDir, late string) {
	recordPID(pidDir)
	time.Sleep(20 * time.Second)
	os.WriteFile(late, []byte("crashtool outlived symbi\n"), 0o644)
}

func serve(pidDir string) {
	pid := recordPID(pidDir)
	defer os.Remove(pid)
	s := mcp.NewServer(&mcp.Implementation{Name: "crashtool", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "record", Description: "Answers with the idempotency key of the request"},
		func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			key, _ := req.Params.GetMeta()["symbi.dev/idempotency-key"].(string)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "key=" + key}}}, nil, nil
		})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fail(err.Error())
	}
}
