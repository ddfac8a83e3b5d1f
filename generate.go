package main

// The GraphQL layer is generated from schema/*.graphqls into graph/ (never
// edited by hand); resolver stubs for new fields land in resolvers/.
//go:generate go tool gqlgen generate
