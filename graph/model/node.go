package model

// Node is the schema's Node interface: what `node` answers, a
// *store.UserRef, *store.User, *store.Room or *store.Message. The store's
// types carry no method for it; the schema's id fields have resolvers.
type Node interface{}
