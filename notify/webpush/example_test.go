package webpush_test

import (
	"context"
	"fmt"
	"log"
	"path/filepath"
	"time"

	"github.com/killrchat/chatql/notify/webpush"
)

// Example shows a server keeping its VAPID key in its data directory and
// acting on the outcome of a push.
func Example() {
	dataDir := "/var/lib/chatql" // the server's data directory
	key, err := webpush.LoadOrCreateVAPIDKey(filepath.Join(dataDir, "vapid.pem"))
	if err != nil {
		log.Fatal(err)
	}
	// Browsers subscribe with key.PublicKey() as applicationServerKey.
	sender, err := webpush.NewSender(webpush.Config{Key: key, Contact: "mailto:ops@chat.example"})
	if err != nil {
		log.Fatal(err)
	}
	defer sender.Close()

	var sub webpush.Subscription // as registered, after webpush.Validate
	res, err := sender.Send(context.Background(), sub, []byte(`{"kind":"mention"}`),
		webpush.Options{TTL: time.Hour, Urgency: webpush.UrgencyHigh})
	switch res.Outcome {
	case webpush.Delivered:
	case webpush.Gone:
		fmt.Println("drop the subscription")
	case webpush.RetryLater:
		fmt.Println("retry after", res.RetryAfter, err)
	case webpush.Refused:
		fmt.Println("give up:", err)
	}
}
