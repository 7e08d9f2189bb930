package store

// CommittedTxID returns the id of b's last committed write transaction:
// bbolt numbers commits, so its growth counts them.
func CommittedTxID(b *Bolt) uint64 { return CommittedTxIDForTest(b) }

// CommittedTxIDForTest is CommittedTxID for the package's own tests.
func CommittedTxIDForTest(b *Bolt) uint64 {
	tx, err := b.db.Begin(false)
	if err != nil {
		panic(err)
	}
	defer func() { _ = tx.Rollback() }()
	return uint64(tx.ID())
}
