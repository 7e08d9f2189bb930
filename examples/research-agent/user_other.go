//go:build !unix

package main

// userTag names the current user in the default data folder, as package store
// does on a platform without numeric user ids.
func userTag() string { return "user" }
