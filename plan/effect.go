package plan

// A tool's effects, from the least it may do to the most.
const (
	EffectNone        = "none"
	EffectRead        = "read"
	EffectWrite       = "write"
	EffectDestructive = "destructive"
)

// StricterEffect returns whichever of a and b lets a tool do more (none <
// read < write < destructive). An empty effect says nothing, so the other
// wins; an effect outside the four counts as destructive, so a misspelt or
// forged one can never make a tool look harmless.
func StricterEffect(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	case effectRank(b) > effectRank(a):
		return b
	}
	return a
}

func effectRank(e string) int {
	switch e {
	case EffectNone:
		return 0
	case EffectRead:
		return 1
	case EffectWrite:
		return 2
	}
	return 3
}
