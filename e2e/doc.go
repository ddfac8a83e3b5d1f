// Package e2e holds the end-to-end tests of chatql: real servers (package
// server) on loopback ports, or the built binary (the module's root) as a
// process, driven over HTTP, websockets and SSE with internal/chatclient,
// on the embedded store and, when CHAT_CASSANDRA_HOSTS and CHAT_REDIS_URL
// name them, on Cassandra and Redis.
//
// The tests share their helpers: helpers_test.go starts a test server and
// its users and holds the common queries; fixtures_test.go starts several
// instances on one store and one Redis, and the multi-instance tests'
// fixture, alice and bob on two instances in one room (acrossCluster). The
// package has no code of its own but this comment.
package e2e
