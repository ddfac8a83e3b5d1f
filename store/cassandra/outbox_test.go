package cassandra

import (
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/killrchat/chatql/store"
)

// TestNoticeRetentionMatchesSchema: the notices' TTL is the retention the
// store promises, and their listings outlive them.
func TestNoticeRetentionMatchesSchema(t *testing.T) {
	ttl := func(table string) time.Duration {
		t.Helper()
		m := regexp.MustCompile(`(?s)CREATE TABLE IF NOT EXISTS ` + table + ` \(.*?\) WITH default_time_to_live = (\d+)`).FindStringSubmatch(schemaV17)
		if m == nil {
			t.Fatalf("schema_v16.cql gives %s no default_time_to_live", table)
		}
		secs, _ := strconv.Atoi(m[1])
		return time.Duration(secs) * time.Second
	}
	if got := ttl("notices"); got != store.NoticeRetention {
		t.Errorf("notices' TTL = %v, want store.NoticeRetention, %v", got, store.NoticeRetention)
	}
	if got := ttl("notice_hours"); got <= store.NoticeRetention {
		t.Errorf("notice_hours' TTL = %v, want more than the notices' %v", got, store.NoticeRetention)
	}
}

// TestNoticeHour: an id's partition is its hour since the epoch.
func TestNoticeHour(t *testing.T) {
	at := time.Date(2026, 11, 27, 13, 59, 59, 999_000_000, time.UTC)
	if got, want := noticeHour(store.MessageIDAt(at)), int(at.Unix()/3600); got != want {
		t.Errorf("noticeHour(%v) = %d, want %d", at, got, want)
	}
	if a, b := noticeHour(store.MessageIDAt(at)), noticeHour(store.MessageIDAt(at.Add(time.Millisecond))); b != a+1 {
		t.Errorf("the hour after %v = %d, want %d", at, b, a+1)
	}
}

// TestLeaseSeconds: a lease's TTL covers ttl even when written at the end
// of a second.
func TestLeaseSeconds(t *testing.T) {
	for ttl, want := range map[time.Duration]int{time.Second: 2, 1500 * time.Millisecond: 3, 2 * time.Second: 3, time.Millisecond: 2} {
		if got := leaseSeconds(ttl); got != want {
			t.Errorf("leaseSeconds(%v) = %d, want %d", ttl, got, want)
		}
	}
}
