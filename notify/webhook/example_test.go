package webhook_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/killrchat/chatql/notify/webhook"
)

// Example_receiver shows how an endpoint checks what a Sender posts: it
// reads the raw body and verifies it against the headers before trusting
// it, and drops duplicates by webhook-id.
func Example_receiver() {
	secret, _ := webhook.ParseSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, "unreadable body", http.StatusBadRequest)
			return
		}
		if err := webhook.Verify(secret, r.Header, body, time.Now()); err != nil {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})

	now := time.Now()
	body := `{"type":"message.created"}`
	req := httptest.NewRequest(http.MethodPost, "/hooks", strings.NewReader(body))
	req.Header.Set(webhook.HeaderID, "msg_1")
	req.Header.Set(webhook.HeaderTimestamp, fmt.Sprint(now.Unix()))
	req.Header.Set(webhook.HeaderSignature, webhook.Sign(secret, "msg_1", now, []byte(body)))
	rec := httptest.NewRecorder()
	handler.ServeHTTP(rec, req)
	fmt.Println(rec.Code)
	// Output: 204
}
