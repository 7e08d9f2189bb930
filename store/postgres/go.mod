module github.com/supervaize/supervaizer-go/store/postgres

go 1.26.0

require (
	github.com/jackc/pgx/v5 v5.13.0
	github.com/stretchr/testify v1.12.1
	github.com/supervaize/supervaizer-go v0.0.0
)

require (
	github.com/go-chi/chi/v5 v5.5.0 // indirect
	github.com/golang-jwt/jwt/v5 v5.3.1 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/puddle/v2 v2.2.3 // indirect
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3 // indirect
	go.etcd.io/bbolt v1.5.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sync v0.25.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
	golang.org/x/text v0.44.0 // indirect
)

// Development: build against the SDK in this repository. A replace directive
// applies only to the main module: a user's build uses the SDK version
// required above, so a release tags the SDK (vX.Y.Z) first, then requires that
// version here and tags this module (store/postgres/vX.Y.Z).
replace github.com/supervaize/supervaizer-go => ../..
