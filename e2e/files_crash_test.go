package e2e

import (
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/killrchat/chatql/internal/testenv"
)

// TestKilledServerLeavesNoFileForever runs the real server binary with
// files on disk, has users upload images and post them (some never posted)
// while it is killed with SIGKILL, restarts it on the same data directory,
// and waits for the sweep: every acknowledged post keeps its files, every
// file on disk belongs to a message of the room, and the owners' quotas
// count exactly those.
func TestKilledServerLeavesNoFileForever(t *testing.T) {
	bin := buildChatql(t)
	dir := t.TempDir()
	secret := randomHex(32)
	users := []string{"ann", "ben", "cat"}
	tokens := map[string]string{}
	const unsentTTL = 4 * time.Second
	start := func() *crashServer {
		cfg := testConfig(t)
		cfg.DataDir, cfg.JWTSecret, cfg.BcryptCost = dir, secret, 4
		cfg.FileLimits.UnattachedTTL = unsentTTL
		cfg.FileSweepInterval = 200 * time.Millisecond
		return &crashServer{chatqlProcess: startChatql(t, bin, cfg),
			http: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}}
	}
	var acked []postedFiles
	for round := 1; round <= 3; round++ {
		srv := start()
		if round == 1 {
			setUpCrashRooms(t, srv, users, users, tokens)
		}
		acked = append(acked, postFilesUntilKilled(t, srv, tokens, users, round)...)
		srv.kill()
	}

	srv := start()
	time.Sleep(unsentTTL + time.Second)
	held := map[string]bool{} // the files of the lobby's messages
	eventually(t, 20*time.Second, "the sweep removes every file no message holds", func() (bool, any) {
		clear(held)
		for _, a := range readAllAttachments(t, srv, tokens[users[0]]) {
			held[a.ID] = true
		}
		var stray []string
		for _, id := range filesOnDisk(t, dir) {
			if !held[id] {
				stray = append(stray, id)
			}
		}
		return len(stray) == 0, stray
	})
	for _, p := range acked {
		for _, id := range p.files {
			if !held[id] {
				t.Errorf("acknowledged post %s lost its file %s", p.message, id)
			}
		}
	}
	if onDisk := filesOnDisk(t, dir); len(onDisk) != len(held) {
		t.Errorf("%d files on disk, %d held by messages", len(onDisk), len(held))
	}
	t.Logf("%d acknowledged posts with files; %d files held", len(acked), len(held))
}

// postedFiles is an acknowledged post and the files it carries.
type postedFiles struct {
	message string
	files   []string
}

// postFilesUntilKilled has each user upload images in a loop and post
// most of them (every third upload is never posted), and kills the server
// with posts and uploads in flight.
func postFilesUntilKilled(t *testing.T, srv *crashServer, tokens map[string]string, users []string, round int) []postedFiles {
	t.Helper()
	var killed atomic.Bool
	acked := testenv.NewAcks[postedFiles](5 + rand.IntN(15))
	image := pngWithText(t, 64, 48, "", "")
	var wg sync.WaitGroup
	for w := range 2 * len(users) {
		c := srv.as(tokens[users[w%len(users)]])
		wg.Go(func() {
			for i := 0; ; i++ {
				id, err := tryUpload(c, fmt.Sprintf("r%d-w%d-%d.png", round, w, i), image)
				if err == nil && i%3 != 2 {
					var out struct{ PostMessage struct{ ID string } }
					err = c.Do(context.Background(), `mutation($a: [ID!]) { postMessage(room: "lobby", content: "", attachments: $a) { id } }`, map[string]any{"a": []string{id}}, &out)
					if err == nil {
						acked.Add(postedFiles{message: out.PostMessage.ID, files: []string{id}})
					}
				}
				if err != nil {
					if !killed.Load() {
						t.Errorf("poster %d: %v", w, err)
					}
					return
				}
			}
		})
	}
	if !acked.Wait(&wg) {
		t.Fatalf("round %d: every poster stopped before the kill", round)
	}
	killed.Store(true)
	srv.kill()
	wg.Wait()
	return acked.List()
}

// tryUpload creates an upload and PUTs data to it, returning the error
// instead of failing: the server may be killed meanwhile.
func tryUpload(c interface {
	Do(context.Context, string, map[string]any, any) error
}, name string, data []byte) (string, error) {
	var out struct{ CreateUpload uploadRequest }
	if err := c.Do(context.Background(), `mutation($n: String!, $s: Int!) { createUpload(name: $n, contentType: "image/png", size: $s) { id method url headers { name value } } }`,
		map[string]any{"n": name, "s": len(data)}, &out); err != nil {
		return "", err
	}
	u := out.CreateUpload
	req, err := http.NewRequest(u.Method, u.URL, strings.NewReader(string(data)))
	if err != nil {
		return "", err
	}
	for _, h := range u.Headers {
		req.Header.Set(h.Name, h.Value)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	res.Body.Close()
	if res.StatusCode >= 300 {
		return "", fmt.Errorf("PUT answered %d", res.StatusCode)
	}
	return u.ID, nil
}

// readAllAttachments reads the attachments of every message of the lobby.
func readAllAttachments(t *testing.T, srv *crashServer, token string) []attachment {
	t.Helper()
	var atts []attachment
	var after *string
	for {
		var out struct {
			Messages struct {
				Edges []struct {
					Node struct{ Attachments []attachment }
				}
				PageInfo struct {
					HasNextPage bool
					EndCursor   string
				}
			}
		}
		mustDo(t, srv.as(token), `query($after: String) { messages(room: "lobby", first: 100, after: $after) { edges { node { attachments { id } } } pageInfo { hasNextPage endCursor } } }`,
			map[string]any{"after": after}, &out)
		for _, e := range out.Messages.Edges {
			atts = append(atts, e.Node.Attachments...)
		}
		if !out.Messages.PageInfo.HasNextPage {
			return atts
		}
		after = &out.Messages.PageInfo.EndCursor
	}
}

// filesOnDisk lists the ids of the files that have objects in the data
// directory's object store (objects are under objects/f/<id>/).
func filesOnDisk(t *testing.T, dataDir string) []string {
	t.Helper()
	root := filepath.Join(dataDir, "files", "objects", "f")
	var ids []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		id, _, _ := strings.Cut(rel, string(filepath.Separator))
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
		return nil
	})
	if err != nil && !strings.Contains(err.Error(), "no such file") {
		t.Fatal(err)
	}
	return ids
}
