//go:build !unix

package store

// userTag names the current user in the default directory.
func userTag() string { return "user" }

// checkSharedTempDir has no ownership to check on this platform.
func checkSharedTempDir(string) error { return nil }
