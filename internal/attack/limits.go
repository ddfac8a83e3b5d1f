package attack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
)

// postFlood posts far more than a user's rate allows: the excess is
// refused with RATE_LIMITED and a retry hint, and only what was
// acknowledged is stored.
func postFlood(ctx context.Context, t *Target) error {
	acc, room, err := t.accountWithRoom(ctx)
	if err != nil {
		return err
	}
	const posts, parallel = 300, 20
	var mu sync.Mutex
	accepted, limited := 0, 0
	var bad error
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i := range posts {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			a, err := t.query(ctx, acc.Token, `mutation($r: String!, $c: String!) { postMessage(room: $r, content: $c) { id } }`,
				map[string]any{"r": room, "c": fmt.Sprintf("flood %d", i)})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				bad = errors.Join(bad, err)
			case len(a.Errors) == 0:
				accepted++
			default:
				if err := refused(a, "RATE_LIMITED"); err != nil {
					bad = errors.Join(bad, err)
				} else if ra, _ := a.Errors[0].Extensions["retryAfter"].(float64); ra < 1 {
					bad = errors.Join(bad, fmt.Errorf("RATE_LIMITED without a retryAfter of at least 1 s: %v", a.Errors[0].Extensions))
				} else {
					limited++
				}
			}
		})
	}
	wg.Wait()
	if bad != nil {
		return bad
	}
	if limited == 0 {
		return fmt.Errorf("all %d posts of one user were accepted: no rate limit", posts)
	}
	stored, err := t.countPosts(ctx, acc.Token, room)
	if err != nil {
		return err
	}
	if stored != accepted {
		return fmt.Errorf("%d posts acknowledged, %d stored", accepted, stored)
	}
	return nil
}

// countPosts counts the non-system messages of a room.
func (t *Target) countPosts(ctx context.Context, token, room string) (int, error) {
	n := 0
	var after any
	for {
		a, err := t.query(ctx, token, `query($r: String!, $a: String) { messages(room: $r, first: 50, after: $a) { edges { node { system } } pageInfo { hasNextPage endCursor } } }`,
			map[string]any{"r": room, "a": after})
		if err != nil {
			return 0, err
		}
		var out struct {
			Data struct {
				Messages struct {
					Edges    []struct{ Node struct{ System bool } }
					PageInfo struct {
						HasNextPage bool
						EndCursor   string
					}
				}
			}
		}
		if err := json.Unmarshal(a.Body, &out); err != nil || len(a.Errors) > 0 {
			return 0, fmt.Errorf("messages: %v %.200s", err, a.Body)
		}
		for _, e := range out.Data.Messages.Edges {
			if !e.Node.System {
				n++
			}
		}
		if !out.Data.Messages.PageInfo.HasNextPage {
			return n, nil
		}
		after = out.Data.Messages.PageInfo.EndCursor
	}
}

// passwordGuessing tries wrong passwords for one login: past the limit the
// server refuses to check them at all.
func passwordGuessing(ctx context.Context, t *Target) error {
	acc, err := t.newAccount(ctx)
	if err != nil {
		return err
	}
	guesser := t.flooder()
	limited := 0
	for i := range 50 {
		a, err := guesser.query(ctx, "", `mutation($l: String!, $p: String!) { login(login: $l, password: $p) { token } }`,
			map[string]any{"l": acc.Login, "p": fmt.Sprintf("guess-%d-password", i)})
		if err != nil {
			return err
		}
		if err := refused(a, "UNAUTHENTICATED", "RATE_LIMITED"); err != nil {
			return fmt.Errorf("guess %d: %w", i, err)
		}
		if a.Errors[0].code() == "RATE_LIMITED" {
			limited++
		}
	}
	if limited == 0 {
		return errors.New("50 wrong passwords for one login were all checked: no rate limit")
	}
	return nil
}
