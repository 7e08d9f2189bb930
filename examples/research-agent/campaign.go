package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/supervaize/supervaizer-go/campaign"
)

// The campaign-control extension (docs/supervised.md): a supervisor may take
// the control of a campaign of research jobs through a lease. The agent
// enforces two constraints: it runs remote only (every step runs in this
// controller, nothing on the supervisor's machine) and, under a campaign
// with no_publication, a job never sends its brief (deliver withholds it).
var campaignEnforces = campaign.Policy{RemoteOnly: true, NoPublication: true}

// serveCampaignControl opts the agent in to the extension.
func (a *app) serveCampaignControl() error {
	return a.agent.ServeCampaignControl(campaign.Control{Enforces: campaignEnforces, Intervene: a.intervene})
}

// intervention is what a supervisor may ask of the agent through
// campaign/intervene: "status" reads the campaign's policy back; "publish"
// asks to publish, which a campaign with no_publication refuses.
type intervention struct {
	Kind string `json:"kind"`
}

// intervene serves campaign/intervene once the SDK has checked the lease.
func (a *app) intervene(_ context.Context, in campaign.Intervention) (json.RawMessage, error) {
	var iv intervention
	if err := json.Unmarshal(in.Params, &iv); err != nil {
		return nil, fmt.Errorf("intervention params: %w", err)
	}
	switch iv.Kind {
	case "status":
		return json.Marshal(map[string]any{"accepted": true, "campaign_id": in.CampaignID, "policy": in.Policy})
	case "publish":
		if in.Policy.NoPublication {
			return nil, fmt.Errorf("publish: %w", campaign.ErrPolicy)
		}
		return json.Marshal(map[string]any{"accepted": true})
	}
	return nil, fmt.Errorf("intervention %q: %w", iv.Kind, campaign.ErrPolicy)
}
