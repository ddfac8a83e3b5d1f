package main

import (
	"bytes"
	"context"
	"net/http"
	"time"

	"github.com/killrchat/chatql/internal/chatclient"
)

// A target is the protocol of the server under test, so that one load,
// measured one way, drives chatql's GraphQL API (chatqlTarget) or
// Centrifugo's (centrifugoTarget) with the same profile.
type target interface {
	// setup makes what the load needs: rooms, and for chatql the users
	// who post, subscribe and read.
	setup(ctx context.Context, errs *errorCounts) (*world, error)
	// subscriber returns how subscriber j opens its stream of room's
	// events, after a position a stream gave (nil: from now).
	subscriber(j int, room string) func(ctx context.Context, resume []byte) (stream, error)
	// poster returns how poster i posts; reader how reader i reads the
	// newest page of 50 of a room.
	poster(i int) postFunc
	reader(i int) readFunc
	// idle opens idle connection i, through hc, following rooms.
	idle(ctx context.Context, i int, hc *http.Client, rooms []string) (stream, error)
	// ready waits until the server answers.
	ready(ctx context.Context) error
}

type (
	postFunc func(ctx context.Context, room string, text []byte) error
	readFunc func(ctx context.Context, room string) error
)

// A stream is one websocket's subscriptions as the load reads them.
type stream interface {
	// next returns the next event, answering the server's pings on the
	// way, and the position to resume after it (nil if it has none). An
	// error ends the stream.
	next(buf []byte) (msg, position []byte, err error)
	CloseNow()
}

// chatqlTarget drives chatql: users made through the API, roomEvents over
// graphql-transport-ws, postMessage and messages over HTTP, each spread
// over the -url endpoints in turn.
type chatqlTarget struct {
	cfg  *config
	api  *chatclient.Client
	http *http.Client
	w    *world
}

func (t *chatqlTarget) setup(ctx context.Context, errs *errorCounts) (*world, error) {
	w, err := setup(ctx, t.api, t.cfg, errs)
	t.w = w
	return w, err
}

func (t *chatqlTarget) ready(ctx context.Context) error {
	for _, u := range t.cfg.urls {
		if err := waitReady(ctx, t.http, u); err != nil {
			return err
		}
	}
	return nil
}

func (t *chatqlTarget) subscriber(j int, room string) func(context.Context, []byte) (stream, error) {
	client := t.cfg.on(j, t.w.subUsers[j%len(t.w.subUsers)])
	return func(ctx context.Context, resume []byte) (stream, error) {
		vars := map[string]any{"r": room}
		if resume != nil {
			vars["after"] = string(resume)
		}
		sub, err := client.Subscribe(ctx, chatclient.GraphQLTransportWS, roomEventsSub, vars)
		if err != nil {
			return nil, err
		}
		return graphqlStream{sub}, nil
	}
}

func (t *chatqlTarget) poster(i int) postFunc {
	c := t.cfg.on(i, t.w.posters[i%len(t.w.posters)])
	return func(ctx context.Context, room string, text []byte) error {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		return c.Do(ctx, postMutation, map[string]any{"r": room, "c": string(text)}, nil)
	}
}

func (t *chatqlTarget) reader(i int) readFunc {
	c := t.cfg.on(i, t.w.posters[i%len(t.w.posters)])
	return func(ctx context.Context, room string) error {
		_, err := graphqlPage(ctx, t.http, c.URL, c.Token, room, 50)
		return err
	}
}

func (t *chatqlTarget) idle(ctx context.Context, i int, hc *http.Client, rooms []string) (stream, error) {
	c := *t.w.idleUsers[i%len(t.w.idleUsers)]
	c.HTTP = hc
	vars := make([]map[string]any, len(rooms))
	for k, room := range rooms {
		vars[k] = map[string]any{"r": room}
	}
	sub, err := c.SubscribeEach(ctx, chatclient.GraphQLTransportWS, roomEventsSub, vars...)
	if err != nil {
		return nil, err
	}
	return graphqlStream{sub}, nil
}

// graphqlStream reads a graphql-transport-ws subscription without decoding
// its events.
type graphqlStream struct{ sub *chatclient.Subscription }

var (
	markerCursor = []byte(`"cursor":"`)
	markerErrors = []byte(`"errors":`)
)

func (s graphqlStream) next(buf []byte) (msg, position []byte, err error) {
	for {
		msg, err = s.sub.ReadRaw(context.Background(), buf)
		if err != nil {
			return msg, nil, err
		}
		switch chatclient.RawType(msg) {
		case "next":
			position, err = graphqlEvent(msg)
			return msg, position, err
		case "ping":
			if err := s.sub.Pong(context.Background()); err != nil {
				return msg, nil, err
			}
		case "error":
			return msg, nil, rawErrors(msg)
		case "complete":
			return msg, nil, chatclient.ErrComplete
		}
		buf = msg[:0]
	}
}

func (s graphqlStream) CloseNow() { s.sub.CloseNow() }

// graphqlEvent takes what the load needs of a "next" message without
// decoding it: its cursor, to resume after, or its errors.
func graphqlEvent(msg []byte) (cursor []byte, err error) {
	if bytes.Contains(msg, markerErrors) {
		return nil, rawErrors(msg)
	}
	if i := bytes.Index(msg, markerCursor); i >= 0 && len(msg) >= i+len(markerCursor)+36 {
		cursor = msg[i+len(markerCursor) : i+len(markerCursor)+36]
	}
	return cursor, nil
}
