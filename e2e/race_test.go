//go:build race

package e2e

// raceDetector: the race detector slows the server several times.
const raceDetector = true
