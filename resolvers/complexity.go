package resolvers

import "github.com/killrchat/chatql/graph"

// Complexity is the cost model of the complexity limit: a paged field
// that reads a page from the store costs its selection once per item it may
// return (`first`, or its default), so that 33 aliased pages of 100
// messages cost 33 times one page. Every other field costs one plus its
// selection, gqlgen's default: a room's participants and a user's rooms
// too, since they come with the row already read, so a page of rooms may
// show who is in each.
func Complexity() graph.ComplexityRoot {
	var c graph.ComplexityRoot
	c.Query.Messages = func(child int, _ string, first *int, _ *string) int { return paged(child, first, defaultMessagePage) }
	c.Query.DirectMessages = func(child int, _ string, first *int, _ *string) int { return paged(child, first, defaultMessagePage) }
	c.Query.MyMessages = func(child int, first *int, _ *string) int { return paged(child, first, defaultMessagePage) }
	c.Query.Rooms = func(child int, first *int, _ *string) int { return paged(child, first, defaultRoomPage) }
	c.Query.Thread = func(child int, _ string, first *int, _ *string) int { return paged(child, first, defaultMessagePage) }
	// Each user asked about costs up to two store reads (whether the
	// caller shares a room or a conversation with them): ten fields' worth.
	c.Query.Presence = func(child int, logins []string) int { return 1 + len(logins)*(child+presenceReadCost) }
	return c
}

// presenceReadCost is what one user of a presence query costs beyond its
// fields.
const presenceReadCost = 10

// paged is the cost of a page of up to first items (def when absent). An
// out-of-range first is counted as the nearest valid one: the resolver
// refuses it with BAD_USER_INPUT.
func paged(child int, first *int, def int) int {
	n := def
	if first != nil {
		n = min(max(*first, 1), MaxPageSize)
	}
	return 1 + n*child
}
