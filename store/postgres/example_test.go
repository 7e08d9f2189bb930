package postgres_test

import (
	"context"
	"log"
	"os"

	"github.com/supervaize/supervaizer-go/store"
	"github.com/supervaize/supervaizer-go/store/postgres"
)

// Open the database once per process and share its store; every instance of
// the controller opens the same database.
func ExampleOpen() {
	ctx := context.Background()
	db, err := postgres.Open(ctx, os.Getenv("SUPERVAIZER_DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	s := db.Store()
	key := store.Key("counter", "visits")
	if _, _, err := s.PutIfAbsent(ctx, key, []byte("0")); err != nil {
		log.Fatal(err)
	}
}
