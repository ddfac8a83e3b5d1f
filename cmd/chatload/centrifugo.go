package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/killrchat/chatql/store"
)

// centrifugoTarget drives Centrifugo (v6) with chatload's profile, for a
// side-by-side comparison on the same machine: each subscriber is a
// websocket speaking Centrifugo's JSON client protocol (anonymous:
// client.insecure) subscribed to one channel per room; posters publish
// the message a chatql subscriber gets (centrifugoEvent) through the HTTP
// API (/api/publish), and readers read
// the newest 50 of a channel's history (/api/history). Centrifugo has no
// users or rooms to make: setup only names the channels.
type centrifugoTarget struct {
	cfg  *config
	http *http.Client
	w    *world
}

func (t *centrifugoTarget) setup(_ context.Context, _ *errorCounts) (*world, error) {
	start := time.Now()
	w := &world{prefix: t.cfg.prefix, postRoom: t.cfg.prefix + "-post"}
	for i := range t.cfg.rooms {
		w.rooms = append(w.rooms, fmt.Sprintf("%s-r%03d", t.cfg.prefix, i))
	}
	if t.cfg.idleSubs > 0 && t.cfg.serverPID > 0 {
		for k := range t.cfg.idleSubsPerConn {
			w.idleRooms = append(w.idleRooms, fmt.Sprintf("%s-idle%03d", t.cfg.prefix, k))
		}
	}
	w.setupTime = time.Since(start)
	t.w = w
	return w, nil
}

func (t *centrifugoTarget) ready(ctx context.Context) error {
	return t.api(ctx, t.cfg.url, "info", map[string]any{}, nil)
}

// websocketURL is Centrifugo's websocket endpoint at base.
func websocketURL(base string) string {
	return strings.Replace(strings.TrimSuffix(base, "/"), "http", "ws", 1) + "/connection/websocket"
}

func (t *centrifugoTarget) subscriber(j int, room string) func(context.Context, []byte) (stream, error) {
	url := websocketURL(t.cfg.urls[j%len(t.cfg.urls)])
	var epoch string // of the channel's stream, from the first subscription
	return func(ctx context.Context, resume []byte) (stream, error) {
		sub := map[string]any{"channel": room}
		if resume != nil && epoch != "" {
			offset, _ := strconv.ParseUint(string(resume), 10, 64)
			sub = map[string]any{"channel": room, "recover": true, "offset": offset, "epoch": epoch}
		}
		s, replies, err := dialCentrifugo(ctx, url, t.http, []map[string]any{sub})
		if err != nil {
			return nil, err
		}
		epoch = replies[0].Epoch
		return s, nil
	}
}

func (t *centrifugoTarget) poster(i int) postFunc {
	base := t.cfg.urls[i%len(t.cfg.urls)]
	login := fmt.Sprintf("%s-p%03d", t.cfg.prefix, i)
	author := apiAuthor{Login: login, Firstname: "Load", Lastname: "Tester " + login}
	return func(ctx context.Context, room string, text []byte) error {
		id := store.NewMessageID()
		data := centrifugoEvent{Kind: "MESSAGE_POSTED", Room: room, Cursor: id.String(), Message: apiMessage{
			ID: id.String(), Content: string(text), PostedAt: id.Time().UTC(), Author: author,
		}}
		return t.api(ctx, base, "publish", map[string]any{"channel": room, "data": data}, nil)
	}
}

// centrifugoEvent is what a poster publishes to Centrifugo: the message a
// chatql subscriber gets in its roomEvents (chatload's roomEventsSub),
// field for field, as a chat backend on Centrifugo would publish it once
// stored, so that each delivery carries the same on both servers.
type centrifugoEvent struct {
	Kind    string     `json:"kind"`
	Room    string     `json:"room"`
	Cursor  string     `json:"cursor"`
	Message apiMessage `json:"message"`
	User    *apiAuthor `json:"user"`
}

func (t *centrifugoTarget) reader(i int) readFunc {
	base := t.cfg.urls[i%len(t.cfg.urls)]
	return func(ctx context.Context, room string) error {
		var page struct {
			Publications []struct {
				Data   centrifugoEvent `json:"data"`
				Offset uint64          `json:"offset"`
			} `json:"publications"`
		}
		return t.api(ctx, base, "history", map[string]any{"channel": room, "limit": 50, "reverse": true}, &page)
	}
}

func (t *centrifugoTarget) idle(ctx context.Context, _ int, hc *http.Client, rooms []string) (stream, error) {
	subs := make([]map[string]any, len(rooms))
	for k, room := range rooms {
		subs[k] = map[string]any{"channel": room}
	}
	s, _, err := dialCentrifugo(ctx, websocketURL(t.cfg.url), hc, subs)
	return s, err
}

// api calls a method of Centrifugo's HTTP API at base and decodes its
// result into out (when not nil).
func (t *centrifugoTarget) api(ctx context.Context, base, method string, params, out any) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	body, err := json.Marshal(params)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(base, "/")+"/api/"+method, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-API-Key", t.cfg.apiKey)
	resp, err := t.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var answer struct {
		Error *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
		Result json.RawMessage `json:"result"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil || resp.StatusCode != http.StatusOK {
		return &statusError{status: resp.StatusCode, body: fmt.Sprint(err)}
	}
	if answer.Error != nil {
		return fmt.Errorf("centrifugo %s: error %d: %s", method, answer.Error.Code, answer.Error.Message)
	}
	if out != nil && answer.Result != nil {
		return json.Unmarshal(answer.Result, out)
	}
	return nil
}

// centrifugoStream is one websocket of Centrifugo's JSON client protocol:
// a frame holds one or more messages, one per line; an empty one ({}) is
// the server's ping, answered with an empty command.
type centrifugoStream struct {
	conn    *websocket.Conn
	pending []byte // what is left of the last frame
}

// subscribeResult is what a subscription's reply says of the channel's
// stream, to recover from.
type subscribeResult struct {
	Epoch  string `json:"epoch"`
	Offset uint64 `json:"offset"`
}

// dialCentrifugo connects, and subscribes to each of subs (the subscribe
// commands' fields), returning their replies.
func dialCentrifugo(ctx context.Context, url string, hc *http.Client, subs []map[string]any) (*centrifugoStream, []subscribeResult, error) {
	conn, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPClient: hc})
	if err != nil {
		return nil, nil, err
	}
	conn.SetReadLimit(1 << 20)
	s := &centrifugoStream{conn: conn}
	var cmds bytes.Buffer
	enc := json.NewEncoder(&cmds) // one command per line
	_ = enc.Encode(map[string]any{"id": 1, "connect": map[string]any{"name": "chatload"}})
	for k, sub := range subs {
		_ = enc.Encode(map[string]any{"id": k + 2, "subscribe": sub})
	}
	if err := conn.Write(ctx, websocket.MessageText, bytes.TrimSuffix(cmds.Bytes(), []byte("\n"))); err != nil {
		conn.CloseNow()
		return nil, nil, err
	}
	results := make([]subscribeResult, len(subs))
	for left := len(subs) + 1; left > 0; {
		msg, err := s.message(ctx, nil)
		if err != nil {
			conn.CloseNow()
			return nil, nil, err
		}
		var reply struct {
			ID    int `json:"id"`
			Error *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
			Subscribe *subscribeResult `json:"subscribe"`
		}
		if json.Unmarshal(msg, &reply) != nil || reply.ID == 0 {
			continue // a ping or a push before the replies
		}
		if reply.Error != nil {
			conn.CloseNow()
			return nil, nil, fmt.Errorf("centrifugo command %d: error %d: %s", reply.ID, reply.Error.Code, reply.Error.Message)
		}
		if k := reply.ID - 2; k >= 0 && k < len(results) && reply.Subscribe != nil {
			results[k] = *reply.Subscribe
		}
		left--
	}
	return s, results, nil
}

// message returns the next message, reading a frame when none is left.
func (s *centrifugoStream) message(ctx context.Context, buf []byte) ([]byte, error) {
	for len(s.pending) == 0 {
		_, frame, err := s.conn.Read(ctx)
		if err != nil {
			return buf, err
		}
		s.pending = frame
	}
	line, rest, _ := bytes.Cut(s.pending, []byte("\n"))
	s.pending = rest
	return append(buf[:0], line...), nil
}

var (
	markerPush   = []byte(`"push":`)
	markerOffset = []byte(`"offset":`)
)

func (s *centrifugoStream) next(buf []byte) (msg, position []byte, err error) {
	for {
		msg, err = s.message(context.Background(), buf)
		if err != nil {
			return msg, nil, err
		}
		switch {
		case len(msg) == 2 && msg[0] == '{' && msg[1] == '}':
			if err := s.conn.Write(context.Background(), websocket.MessageText, []byte("{}")); err != nil {
				return msg, nil, err
			}
		case bytes.Contains(msg, markerPush):
			position, err = centrifugoPush(msg)
			return msg, position, err
		}
		buf = msg[:0]
	}
}

func (s *centrifugoStream) CloseNow() { s.conn.CloseNow() }

// centrifugoPush takes what the load needs of a push without decoding it:
// its publication's offset, to recover from, or the end of the
// subscription it tells.
func centrifugoPush(msg []byte) (offset []byte, err error) {
	if bytes.Contains(msg, []byte(`"disconnect":`)) || bytes.Contains(msg, []byte(`"unsubscribe":`)) {
		return nil, fmt.Errorf("centrifugo ended the subscription: %.200s", msg)
	}
	if i := bytes.LastIndex(msg, markerOffset); i >= 0 {
		rest := msg[i+len(markerOffset):]
		n := 0
		for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
			n++
		}
		if n > 0 {
			offset = rest[:n]
		}
	}
	return offset, nil
}
