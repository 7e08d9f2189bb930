package a2abind

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/supervaize/supervaizer-go/conversation"
	"github.com/supervaize/supervaizer-go/store"
)

// The history of the conversations of A2A text messages (spec item 81):
// one record per (verified workspace, agent, contextId) in the store,
// bounded in turns and bytes, kept for a retention after its last turn, and
// at most Contexts records per workspace. A turn carries the messageId of
// the user message it answers, so a retried message appends nothing; every
// write is a compare-and-swap, so concurrent messages lose no turn.

// historyNamespace is the first part of a history record's key.
const historyNamespace = "a2a.conv"

// maxHistoryRetries bounds the compare-and-swap retries of one append.
const maxHistoryRetries = 32

// History is the conversations' history in the store.
type History struct {
	st  store.Store
	lim conversation.Limits
	now func() time.Time
}

// NewHistory returns the history kept in st within lim (zero fields: the
// defaults).
func NewHistory(st store.Store, lim conversation.Limits) *History {
	return &History{st: st, lim: lim.WithDefaults(), now: time.Now}
}

// historyRecord is a stored conversation.
type historyRecord struct {
	Turns   []historyTurn `json:"turns"`
	Updated int64         `json:"updated"` // Unix milliseconds of the last turn
}

// historyTurn is a turn with the messageId of the user message of its
// exchange.
type historyTurn struct {
	conversation.Turn
	MessageID string `json:"message_id,omitempty"`
}

// hashPart is the first 32 hex digits of SHA-256(s): a bounded key part.
func hashPart(s string) string {
	d := sha256.Sum256([]byte(s))
	return hex.EncodeToString(d[:16])
}

func workspacePrefix(workspaceID string) string {
	return store.Key(historyNamespace, hashPart(workspaceID)) + string(store.Separator)
}

func historyKey(workspaceID, slug, contextID string) string {
	return store.Key(historyNamespace, hashPart(workspaceID), slug, hashPart(contextID))
}

// load reads a record; an expired or unreadable one is empty.
func (h *History) load(ctx context.Context, key string) (historyRecord, []byte, bool, error) {
	raw, found, err := h.st.Get(ctx, key)
	if err != nil || !found {
		return historyRecord{}, nil, found, err
	}
	var rec historyRecord
	if json.Unmarshal(raw, &rec) != nil || h.expired(rec.Updated) {
		return historyRecord{}, raw, true, nil
	}
	return rec, raw, true, nil
}

func (h *History) expired(updated int64) bool {
	return h.now().Sub(time.UnixMilli(updated)) > h.lim.Retention
}

// Load returns the history of a conversation to hand to its handler for
// the message messageID: the turns before that message's exchange when it
// was already answered (seen true: a retry, which appends nothing).
func (h *History) Load(ctx context.Context, workspaceID, slug, contextID, messageID string) (turns []conversation.Turn, seen bool, err error) {
	rec, _, _, err := h.load(ctx, historyKey(workspaceID, slug, contextID))
	if err != nil {
		return nil, false, err
	}
	turns = make([]conversation.Turn, 0, len(rec.Turns))
	for _, t := range rec.Turns {
		if t.MessageID == messageID {
			return turns, true, nil
		}
		turns = append(turns, t.Turn)
	}
	return turns, false, nil
}

// errTooManyWriters is the error of an append that lost every race.
var errTooManyWriters = errors.New("a2a conversation history: too many concurrent updates")

// Append adds the exchange of message messageID (the user's turn, then the
// agent's) to a conversation, unless it is there already, then bounds it.
func (h *History) Append(ctx context.Context, workspaceID, slug, contextID, messageID string, user, agent conversation.Turn) error {
	key := historyKey(workspaceID, slug, contextID)
	for range maxHistoryRetries {
		rec, old, found, err := h.load(ctx, key)
		if err != nil {
			return err
		}
		if slices.ContainsFunc(rec.Turns, func(t historyTurn) bool { return t.MessageID == messageID }) {
			return nil
		}
		rec.Turns = append(rec.Turns, historyTurn{user, messageID}, historyTurn{agent, messageID})
		rec.Turns = h.bound(rec.Turns)
		rec.Updated = h.now().UnixMilli()
		val, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		var stored bool
		if found {
			stored, err = h.st.CompareAndSwap(ctx, key, old, val)
		} else {
			_, stored, err = h.st.PutIfAbsent(ctx, key, val)
		}
		if err != nil {
			return err
		}
		if stored {
			if !found {
				return h.cap(ctx, workspaceID, key)
			}
			return nil
		}
	}
	return errTooManyWriters
}

// bound drops the oldest turns beyond the turn and byte limits (the
// newest exchange is always kept).
func (h *History) bound(turns []historyTurn) []historyTurn {
	size := 0
	keep := len(turns)
	for i := len(turns) - 1; i >= 0; i-- {
		n := len(turns[i].Content)
		for _, a := range turns[i].Attachments {
			n += len(a.Type) + len(a.Content)
		}
		if len(turns)-i > h.lim.Turns || (size+n > h.lim.Bytes && len(turns)-i > 2) {
			break
		}
		size += n
		keep = i
	}
	return slices.Clone(turns[keep:])
}

// cap keeps at most Contexts conversations in the workspace once a new one
// was stored (key): expired ones go, then the least recently used.
func (h *History) cap(ctx context.Context, workspaceID, key string) error {
	type entry struct {
		key     string
		updated int64
	}
	var live []entry
	err := h.st.Scan(ctx, workspacePrefix(workspaceID), func(k string, v []byte) error {
		var rec historyRecord
		if json.Unmarshal(v, &rec) != nil || h.expired(rec.Updated) {
			return h.st.Delete(ctx, k)
		}
		if k != key {
			live = append(live, entry{k, rec.Updated})
		}
		return nil
	})
	if err != nil {
		return err
	}
	slices.SortFunc(live, func(a, b entry) int { return cmp.Compare(a.updated, b.updated) })
	for len(live)+1 > h.lim.Contexts {
		if err := h.st.Delete(ctx, live[0].key); err != nil {
			return err
		}
		live = live[1:]
	}
	return nil
}
