package resolvers

import (
	"encoding/base64"
	"strings"

	"github.com/killrchat/chatql/chat"
	"github.com/killrchat/chatql/graph/model"
	"github.com/killrchat/chatql/store"
)

// The cursors of the lists paged by a key (a room's name, a login): the
// key behind a prefix naming the list, in unpadded base64url, opaque to
// clients. A cursor is checked on its way in: one of another list, or
// whose key is no valid name, is refused with BAD_USER_INPUT naming the
// argument.
const (
	directoryCursor = "publicRooms:"
	readMarkCursor  = "readMarks:"
)

// listCursor is the cursor of the item with key in the list of prefix.
func listCursor(prefix, key string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(prefix + key))
}

// parseListCursor reads the optional cursor of the list of prefix, given
// as the argument field: the key it holds, checked by valid; "" when
// there is none.
func parseListCursor(field, prefix string, cursor *string, valid func(string) error) (string, error) {
	if cursor == nil || *cursor == "" {
		return "", nil
	}
	b, err := base64.RawURLEncoding.DecodeString(*cursor)
	key, ok := strings.CutPrefix(string(b), prefix)
	if err != nil || !ok || valid(key) != nil {
		return "", store.InvalidField(field, "invalid %s: %s is no cursor of this list; pass an edge's cursor as it was given", field, store.Quote(*cursor))
	}
	return key, nil
}

// directoryConnection is a page of the public room directory as a
// connection. Its end cursor is where the next page starts, the last room
// read, which the page leaves out if the caller is banned from it: so a
// page whose every room was left out still goes on.
func directoryConnection(after *string, page chat.DirectoryPage) *model.RoomConnection {
	conn := &model.RoomConnection{Edges: []model.RoomEdge{}, PageInfo: newPageInfo(after, page.More)}
	for i := range page.Rooms {
		cursor := listCursor(directoryCursor, page.Rooms[i].Name)
		conn.Edges = append(conn.Edges, model.RoomEdge{Cursor: cursor, Node: &page.Rooms[i]})
		addEdge(conn.PageInfo, &cursor)
	}
	if page.More {
		end := listCursor(directoryCursor, page.After)
		conn.PageInfo.EndCursor = &end
	}
	return conn
}
