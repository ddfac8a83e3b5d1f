package main

// The GraphQL layer is generated from schema/*.graphqls into graph/ (never
// edited by hand); resolver stubs for new fields land in resolvers/. Then
// internal/inlinefields makes the objects whose resolvers only read memory
// resolve without a goroutine per field and per list element.
//go:generate go tool gqlgen generate
//go:generate go run ./internal/inlinefields graph/generated.go
