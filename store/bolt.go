package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// Defaults of [Open] and [DefaultPath].
const (
	// DefaultLockTimeout is how long Open waits for the file lock held by
	// another process before it fails with ErrLocked.
	DefaultLockTimeout = time.Second
	// EnvDataDir names the environment variable that holds the directory of
	// the default database file.
	EnvDataDir = "SUPERVAIZER_DATA_DIR"
	// DefaultFileName is the base name of the default database file.
	DefaultFileName = "supervaizer.db"
)

// bucketName is the single bbolt bucket that holds every key. The version
// suffix leaves room for a future change of layout.
var bucketName = []byte("supervaizer.store.v1")

// errUnchanged rolls back an update transaction that has nothing to write,
// so that it costs no fsync.
var errUnchanged = errors.New("store: unchanged")

// Bolt is the durable Store: one file, written through go.etcd.io/bbolt, that
// needs no server. Every write is committed and fsynced before it returns, so
// a write that returned survives a crash of the process, and of the machine as
// far as the disk honours fsync. Writes are serialized (one fsync each); reads
// run in parallel with them. The context is checked before each operation; a
// write that has started is not interrupted.
//
// A file is used by one process at a time: Open takes an exclusive lock on it.
// Scan visits a snapshot of the matching keys, copied out of the database when
// it starts, so its memory use grows with the size of what it visits.
type Bolt struct {
	closed atomic.Bool
	writes committer
	db     *bolt.DB
	path   string
}

var _ Store = (*Bolt)(nil)

// Option configures [Open].
type Option func(*boltOptions)

type boltOptions struct {
	lockTimeout time.Duration
}

// WithLockTimeout sets how long Open waits for a file locked by another
// process before it returns an error wrapping ErrLocked. A value ≤ 0 keeps the
// default, DefaultLockTimeout.
func WithLockTimeout(d time.Duration) Option {
	return func(o *boltOptions) {
		if d > 0 {
			o.lockTimeout = d
		}
	}
}

// DefaultPath returns the default location of the database file in the
// folder dir, the value of SUPERVAIZER_DATA_DIR ([EnvDataDir]) read by the
// caller (supervaizer.ReadEnv(nil).DataDir): dir/supervaizer.db when dir is
// not blank, else supervaizer-<uid>/supervaizer.db under [os.TempDir] (one
// folder per user of the machine, shared by every controller of that user: a
// second one finds it locked; [ControllerPath] gives each controller its
// own). The temporary directory is meant for development; a deployment sets
// SUPERVAIZER_DATA_DIR to a directory that only its user can write and that
// outlives reboots.
func DefaultPath(dir string) string {
	if dir = strings.TrimSpace(dir); dir != "" {
		return filepath.Join(dir, DefaultFileName)
	}
	return sharedDefaultPath()
}

// sharedDefaultPath is the user's shared default file, supervaizer-<uid>/supervaizer.db.
func sharedDefaultPath() string {
	return filepath.Join(os.TempDir(), "supervaizer-"+userTag(), DefaultFileName)
}

// ControllerPath returns the database file of one controller: in dataDir
// (the value of SUPERVAIZER_DATA_DIR, read by the caller) when it is not
// blank, else in a folder of the controller's own under [os.TempDir],
// supervaizer-<uid>/<name>/supervaizer.db, name being the agent's slug (the
// server id for a server carrying several agents; characters other than
// letters, digits, '.', '_' and '-' become '-'). Two agents of one user, or
// two clones of one agent with different names, no longer share a file.
//
// A file left by an earlier version in the shared default,
// supervaizer-<uid>/supervaizer.db, is kept in use while it exists, so that
// no record is stranded by an upgrade: shared is then true, and the caller
// says so in its log (move the file to the new path, or set
// SUPERVAIZER_DATA_DIR).
func ControllerPath(dataDir, name string) (path string, shared bool) {
	if dir := strings.TrimSpace(dataDir); dir != "" {
		return filepath.Join(dir, DefaultFileName), false
	}
	if fi, err := os.Stat(sharedDefaultPath()); err == nil && fi.Mode().IsRegular() {
		return sharedDefaultPath(), true
	}
	folder := strings.Map(func(r rune) rune {
		switch {
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9', r == '.', r == '_', r == '-':
			return r
		}
		return '-'
	}, strings.TrimSpace(name))
	if strings.Trim(folder, ".") == "" {
		folder = "controller"
	}
	return filepath.Join(os.TempDir(), "supervaizer-"+userTag(), folder, DefaultFileName), false
}

// Open opens the database file at path, creating it (mode 0600) and its
// missing parent directories (mode 0700) if needed. If another process holds
// the file, Open waits up to the lock timeout (see [WithLockTimeout]) and then
// returns an error wrapping [ErrLocked] that names the path. A file that is
// not a bbolt database is an error.
func Open(path string, opts ...Option) (*Bolt, error) {
	if path == "" {
		return nil, errors.New("store: open: empty path")
	}
	o := boltOptions{lockTimeout: DefaultLockTimeout}
	for _, opt := range opts {
		opt(&o)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	if err := checkSharedTempDir(filepath.Dir(path)); err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: o.lockTimeout})
	if err != nil {
		if errors.Is(err, berrors.ErrTimeout) {
			return nil, &lockedError{path: path}
		}
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(bucketName)
		return err
	})
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	bl := &Bolt{db: db, path: path}
	bl.writes.db = db
	return bl, nil
}

// Path returns the path of the database file, as given to Open.
func (b *Bolt) Path() string { return b.path }

// begin runs the checks that precede every operation.
func (b *Bolt) begin(ctx context.Context, key string) error {
	if b.closed.Load() {
		return ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return checkKey(key)
}

// Get implements [Store.Get].
func (b *Bolt) Get(ctx context.Context, key string) ([]byte, bool, error) {
	if err := b.begin(ctx, key); err != nil {
		return nil, false, err
	}
	var (
		value []byte
		found bool
	)
	err := b.db.View(func(tx *bolt.Tx) error {
		value, found = lookup(tx.Bucket(bucketName), key)
		return nil
	})
	if err != nil {
		return nil, false, b.wrap("get", err)
	}
	return value, found, nil
}

// update runs fn in a write transaction and returns once the transaction
// is committed, which bbolt syncs to disk: a write that returns is durable.
// fn returns errUnchanged when it wrote nothing; changed reports whether
// the committed run of fn wrote. Overlapping writes share commits (see
// committer), so fn may run more than once and must set what it reports
// afresh on every run.
func (b *Bolt) update(fn func(tx *bolt.Tx) error) (changed bool, err error) {
	return b.writes.write(fn)
}

// PutIfAbsent implements [Store.PutIfAbsent] in one transaction. A key that
// exists costs no write of its own.
func (b *Bolt) PutIfAbsent(ctx context.Context, key string, value []byte) ([]byte, bool, error) {
	if err := b.begin(ctx, key); err != nil {
		return nil, false, err
	}
	var existing []byte
	stored, err := b.update(func(tx *bolt.Tx) error {
		bk := tx.Bucket(bucketName)
		v, found := lookup(bk, key)
		existing = v // nil when absent, on every run
		if found {
			return errUnchanged
		}
		return bk.Put([]byte(key), value)
	})
	if err != nil {
		return nil, false, b.wrap("put", err)
	}
	if stored {
		return nil, true, nil
	}
	return existing, false, nil
}

// CompareAndSwap implements [Store.CompareAndSwap] in one transaction. A
// mismatch costs no write of its own.
func (b *Bolt) CompareAndSwap(ctx context.Context, key string, old, new []byte) (bool, error) {
	if err := b.begin(ctx, key); err != nil {
		return false, err
	}
	swapped, err := b.update(func(tx *bolt.Tx) error {
		bk := tx.Bucket(bucketName)
		k, v := bk.Cursor().Seek([]byte(key))
		if k == nil || string(k) != key || !bytes.Equal(v, old) {
			return errUnchanged
		}
		return bk.Put([]byte(key), new)
	})
	if err != nil {
		return false, b.wrap("compare-and-swap", err)
	}
	return swapped, nil
}

// Delete implements [Store.Delete]. Deleting a missing key costs no write
// of its own.
func (b *Bolt) Delete(ctx context.Context, key string) error {
	if err := b.begin(ctx, key); err != nil {
		return err
	}
	_, err := b.update(func(tx *bolt.Tx) error {
		bk := tx.Bucket(bucketName)
		if _, found := lookup(bk, key); !found {
			return errUnchanged
		}
		return bk.Delete([]byte(key))
	})
	if err != nil {
		return b.wrap("delete", err)
	}
	return nil
}

// Scan implements [Store.Scan]. It copies the matching keys and values out of
// one read transaction, then calls fn with no transaction open, so fn may
// write to the store.
func (b *Bolt) Scan(ctx context.Context, prefix string, fn func(key string, value []byte) error) error {
	if b.closed.Load() {
		return ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	type entry struct {
		key   string
		value []byte
	}
	var entries []entry
	err := b.db.View(func(tx *bolt.Tx) error {
		p := []byte(prefix)
		c := tx.Bucket(bucketName).Cursor()
		for k, v := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, v = c.Next() {
			entries = append(entries, entry{key: string(k), value: cloneValue(v)})
		}
		return nil
	})
	if err != nil {
		return b.wrap("scan", err)
	}
	for _, e := range entries {
		if b.closed.Load() {
			return ErrClosed
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(e.key, e.value); err != nil {
			return err
		}
	}
	return nil
}

// Close implements [Store.Close]. It waits for the transactions in progress.
func (b *Bolt) Close() error {
	if b.closed.Swap(true) {
		return ErrClosed
	}
	if err := b.db.Close(); err != nil {
		return fmt.Errorf("store: close %s: %w", b.path, err)
	}
	return nil
}

// wrap turns an error of bbolt into an error of this package.
func (b *Bolt) wrap(op string, err error) error {
	if errors.Is(err, berrors.ErrDatabaseNotOpen) {
		return ErrClosed
	}
	return fmt.Errorf("store: %s in %s: %w", op, b.path, err)
}

// lookup returns a copy of the value of key in bk, and whether it exists.
// bbolt's Bucket.Get cannot tell a missing key from an empty value.
func lookup(bk *bolt.Bucket, key string) ([]byte, bool) {
	k, v := bk.Cursor().Seek([]byte(key))
	if k == nil || string(k) != key {
		return nil, false
	}
	return cloneValue(v), true
}

// lockedError reports a database file held by another process.
type lockedError struct{ path string }

func (e *lockedError) Error() string {
	return "store: " + e.path + " is locked by another process (another controller, or another run of this one, uses it); " +
		"give each controller a folder of its own with " + EnvDataDir
}

// Is makes errors.Is(err, ErrLocked) true.
func (e *lockedError) Is(target error) bool { return target == ErrLocked }
