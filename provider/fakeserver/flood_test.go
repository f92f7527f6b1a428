package fakeserver

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"
)

// TestFloodEnds: a flood of a given size arrives whole, as content or as
// arguments that are valid JSON, streamed in chunks, streamed in one line or
// plain, with usage that counts it.
func TestFloodEnds(t *testing.T) {
	const size = 200_000
	for _, tc := range []struct {
		name   string
		flood  Flood
		stream bool
	}{
		{"content in chunks", Flood{Bytes: size, Chunk: 4096}, true},
		{"content in one line", Flood{Bytes: size, OneLine: true}, true},
		{"arguments in chunks", Flood{Arguments: true, Bytes: size, Chunk: 1000}, true},
		{"arguments in one line", Flood{Arguments: true, Bytes: size, OneLine: true}, true},
		{"content plain", Flood{Bytes: size}, false},
		{"arguments plain", Flood{Arguments: true, Bytes: size}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(t, WithReplies(Reply{Flood: &tc.flood, ToolCalls: []ToolCall{{ID: "c9", Name: "write_file"}}}))
			req := chatRequest()
			var content, args, name string
			var usage openai.Usage
			if tc.stream {
				req.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
				stream, err := client(s).CreateChatCompletionStream(context.Background(), req)
				if err != nil {
					t.Fatal(err)
				}
				var deltas []openai.ToolCall
				var u *openai.Usage
				content, deltas, u, err = drain(t, stream)
				if err != nil || u == nil {
					t.Fatalf("usage %v, err %v", u, err)
				}
				usage = *u
				for _, d := range deltas {
					args += d.Function.Arguments
					name += d.Function.Name
				}
			} else {
				resp, err := client(s).CreateChatCompletion(context.Background(), req)
				if err != nil {
					t.Fatal(err)
				}
				msg := resp.Choices[0].Message
				content, usage = msg.Content, resp.Usage
				for _, c := range msg.ToolCalls {
					args += c.Function.Arguments
					name += c.Function.Name
				}
			}
			text := content
			if tc.flood.Arguments {
				text = args
				var v struct{ Text string }
				if err := json.Unmarshal([]byte(args), &v); err != nil || strings.Trim(v.Text, "a") != "" {
					t.Errorf("arguments are not {\"text\":\"aaa…\"}: %v", err)
				}
				if name != "write_file" || content != "" {
					t.Errorf("name %q, content %q", name, content)
				}
			} else if args != "" || !strings.HasPrefix(content, "lorem ipsum") {
				t.Errorf("content %.40q…, arguments %.40q…", content, args)
			}
			if len(text) != size {
				t.Errorf("%d bytes arrived, want %d", len(text), size)
			}
			if usage.CompletionTokens != size/4 {
				t.Errorf("usage %+v, want %d completion tokens", usage, size/4)
			}
		})
	}
}

// TestEndlessFloodStopsWithTheClient reads part of an endless flood and
// goes away: the flood must end, when the client goes or the server
// closes, or Close (which waits for every handler) would hang here.
func TestEndlessFloodStopsWithTheClient(t *testing.T) {
	for _, f := range []Flood{{}, {Arguments: true, OneLine: true}} {
		s := New(t, WithReplies(Reply{Flood: &f}))
		ctx, cancel := context.WithCancel(context.Background())
		req := chatRequest()
		stream, err := client(s).CreateChatCompletionStream(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if f.OneLine {
			// One line without end: the client cannot finish reading it.
			cancel()
		}
		got := 0
		for got < 1<<20 && ctx.Err() == nil {
			chunk, err := stream.Recv()
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range chunk.Choices {
				got += len(c.Delta.Content)
			}
		}
		cancel()
		stream.Close()
		s.Close()
	}
}
