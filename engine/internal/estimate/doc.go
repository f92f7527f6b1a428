// Package estimate is the engine's token estimate of a model request
// (Messages, Tools: what the budget reserves before a call) and the Cache
// that keeps each message's estimates, for the budget and for context
// fitting, so a react run's growing conversation is estimated once per
// message rather than on every iteration.
//
// This package must not import the engine, the journal, policy or budget.
package estimate
