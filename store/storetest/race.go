//go:build race

package storetest

// raceDetector: the race detector slows every store call several times.
const raceDetector = true
