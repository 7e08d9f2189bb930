package campaign_test

import (
	"context"
	"encoding/json"
	"fmt"

	supervaizer "github.com/supervaize/supervaizer-go"
	"github.com/supervaize/supervaizer-go/campaign"
)

// An agent opts in with the constraints it enforces and an intervention
// handler; its handlers read the campaign's policy from their context.
func ExampleControl() {
	agent, err := supervaizer.NewAgent(supervaizer.AgentSpec{Name: "Research Agent", Version: "1.0.0",
		Registration: supervaizer.RegistrationSpec{Actions: supervaizer.Actions("job.start")}})
	if err != nil {
		panic(err)
	}
	err = agent.ServeCampaignControl(campaign.Control{
		Enforces: campaign.Policy{RemoteOnly: true, NoPublication: true},
		Intervene: func(ctx context.Context, in campaign.Intervention) (json.RawMessage, error) {
			if in.Policy.NoPublication && string(in.Params) == `{"kind":"publish"}` {
				return nil, campaign.ErrPolicy
			}
			return json.RawMessage(`{"accepted":true}`), nil
		},
	})
	fmt.Println("serves campaign control:", err == nil)
	_, underCampaign := campaign.PolicyFrom(context.Background())
	fmt.Println("a call outside any campaign has a policy:", underCampaign)
	fmt.Println("an agent enforcing nothing is refused:", agent.ServeCampaignControl(campaign.Control{}) != nil)
	// Output:
	// serves campaign control: true
	// a call outside any campaign has a policy: false
	// an agent enforcing nothing is refused: true
}

// Strict is the envelope of a claim that sends no constraints.
func ExampleStrict() {
	b, _ := json.Marshal(campaign.Strict())
	fmt.Println(string(b))
	// Output:
	// {"remote_only":true,"no_publication":true,"no_destructive_git":true,"no_credential_changes":true,"no_force_push":true,"no_merge":true}
}
