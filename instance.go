package supervaizer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/supervaize/supervaizer-go/store"
)

// An instance id ([WithInstanceID], SUPERVAIZER_INSTANCE_ID) lets a restarted
// process take over at once the idempotency records its earlier boot left in
// progress. That is safe only while no other live process uses the same id,
// so on a shared store the id is claimed at startup (spec item 69): the claim
// is a record under instanceNamespace naming the boot that holds it, renewed
// every instanceBeat. A second live process with the same id refuses to start,
// naming the variable; a claim left by a crashed boot, which no longer
// changes, is taken over once it has been seen unchanged for longer than a
// live holder could leave it.
//
// Until the claim is held (before Start, or once it is lost), records are
// taken over only when their lease ends, as without an instance id.

const instanceNamespace = "instance"

// Claim timing: a holder rewrites its claim every instanceBeat; a claim seen
// unchanged for instanceDeadAfter, or whose last beat is older than
// instanceStaleAfter by this process's clock, belongs to a dead boot.
var (
	instanceBeat       = 2 * time.Second
	instanceDeadAfter  = 5 * time.Second / 2 // 2.5 beats
	instanceStaleAfter = 30 * time.Second
)

// instanceClaim is the record of the process holding an instance id.
type instanceClaim struct {
	Boot   string    `json:"boot"`
	Host   string    `json:"host,omitempty"`
	PID    int       `json:"pid"`
	BeatAt time.Time `json:"beat_at"`
}

// ErrInstanceInUse is returned by [Server.Start] when another live process
// holds the instance id this one was given (SUPERVAIZER_INSTANCE_ID,
// [WithInstanceID]) in the shared store.
var ErrInstanceInUse = errors.New("supervaizer: the instance id is in use by another live process")

// instanceHolder claims and keeps an instance id in a shared store.
type instanceHolder struct {
	store    store.Store
	id, boot string
	logger   *slog.Logger
	now      func() time.Time

	held atomic.Bool // the claim is ours and renewed

	mu      sync.Mutex
	current []byte // the claim as last written by this process
	stop    chan struct{}
	done    chan struct{}
}

func newInstanceHolder(s store.Store, id, boot string, logger *slog.Logger) *instanceHolder {
	return &instanceHolder{store: s, id: id, boot: boot, logger: logger, now: time.Now}
}

func (h *instanceHolder) key() string { return store.Key(instanceNamespace, idemKeyPart(h.id)) }

func (h *instanceHolder) record() []byte {
	host, _ := os.Hostname()
	raw, _ := json.Marshal(instanceClaim{Boot: h.boot, Host: host, PID: os.Getpid(), BeatAt: h.now().UTC()})
	return raw
}

// claim takes the instance id, waiting at most instanceDeadAfter to tell a
// live holder from a dead one, and starts renewing it. Calling it again once
// it succeeded does nothing.
func (h *instanceHolder) claim(ctx context.Context) error {
	if h.held.Load() {
		return nil
	}
	key := h.key()
	for {
		mine := h.record()
		existing, stored, err := h.store.PutIfAbsent(ctx, key, mine)
		if err != nil {
			return fmt.Errorf("supervaizer: claim instance id %q (%s) in the store: %w", h.id, envInstanceID, err)
		}
		if stored {
			h.hold(mine)
			return nil
		}
		var other instanceClaim
		if err := json.Unmarshal(existing, &other); err != nil {
			return fmt.Errorf("supervaizer: claim instance id %q: unreadable claim record: %w", h.id, err)
		}
		if other.Boot != h.boot && !h.dead(ctx, key, existing, other) {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("%w: %s=%q is held by process %d on host %q (last heartbeat %s); give each process its own %s (or WithInstanceID)",
				ErrInstanceInUse, envInstanceID, h.id, other.PID, other.Host, other.BeatAt.Format(time.RFC3339), envInstanceID)
		}
		swapped, err := h.store.CompareAndSwap(ctx, key, existing, mine)
		if err != nil {
			return fmt.Errorf("supervaizer: claim instance id %q (%s) in the store: %w", h.id, envInstanceID, err)
		}
		if swapped {
			if other.Boot != h.boot {
				h.logger.LogAttrs(ctx, slog.LevelInfo, "instance id taken over from a stopped process",
					slog.String("instance_id", h.id), slog.Int("previous_pid", other.PID), slog.String("previous_host", other.Host))
			}
			h.hold(mine)
			return nil
		}
		// The claim changed meanwhile: look again.
	}
}

// dead reports whether the claim seen (raw) belongs to a process that no
// longer renews it: its last beat is long past, or it stays unchanged for
// instanceDeadAfter.
func (h *instanceHolder) dead(ctx context.Context, key string, raw []byte, c instanceClaim) bool {
	if h.now().Sub(c.BeatAt) > instanceStaleAfter {
		return true
	}
	deadline := time.Now().Add(instanceDeadAfter)
	tick := time.NewTicker(instanceBeat / 8)
	defer tick.Stop()
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
		cur, found, err := h.store.Get(ctx, key)
		if err != nil || !found {
			return !found && err == nil // released: free to claim
		}
		if !bytes.Equal(cur, raw) {
			return false // renewed: alive
		}
	}
	return true
}

func (h *instanceHolder) hold(mine []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.current = mine
	h.held.Store(true)
	h.stop, h.done = make(chan struct{}), make(chan struct{})
	go h.renew(h.stop, h.done)
}

// renew rewrites the claim every instanceBeat until stop is closed. A claim
// found changed by another process, or a store that cannot be reached until
// the claim would look dead, ends the hold: records are then taken over only
// after their lease.
func (h *instanceHolder) renew(stop, done chan struct{}) {
	defer close(done)
	tick := time.NewTicker(instanceBeat)
	defer tick.Stop()
	lastOK := time.Now()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		h.mu.Lock()
		prev := h.current
		h.mu.Unlock()
		next := h.record()
		ctx, cancel := context.WithTimeout(context.Background(), instanceBeat)
		swapped, err := h.store.CompareAndSwap(ctx, h.key(), prev, next)
		cancel()
		switch {
		case err == nil && swapped:
			lastOK = time.Now()
			h.mu.Lock()
			h.current = next
			h.mu.Unlock()
		case err == nil:
			h.held.Store(false)
			h.logger.Error("instance id claimed by another process: records in progress are now taken over only after their lease",
				slog.String("instance_id", h.id), slog.String("variable", envInstanceID))
			return
		case time.Since(lastOK) >= instanceDeadAfter:
			h.held.Store(false)
			h.logger.Error("instance id claim could not be renewed: records in progress are now taken over only after their lease",
				slog.String("instance_id", h.id), slog.Any("error", err))
			return
		default:
			h.logger.Warn("instance id claim: renewal failed, retrying", slog.String("instance_id", h.id), slog.Any("error", err))
		}
	}
}

// release stops renewing and removes the claim if it is still ours, so that
// the next process with the id starts at once.
func (h *instanceHolder) release(ctx context.Context) {
	h.mu.Lock()
	stop, done, mine := h.stop, h.done, h.current
	h.stop = nil
	h.mu.Unlock()
	if stop == nil {
		return
	}
	close(stop)
	<-done
	wasHeld := h.held.Swap(false)
	if !wasHeld {
		return
	}
	if cur, found, err := h.store.Get(ctx, h.key()); err == nil && found && bytes.Equal(cur, mine) {
		if err := h.store.Delete(ctx, h.key()); err != nil {
			h.logger.Warn("instance id claim: release failed", slog.String("instance_id", h.id), slog.Any("error", err))
		}
	}
}
