package checkpoint

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/supervaize/supervaizer-go/store"
)

// Several controller instances may share one store (PostgreSQL). Two things
// then cross instances:
//
//   - which instance runs an occurrence: besides the in-process set, a step
//     holds a claim record in the store, renewed while it runs and deleted
//     when it ends. Another instance refuses the occurrence ("occurrence
//     active") while the claim is live; the same instance restarted (a new
//     boot) takes over its own claims at once, another one after the lease;
//   - decisions: a decision persisted by another instance reaches a paused
//     step here by polling its record (no notification crosses instances).

// Defaults of the sharing settings; see Config.
const (
	// DefaultPollInterval is how often a paused step re-reads its record
	// when the store may be shared by other instances.
	DefaultPollInterval = 2 * time.Second
	// DefaultClaimLease is how long a claim of a dead instance keeps the
	// occurrence from other instances; a live one renews it every third.
	DefaultClaimLease = 30 * time.Second
)

// claimRecord is an occurrence held by one boot of one instance.
type claimRecord struct {
	Instance   string    `json:"instance,omitempty"`
	Boot       string    `json:"boot"`
	LeaseUntil time.Time `json:"lease_until"`
}

// claimKey is the claim record of an occurrence of an agent.
func claimKey(agentSlug, occurrenceID string) string {
	return store.Key(checkpointKeyspace, "claim", agentSlug, keyPart(occurrenceID))
}

// live reports whether c, read at now, keeps the occurrence from this boot.
func (rt *checkpointRuntime) live(c *claimRecord, now time.Time) bool {
	switch {
	case c.Boot == rt.boot:
		return false // this boot's own, held in memory too
	case rt.instance != "" && c.Instance == rt.instance:
		return false // an earlier boot of this instance: it died with it
	}
	return now.Before(c.LeaseUntil)
}

// shared reports whether other instances may use the store: it is not
// store.Exclusive, or WithCheckpointSharing said so (the poll interval is
// then set, see Attach). Claims are stored, and read, only then.
func (rt *checkpointRuntime) shared() bool { return rt.poll > 0 }

// claim marks the occurrence active: in this process, and, when the store
// is shared, in the store for the other instances. release ends both.
func (rt *checkpointRuntime) claim(ctx context.Context, occurrenceID string) (release func(), err error) {
	rt.mu.Lock()
	if _, busy := rt.active[occurrenceID]; busy {
		rt.mu.Unlock()
		return nil, &RecoveryRequiredError{OccurrenceID: occurrenceID, Reason: RecoveryOccurrenceActive}
	}
	rt.active[occurrenceID] = struct{}{}
	rt.mu.Unlock()
	local := func() {
		rt.mu.Lock()
		delete(rt.active, occurrenceID)
		rt.mu.Unlock()
	}
	if !rt.shared() {
		return local, nil
	}
	key := claimKey(rt.slug, occurrenceID)
	mine, err := rt.takeClaim(ctx, key)
	if err != nil {
		local()
		return nil, err
	}
	if mine == nil {
		local()
		return nil, &RecoveryRequiredError{OccurrenceID: occurrenceID, Reason: RecoveryOccurrenceActive}
	}
	stop, stopped := make(chan struct{}), make(chan struct{})
	go rt.renewClaim(key, mine, stop, stopped)
	return func() {
		close(stop)
		<-stopped
		rt.dropClaim(key)
		local()
	}, nil
}

// claimRecordAt is this boot's claim, taken or renewed at now.
func (rt *checkpointRuntime) claimRecordAt(now time.Time) ([]byte, error) {
	return json.Marshal(claimRecord{Instance: rt.instance, Boot: rt.boot, LeaseUntil: now.Add(rt.lease).UTC()})
}

// takeClaim stores this boot's claim at key unless a live claim of another
// instance holds it; it returns the stored claim, or nil when it is held.
func (rt *checkpointRuntime) takeClaim(ctx context.Context, key string) ([]byte, error) {
	for range maxCASAttempts {
		now := rt.now()
		raw, err := rt.claimRecordAt(now)
		if err != nil {
			return nil, err
		}
		existing, stored, err := rt.store.PutIfAbsent(ctx, key, raw)
		if err != nil {
			return nil, err
		}
		if stored {
			return raw, nil
		}
		var c claimRecord
		if json.Unmarshal(existing, &c) == nil && rt.live(&c, now) {
			return nil, nil
		}
		// Dead, or unreadable: take it over.
		swapped, err := rt.store.CompareAndSwap(ctx, key, existing, raw)
		if err != nil {
			return nil, err
		}
		if swapped {
			return raw, nil
		}
	}
	return nil, nil // others keep changing it: held
}

// renewClaim extends the lease of the claim stored as mine every third of
// the lease until stop is closed.
func (rt *checkpointRuntime) renewClaim(key string, mine []byte, stop <-chan struct{}, stopped chan<- struct{}) {
	defer close(stopped)
	tick := time.NewTicker(rt.lease / 3)
	defer tick.Stop()
	ctx := context.Background()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		raw, err := rt.claimRecordAt(rt.now())
		if err != nil {
			return
		}
		swapped, err := rt.store.CompareAndSwap(ctx, key, mine, raw)
		if err != nil || !swapped {
			rt.logger.LogAttrs(ctx, slog.LevelWarn, "rule checkpoint claim could not be renewed; other instances may take the occurrence over once it expires",
				slog.String("agent_slug", rt.slug), slog.String("key", key), slog.Bool("lost", err == nil))
			if err == nil {
				return // taken over: nothing of ours left to renew
			}
			continue
		}
		mine = raw
	}
}

// dropClaim deletes this boot's claim at key (not one another boot took
// over meanwhile). A failure is logged: the claim then expires.
func (rt *checkpointRuntime) dropClaim(key string) {
	ctx := context.Background()
	var c claimRecord
	raw, found, err := rt.store.Get(ctx, key)
	if err == nil && found && json.Unmarshal(raw, &c) == nil && c.Boot != rt.boot {
		return
	}
	if err == nil && found {
		err = rt.store.Delete(ctx, key)
	}
	if err != nil {
		rt.logger.LogAttrs(ctx, slog.LevelWarn, "rule checkpoint claim could not be dropped; it expires with its lease",
			slog.String("agent_slug", rt.slug), slog.String("key", key), slog.Any("error", err))
	}
}

// claimedElsewhere reports whether another instance holds a live claim on
// the occurrence.
func (rt *checkpointRuntime) claimedElsewhere(ctx context.Context, occurrenceID string) bool {
	if !rt.shared() {
		return false
	}
	c, _, err := getJSON[claimRecord](ctx, rt.store, claimKey(rt.slug, occurrenceID))
	return err == nil && c != nil && rt.live(c, rt.now())
}
