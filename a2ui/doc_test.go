package a2ui_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/supervaize/supervaizer-go/a2ui"
)

// TestPackageDocForm runs the package comment's form as written: it is valid.
func TestPackageDocForm(t *testing.T) {
	check := func() error {
		doc := a2ui.Form{
			ID:    "research-agent.job.start",
			Title: "Start research",
			Fields: []a2ui.Field{
				a2ui.StringField("topic_id", "Topic", a2ui.Required()),
				a2ui.SelectField("depth", "Depth", a2ui.Required(),
					a2ui.Choice("quick", "Quick scan"), a2ui.Choice("deep", "Deep dive")),
			},
			Submit:  a2ui.Submit{Action: "job.start", Label: "Start research"},
			Preview: &a2ui.Preview{Action: "job.start.preview"},
		}
		if err := doc.Validate(); err != nil {
			return err // names the first broken rule
		}
		return nil
	}
	require.NoError(t, check())
}
