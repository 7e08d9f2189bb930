//go:build unix

package main

import (
	"os"
	"strconv"
)

// userTag names the current user in the default data folder, as package store
// does: the numeric user id.
func userTag() string { return strconv.Itoa(os.Getuid()) }
