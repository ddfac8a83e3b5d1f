package resolvers

import (
	"github.com/killrchat/chatql/chat"
	"github.com/killrchat/chatql/graph/model"
)

// The sizes of the searches' answers when `first` is absent (the schema
// gives the same defaults).
const (
	defaultSearchPage = 20
	defaultUserSearch = 10
	defaultRoomSearch = 20
)

// derefInt is *n, or def for nil.
func derefInt(n *int, def int) int {
	if n == nil {
		return def
	}
	return *n
}

// searchConnection shapes a page of search results: the end cursor is
// where the search stopped, which is the last edge's unless the search
// stopped reading before it filled the page.
func searchConnection(after *string, res chat.SearchResults) *model.SearchConnection {
	conn := &model.SearchConnection{Edges: []model.SearchEdge{}, PageInfo: newPageInfo(after, res.More)}
	for i := range res.Hits {
		h := &res.Hits[i]
		cursor := h.Message.ID.String()
		parts := make([]model.SnippetPart, len(h.Snippet))
		for j, p := range h.Snippet {
			parts[j] = model.SnippetPart{Text: p.Text, Match: p.Match}
		}
		conn.Edges = append(conn.Edges, model.SearchEdge{Cursor: cursor, Node: &h.Message, Snippet: parts})
		addEdge(conn.PageInfo, &cursor)
	}
	if res.More {
		end := res.Next.String()
		conn.PageInfo.EndCursor = &end
	}
	return conn
}
