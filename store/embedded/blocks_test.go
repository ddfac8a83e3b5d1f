package embedded

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/killrchat/chatql/store"
	"github.com/killrchat/chatql/store/storetest"
)

// TestBlocksCapExact: racing blocks never pass store.MaxBlocks here, and
// exactly as many succeed as there were places left.
func TestBlocksCapExact(t *testing.T) {
	db := open(t, t.TempDir())
	defer db.Close()
	storetest.RunBlocksCapExact(t, db)
}

// TestBlocksCountedWithoutStoredCount: blocks written before their count
// was kept (none stored) are counted once, at the next block, and the count
// is kept from then on.
func TestBlocksCountedWithoutStoredCount(t *testing.T) {
	db := open(t, t.TempDir())
	defer db.Close()
	ctx := context.Background()
	const login = "old-timer"
	block := func(i int) error {
		return db.Block(ctx, login, store.UserRef{Login: fmt.Sprintf("u%04d", i), Firstname: "U"})
	}
	for i := range store.MaxBlocks - 2 {
		if err := block(i); err != nil {
			t.Fatal(err)
		}
	}
	// As the store was before: the blocks, and no count.
	if err := db.pdb.Delete(blockCountKey(login), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := db.Unblock(ctx, login, "u0000"); err != nil { // nothing to count off
		t.Fatal(err)
	}
	for i := range 3 {
		if err := block(store.MaxBlocks + i); err != nil {
			t.Fatalf("block %d of the 3 places left: %v", i, err)
		}
	}
	if err := block(2 * store.MaxBlocks); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("a block at the cap = %v, want ErrInvalid", err)
	}
	if row, found, err := getRow[blockCountRow](db, blockCountKey(login)); err != nil || !found || row.N != store.MaxBlocks {
		t.Fatalf("stored count = %+v, %v, %v; want %d", row, found, err, store.MaxBlocks)
	}
}
