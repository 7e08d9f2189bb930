package cardcheck

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzCheck checks that Check and DecodeSupervaizerCard never panic, and that
// a card Check accepts is one JSON object with every required member.
func FuzzCheck(f *testing.F) {
	for _, seed := range []string{fullCard, cardV10, `{}`, `[]`, `null`, `{"name":1}`, fullCard + `x`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, card []byte) {
		_, _, _ = DecodeSupervaizerCard(card)
		for _, version := range Versions {
			if Check(version, card) != nil {
				continue
			}
			var doc map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(card, &doc), version)
			for _, m := range agentCard(version) {
				if m.required {
					require.Contains(t, doc, m.name, version)
				}
			}
		}
	})
}
