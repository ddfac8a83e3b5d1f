package chat

import "github.com/killrchat/chatql/store"

// SeesHiddenContent reports whether viewer may read the content of the
// hidden message m: only its author may. Everyone else sees it blank.
func SeesHiddenContent(m *store.Message, viewer store.UserRef) bool {
	return viewer.Login != "" && viewer.Login == m.Author.Login
}
