package chat

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/killrchat/chatql/store"
	"github.com/killrchat/chatql/store/embedded"
)

// TestBotRules runs the bots' rules on the embedded store: a bot's names
// follow users' (its last name optional), its owner is a user and not a
// bot, an owner has at most store.MaxBotsPerOwner, and only the owner
// rotates or deletes one; a rotated bot keeps its login with a new key.
func TestBotRules(t *testing.T) {
	ctx := t.Context()
	db, err := embedded.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s := &Service{Store: db, Log: slog.New(slog.DiscardHandler)}
	alice := store.UserRef{Login: "alice", Firstname: "A", Lastname: "L"}
	if err := db.CreateUser(ctx, store.Account{User: store.User{UserRef: alice}, PassHash: []byte("h")}); err != nil {
		t.Fatal(err)
	}

	bot, err := s.CreateBot(ctx, alice, "helper", "Helper", "")
	if err != nil || bot.Login != "helper" || bot.Owner != "alice" || bot.Key == "" || bot.KeyPrefix == "" {
		t.Fatalf("CreateBot = %+v, %v; want helper of alice with a key", bot, err)
	}
	for _, bad := range [][3]string{{"Not A Login", "N", ""}, {"nameless", "", ""}, {"tabbed", "T", "a\tb"}} {
		if _, err := s.CreateBot(ctx, alice, bad[0], bad[1], bad[2]); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("CreateBot(%q) = %v, want ErrInvalid", bad, err)
		}
	}
	if _, err := s.CreateBot(ctx, alice, "alice", "Me", ""); !errors.Is(err, store.ErrConflict) {
		t.Errorf("CreateBot(alice) = %v, want ErrConflict", err)
	}
	if _, err := s.CreateBot(ctx, bot.UserRef, "minion", "Minion", ""); !errors.Is(err, store.ErrForbidden) {
		t.Errorf("CreateBot by a bot = %v, want ErrForbidden", err)
	}
	if _, err := s.RotateBotKey(ctx, bot.UserRef, "helper"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("RotateBotKey by the bot itself = %v, want ErrNotFound", err)
	}
	rotated, err := s.RotateBotKey(ctx, alice, "helper")
	if err != nil || rotated.Login != "helper" || rotated.Key == bot.Key || !strings.HasPrefix(rotated.Key, rotated.KeyPrefix) {
		t.Fatalf("RotateBotKey = %+v, %v; want helper with a new key", rotated, err)
	}
	if login, err := db.BotByKey(ctx, rotated.KeyHash); err != nil || login != "helper" {
		t.Fatalf("BotByKey(the new key) = %q, %v", login, err)
	}

	for i := 1; i < store.MaxBotsPerOwner; i++ {
		if _, err := s.CreateBot(ctx, alice, fmt.Sprintf("bot-%d", i), "Bot", ""); err != nil {
			t.Fatalf("bot %d: %v", i+1, err)
		}
	}
	if _, err := s.CreateBot(ctx, alice, "one-too-many", "Bot", ""); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("bot %d = %v, want ErrInvalid", store.MaxBotsPerOwner+1, err)
	}
	if err := s.DeleteBot(ctx, alice, "helper"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.User(ctx, "helper"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("User(deleted bot) = %v, want ErrNotFound", err)
	}
	if _, err := s.CreateBot(ctx, alice, "one-more", "Bot", ""); err != nil {
		t.Fatalf("a bot in the place of a deleted one: %v", err)
	}
}
