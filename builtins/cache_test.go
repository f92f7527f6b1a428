package builtins

import (
	"encoding/json"
	"testing"
	"time"
)

// A success is kept under the arguments as sent; a lookup matches them as
// JSON values, and the latest equal success wins.
func TestResultCacheMatchesArgumentsAsJSON(t *testing.T) {
	c := newResultCache(8)
	t0 := time.Unix(1000, 0)
	c.put("search", json.RawMessage(`{"q":"a","n":1}`), Result{Content: "old"}, t0)
	c.put("search", json.RawMessage(`{ "n": 1, "q": "a" }`), Result{Content: "new"}, t0.Add(time.Second))
	c.put("search", json.RawMessage(`{"q":"b","n":1}`), Result{Content: "other"}, t0.Add(2*time.Second))
	c.put("fetch", json.RawMessage(`{"q":"a","n":1}`), Result{Content: "another tool"}, t0.Add(3*time.Second))

	got, ok := c.get("search", json.RawMessage(`{"n":1,"q":"\u0061"}`))
	if !ok || got.result.Content != "new" {
		t.Fatalf("get = %q, %v; want the latest equal success", got.result.Content, ok)
	}
	if _, ok := c.get("search", json.RawMessage(`{"q":"c","n":1}`)); ok {
		t.Error("a success for other arguments was returned")
	}
	if _, ok := c.get("sea", json.RawMessage(`{"q":"a","n":1}`)); ok {
		t.Error("a tool whose name is a prefix matched")
	}
}

func TestResultCacheIsBounded(t *testing.T) {
	c := newResultCache(2)
	for i, args := range []string{`{"i":1}`, `{"i":2}`, `{"i":3}`} {
		c.put("t", json.RawMessage(args), Result{Content: args}, time.Unix(int64(i), 0))
	}
	if _, ok := c.get("t", json.RawMessage(`{"i":1}`)); ok {
		t.Error("the oldest entry was kept past the bound")
	}
	if got, ok := c.get("t", json.RawMessage(`{"i":3}`)); !ok || got.result.Content != `{"i":3}` {
		t.Errorf("newest entry: %q %v", got.result.Content, ok)
	}
}
