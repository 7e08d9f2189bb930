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

	"github.com/supervaize/supervaizer-go/internal/proc"
	"github.com/supervaize/supervaizer-go/store"
)

// An instance id ([WithInstanceID], SUPERVAIZER_INSTANCE_ID) lets a restarted
// process take over at once the idempotency records its earlier boot left in
// progress. That is safe only while no other live process uses the same id,
// so on a shared store the id is claimed at startup (spec items 69 and 73):
// the claim is a record under instanceNamespace naming the boot that holds it
// and the claim's epoch, renewed every instanceBeat. A second live process
// with the same id refuses to start, naming the variable; a claim not renewed
// for instanceDeadAfter (a crashed boot, or one paused that long) is taken
// over, raising its epoch. A holder that has not renewed its claim for
// instanceStopAfter stops taking action calls (and readiness fails) until
// it renews; one that finds its claim taken over never takes calls again, and
// writes no result under the old epoch.
//
// The records of the boot displaced by a takeover are taken over at once only
// when that boot is known dead (same host, its process gone); otherwise it
// may merely be paused with a call in flight, and its records wait for their
// lease. Until the claim is held (before Start), records are taken over only
// when their lease ends, as without an instance id.

const instanceNamespace = "instance"

// Claim timing: a holder rewrites its claim every instanceBeat and stops
// taking calls once it has not for instanceStopAfter; a claim seen unchanged
// for instanceDeadAfter, or whose last beat is older than instanceStaleAfter
// by this process's clock, belongs to a dead (or paused) boot.
var (
	instanceBeat       = 2 * time.Second
	instanceStopAfter  = 5 * time.Second
	instanceDeadAfter  = 10 * time.Second
	instanceStaleAfter = 30 * time.Second
)

// instanceClaim is the record of the process holding an instance id.
type instanceClaim struct {
	Boot   string    `json:"boot"`
	Host   string    `json:"host,omitempty"`
	PID    int       `json:"pid"`
	BeatAt time.Time `json:"beat_at"`
	// Epoch rises with every takeover by another boot.
	Epoch uint64 `json:"epoch,omitempty"`
	// Released marks a claim given up by a clean shutdown: the next boot
	// takes it at once, keeping the epochs rising.
	Released bool `json:"released,omitempty"`
}

// errClaimNotRenewed refuses a call while this process's claim of its
// instance id is not renewed.
var errClaimNotRenewed = errors.New("the instance id claim is not renewed: another process may hold it")

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
	origin   time.Time // renewedAt counts from it, on the monotonic clock

	held    atomic.Bool  // the claim is ours (it may not be renewed lately)
	claimed atomic.Bool  // the claim was taken once: from then on freshness gates calls
	renewed atomic.Int64 // when the claim was last written, since origin

	mu      sync.Mutex
	current []byte // the claim as last written by this process
	epoch   uint64
	// displaced is the boot whose claim this one took over while it was
	// perhaps alive ("" when none, or when it is known dead).
	displaced string
	stop      chan struct{}
	done      chan struct{}
}

func newInstanceHolder(s store.Store, id, boot string, logger *slog.Logger) *instanceHolder {
	return &instanceHolder{store: s, id: id, boot: boot, logger: logger, now: time.Now, origin: time.Now()}
}

func (h *instanceHolder) key() string { return store.Key(instanceNamespace, idemKeyPart(h.id)) }

func (h *instanceHolder) record(epoch uint64, released bool) []byte {
	host, _ := os.Hostname()
	raw, _ := json.Marshal(instanceClaim{Boot: h.boot, Host: host, PID: os.Getpid(), BeatAt: h.now().UTC(), Epoch: epoch, Released: released})
	return raw
}

// fresh reports whether this process holds its claim and renewed it within
// instanceStopAfter: only then may it take calls.
func (h *instanceHolder) fresh() bool {
	return h.held.Load() && time.Since(h.origin)-time.Duration(h.renewed.Load()) < instanceStopAfter
}

// stale reports whether calls are refused for the claim: it was taken and
// is not fresh now.
func (h *instanceHolder) stale() bool { return h.claimed.Load() && !h.fresh() }

// mayTakeOver reports whether the records of boot, another boot of this
// instance, may be taken over at once: this process holds the claim and boot
// is not the one it displaced while perhaps alive.
func (h *instanceHolder) mayTakeOver(boot string) bool {
	if !h.fresh() {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return boot != h.displaced
}

// stillHolds checks in the store, for a write of a result, that the claim is
// still this boot's at its epoch: a holder paused past the takeover window
// must not record under the old epoch (fencing).
func (h *instanceHolder) stillHolds(ctx context.Context) bool {
	held, err := h.holds(ctx)
	return held && err == nil
}

// holds is stillHolds telling a store that did not answer (err) from a claim
// found to be another's (false, nil).
func (h *instanceHolder) holds(ctx context.Context) (bool, error) {
	if h.fresh() {
		return true, nil
	}
	raw, found, err := h.store.Get(ctx, h.key())
	if err != nil {
		return false, err
	}
	if !found {
		return false, nil
	}
	var c instanceClaim
	if json.Unmarshal(raw, &c) != nil {
		return false, nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return c.Boot == h.boot && c.Epoch == h.epoch && !c.Released, nil
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
		mine := h.record(1, false)
		existing, stored, err := h.store.PutIfAbsent(ctx, key, mine)
		if err != nil {
			return fmt.Errorf("supervaizer: claim instance id %q (%s) in the store: %w", h.id, envInstanceID, err)
		}
		if stored {
			h.hold(mine, 1, "")
			return nil
		}
		var other instanceClaim
		if err := json.Unmarshal(existing, &other); err != nil {
			return fmt.Errorf("supervaizer: claim instance id %q: unreadable claim record: %w", h.id, err)
		}
		if other.Boot != h.boot && !other.Released && !h.dead(ctx, key, existing, other) {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("%w: %s=%q is held by process %d on host %q (last heartbeat %s); give each process its own %s (or WithInstanceID)",
				ErrInstanceInUse, envInstanceID, h.id, other.PID, other.Host, other.BeatAt.Format(time.RFC3339), envInstanceID)
		}
		epoch := other.Epoch
		if other.Boot != h.boot {
			epoch++
		}
		mine = h.record(epoch, false)
		swapped, err := h.store.CompareAndSwap(ctx, key, existing, mine)
		if err != nil {
			return fmt.Errorf("supervaizer: claim instance id %q (%s) in the store: %w", h.id, envInstanceID, err)
		}
		if !swapped {
			continue // the claim changed meanwhile: look again
		}
		displaced := ""
		if other.Boot != h.boot && !other.Released {
			gone := processGone(other)
			if !gone {
				displaced = other.Boot
			}
			h.logger.LogAttrs(ctx, slog.LevelWarn, "instance id taken over from a process that stopped renewing its claim",
				slog.String("instance_id", h.id), slog.Int("previous_pid", other.PID), slog.String("previous_host", other.Host),
				slog.Uint64("epoch", epoch), slog.Bool("previous_process_gone", gone))
		}
		h.hold(mine, epoch, displaced)
		return nil
	}
}

// processGone reports whether the process that wrote c is known to be gone:
// it ran on this host and no process has its id any more (or this one has
// it, as when a container restarts). Elsewhere nothing is known.
func processGone(c instanceClaim) bool {
	host, err := os.Hostname()
	if err != nil || host != c.Host || c.PID <= 0 {
		return false
	}
	return c.PID == os.Getpid() || !proc.Alive(c.PID)
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

func (h *instanceHolder) hold(mine []byte, epoch uint64, displaced string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.current, h.epoch, h.displaced = mine, epoch, displaced
	h.renewed.Store(int64(time.Since(h.origin)))
	h.held.Store(true)
	h.claimed.Store(true)
	h.stop, h.done = make(chan struct{}), make(chan struct{})
	go h.renew(h.stop, h.done)
}

// renew rewrites the claim every instanceBeat until stop is closed. A store
// that cannot be reached only delays the renewal (calls are refused
// meanwhile, see fresh); a claim found changed by another process ends the
// hold for good.
func (h *instanceHolder) renew(stop, done chan struct{}) {
	defer close(done)
	tick := time.NewTicker(instanceBeat)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		h.mu.Lock()
		prev, epoch := h.current, h.epoch
		h.mu.Unlock()
		next := h.record(epoch, false)
		ctx, cancel := context.WithTimeout(context.Background(), instanceBeat)
		swapped, err := h.store.CompareAndSwap(ctx, h.key(), prev, next)
		cancel()
		switch {
		case err == nil && swapped:
			h.mu.Lock()
			h.current = next
			h.mu.Unlock()
			h.renewed.Store(int64(time.Since(h.origin)))
		case err == nil:
			h.held.Store(false)
			h.logger.Error("instance id claimed by another process: this process takes no action call any more and reports not ready; restart it",
				slog.String("instance_id", h.id), slog.String("variable", envInstanceID))
			return
		default:
			h.logger.Warn("instance id claim: renewal failed, retrying", slog.String("instance_id", h.id), slog.Any("error", err))
		}
	}
}

// release stops renewing and marks the claim released if it is still ours,
// so that the next process with the id starts at once.
func (h *instanceHolder) release(ctx context.Context) {
	h.mu.Lock()
	stop, done, mine, epoch := h.stop, h.done, h.current, h.epoch
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
	if _, err := h.store.CompareAndSwap(ctx, h.key(), mine, h.record(epoch, true)); err != nil {
		h.logger.Warn("instance id claim: release failed", slog.String("instance_id", h.id), slog.Any("error", err))
	}
}
