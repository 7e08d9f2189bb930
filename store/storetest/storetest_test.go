package storetest_test

import (
	"testing"

	"github.com/supervaize/supervaizer-go/store"
	"github.com/supervaize/supervaizer-go/store/storetest"
)

func TestRunMemory(t *testing.T) {
	storetest.Run(t, func(*testing.T) store.Store { return store.NewMemory() })
}
