package testenv

import "sync"

// Acks collects what concurrent writers had acknowledged, for the crash
// tests: they crash the store once a number of writes is acknowledged and
// then check that every one of them survived.
type Acks[T any] struct {
	mu      sync.Mutex
	list    []T
	at      int
	reached chan struct{}
}

// NewAcks returns an empty collection whose Wait returns once at writes
// are acknowledged.
func NewAcks[T any](at int) *Acks[T] {
	return &Acks[T]{at: at, reached: make(chan struct{})}
}

// Add records an acknowledged write.
func (a *Acks[T]) Add(w T) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.list = append(a.list, w); len(a.list) == a.at {
		close(a.reached)
	}
}

// List returns the writes acknowledged so far.
func (a *Acks[T]) List() []T {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]T(nil), a.list...)
}

// Wait waits until the number of writes given to NewAcks is acknowledged,
// and reports true, or until the writers counted by writers have all
// stopped first, and reports false.
func (a *Acks[T]) Wait(writers *sync.WaitGroup) bool {
	stopped := make(chan struct{})
	go func() { writers.Wait(); close(stopped) }()
	select {
	case <-a.reached:
		return true
	case <-stopped:
		return false
	}
}
