package cache

import (
	"context"
	"testing"
	"time"
)

// A second taker of an action's lock is told it waits (once), and gets
// the lock when the first lets go.
func TestLockActionSaysItWaits(t *testing.T) {
	c, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var a ActionID
	a[0] = 7
	waited := 0
	unlock, err := c.LockAction(context.Background(), a, func() { waited++ })
	if err != nil || waited != 0 {
		t.Fatalf("free lock: err %v, waited %d times", err, waited)
	}
	got := make(chan error, 1)
	go func() {
		u, err := c.LockAction(context.Background(), a, func() { waited++ })
		if err == nil {
			u()
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("the lock was taken twice (%v)", err)
	case <-time.After(200 * time.Millisecond):
	}
	unlock()
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if waited != 1 {
		t.Errorf("told it waits %d times, want 1", waited)
	}
}
